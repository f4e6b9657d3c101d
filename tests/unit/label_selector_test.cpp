#include "composer/model/label_selector.h"

#include <gtest/gtest.h>

namespace switchyard {
namespace {

const std::map<std::string, std::string> kVision{{"team", "vision"}, {"env", "prod"}};
const std::map<std::string, std::string> kNlp{{"team", "nlp"}};

bool selects(std::string_view text, const std::map<std::string, std::string>& labels) {
  auto s = LabelSelector::parse(text);
  EXPECT_TRUE(s) << text << ": " << s.error().message;
  return s && s->matches(labels);
}

TEST(LabelSelector, EqualityInequalityExistenceAndAbsenceAllMustHold) {
  EXPECT_TRUE(selects("", kVision));
  EXPECT_TRUE(selects("team=vision", kVision));
  EXPECT_TRUE(selects("team==vision", kVision));
  EXPECT_FALSE(selects("team=vision", kNlp));
  EXPECT_TRUE(selects("team!=vision", kNlp));
  EXPECT_TRUE(selects("env!=prod", kNlp)) << "an absent label differs from any value";
  EXPECT_TRUE(selects("env", kVision));
  EXPECT_FALSE(selects("env", kNlp));
  EXPECT_TRUE(selects("!env", kNlp));
  EXPECT_TRUE(selects("team=vision, env=prod", kVision));
  EXPECT_FALSE(selects("team=vision,env=dev", kVision));
  EXPECT_TRUE(selects("team=", std::map<std::string, std::string>{{"team", ""}})) << "an empty value is a value";
}

// Issue 63: set-based requirements, as Kubernetes writes them; the commas inside a set do not split requirements.
TEST(LabelSelector, SetBasedRequirementsInAndNotIn) {
  EXPECT_TRUE(selects("env in (dev,prod)", kVision));
  EXPECT_TRUE(selects("env in (prod)", kVision));
  EXPECT_FALSE(selects("env in (dev,test)", kVision));
  EXPECT_FALSE(selects("env in (dev,prod)", kNlp)) << "in needs the label";
  EXPECT_TRUE(selects("env notin (dev,prod)", kNlp)) << "notin holds for an absent label";
  EXPECT_FALSE(selects("env notin (dev, prod)", kVision));
  EXPECT_TRUE(selects("team in (vision, nlp),env notin (dev),!spot", kVision));
  EXPECT_FALSE(selects("team in (vision,nlp), env in (dev)", kVision));
  EXPECT_TRUE(selects("team in (nlp),team!=vision", kNlp));
}

TEST(LabelSelector, MalformedSelectorsAreRefusedNamingThePart) {
  for (const char* bad : {",", "team=vision,", "=vision", "!", "!=x", "a=b=c", "a b=c", "team!=a!=b", "env in (dev", "env in dev)", "env in ()",
                          "env in (dev,)", "env (dev)", "env is (dev)", "in (dev)", "env in (dev) x", "env in ((dev))", "env dev"}) {
    auto s = LabelSelector::parse(bad);
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().code, Code::kInvalidArgument);
    EXPECT_NE(s.error().message.find("label selector"), std::string::npos) << s.error().message;
  }
}

}  // namespace
}  // namespace switchyard

// Usage added up by what a bill groups by (composer/engine/usage_groups.h), labels included: gRPC's GetUsage and
// the console's /api/v1/usage both add up this way.
#include <gtest/gtest.h>

#include "composer/engine/usage_groups.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

UsageRow row(std::string tenant, SystemId system, std::string model, double gpuHours, std::map<std::string, std::string> labels = {}) {
  UsageRow r;
  r.tenant = std::move(tenant);
  r.systemId = std::move(system);
  r.systemName = "name-of-" + r.systemId;
  r.model = std::move(model);
  r.gpuSeconds = gpuHours * 3600;
  r.labels = std::move(labels);
  return r;
}

TEST(UsageGrouping, ReadsEachDimensionAndRefusesWhatItCannotGroupBy) {
  const auto finest = UsageGrouping::parse("");
  ASSERT_TRUE(finest);
  EXPECT_TRUE(finest->tenant && finest->system && finest->model);
  const auto several = UsageGrouping::parse("tenant, label:team,label:cost-centre/eu");
  ASSERT_TRUE(several) << several.error().message;
  EXPECT_TRUE(several->tenant);
  EXPECT_FALSE(several->system || several->model);
  EXPECT_EQ(several->labelKeys, (std::vector<std::string>{"team", "cost-centre/eu"}));
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"team", "no dimension 'team'"},
           {"label:", "'' is not a label key"},
           {"label:-x", "'-x' is not a label key"},
           {"tenant,,model", "an empty dimension"},
           {"tenant,tenant", "tenant is named twice"},
           {"model,", "an empty dimension"}}) {
    const auto refused = UsageGrouping::parse(text);
    ASSERT_FALSE(refused) << text;
    EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
    EXPECT_NE(refused.error().message.find(says), std::string::npos) << text << ": " << refused.error().message;
  }
}

TEST(UsageGrouping, ALabelGroupsSystemsByItsValueAndThoseWithoutItApart) {
  const std::vector<UsageRow> rows{row("a", "sys-1", "H100", 2, {{"team", "vision"}}), row("a", "sys-1", "A100", 1, {{"team", "vision"}}),
                                   row("a", "sys-2", "H100", 4, {{"team", "speech"}, {"env", "dev"}}), row("b", "sys-3", "H100", 8),
                                   row("b", "sys-4", "H100", 16, {{"team", "vision"}})};
  const auto byTeam = groupUsage(rows, *UsageGrouping::parse("label:team"));
  ASSERT_EQ(byTeam.size(), 3u);
  EXPECT_TRUE(byTeam[0].labels.empty()) << "no team label: a group of its own, first";
  EXPECT_DOUBLE_EQ(byTeam[0].gpuSeconds, 8 * 3600);
  EXPECT_EQ(byTeam[1].labels, (std::map<std::string, std::string>{{"team", "speech"}})) << "only the grouped key is reported";
  EXPECT_EQ(byTeam[2].labels.at("team"), "vision");
  EXPECT_DOUBLE_EQ(byTeam[2].gpuSeconds, 19 * 3600);
  EXPECT_EQ(byTeam[2].systems.size(), 2u);
  EXPECT_TRUE(byTeam[2].tenant.empty() && byTeam[2].systemId.empty() && byTeam[2].model.empty()) << "not grouped by them";

  const auto byTenantAndTeam = groupUsage(rows, *UsageGrouping::parse("tenant,label:team"));
  ASSERT_EQ(byTenantAndTeam.size(), 4u);
  EXPECT_EQ(byTenantAndTeam[0].tenant, "a");
  EXPECT_EQ(byTenantAndTeam[0].labels.at("team"), "speech");
  EXPECT_EQ(byTenantAndTeam[3].tenant, "b");
  EXPECT_DOUBLE_EQ(byTenantAndTeam[3].gpuSeconds, 16 * 3600);

  const auto bySystem = groupUsage(rows, *UsageGrouping::parse("system"));
  ASSERT_EQ(bySystem.size(), 4u);
  EXPECT_EQ(bySystem[0].tenant, "a") << "a system is one tenant's";
  EXPECT_EQ(bySystem[0].systemName, "name-of-sys-1");
  EXPECT_DOUBLE_EQ(bySystem[0].gpuSeconds, 3 * 3600);
  EXPECT_EQ(groupUsage(rows, *UsageGrouping::parse("")).size(), rows.size()) << "the finest grouping is one row per tenant, system and model";
  EXPECT_DOUBLE_EQ(totalUsage(rows).gpuSeconds, 31 * 3600);
}

// The engine gives each row its system's labels, a decomposed system's from the store's history.
class EngineUsageLabelsTest : public EngineTest {};

TEST_F(EngineUsageLabelsTest, RowsCarryTheLabelsOfLiveAndDecomposedSystems) {
  start();
  auto compose = [&](const std::string& name, std::map<std::string, std::string> labels) {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuCount = 2;
    r.labels = std::move(labels);
    run(engine_->blocking().compose(Caller::local(), r));
  };
  const Timestamp begin = clock_.now() - 1;
  compose("gone", {{"team", "vision"}});
  compose("live", {{"team", "speech"}});
  compose("plain", {});
  clock_.advance(std::chrono::hours(1));
  run(engine_->blocking().decompose(Caller::local(), "gone"));
  start();  // after a restart too: the ended system's labels come from the store
  auto report = engine_->history().usage(Caller::local(), begin, 0);
  ASSERT_TRUE(report) << report.error().message;
  std::map<std::string, double> hoursByTeam;
  for (const auto& g : groupUsage(report->rows, *UsageGrouping::parse("label:team")))
    hoursByTeam[g.labels.contains("team") ? g.labels.at("team") : "(none)"] += g.gpuSeconds / 3600;
  EXPECT_EQ(hoursByTeam.size(), 3u);
  EXPECT_NEAR(hoursByTeam["vision"], 2.0, 0.01);
  EXPECT_NEAR(hoursByTeam["speech"], 2.0, 0.01);
  EXPECT_NEAR(hoursByTeam["(none)"], 2.0, 0.01);
}

}  // namespace
}  // namespace switchyard

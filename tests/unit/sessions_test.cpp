#include "composer/auth/sessions.h"

#include <gtest/gtest.h>

namespace switchyard::auth {
namespace {

TEST(Sessions, ATokenOpensItsSessionUntilItExpires) {
  ManualClock clock;
  Sessions sessions(clock);
  auto [token, session] = sessions.issue(Caller{"carol", Role::kTenant, "team-a"}, std::chrono::hours(1));
  EXPECT_GE(token.size(), 64u) << "at least 32 random bytes, hex";
  auto found = sessions.find(token);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->caller.identity, "carol");
  EXPECT_EQ(found->caller.tenant, "team-a");
  EXPECT_EQ(found->expiresAt, session.expiresAt);
  EXPECT_FALSE(sessions.find(token + "0"));
  EXPECT_FALSE(sessions.find(""));
  clock.advance(std::chrono::minutes(59));
  EXPECT_TRUE(sessions.find(token));
  clock.advance(std::chrono::minutes(1));
  EXPECT_FALSE(sessions.find(token)) << "expired at exactly its ttl";
  EXPECT_EQ(sessions.size(), 0u) << "an expired session is forgotten";
}

TEST(Sessions, EachLoginGetsItsOwnToken) {
  ManualClock clock;
  Sessions sessions(clock);
  auto a = sessions.issue(Caller{"carol", Role::kViewer, ""}, std::chrono::hours(1)).first;
  auto b = sessions.issue(Caller{"carol", Role::kViewer, ""}, std::chrono::hours(2)).first;
  EXPECT_NE(a, b);
  clock.advance(std::chrono::minutes(90));
  EXPECT_FALSE(sessions.find(a));
  EXPECT_TRUE(sessions.find(b));
}

}  // namespace
}  // namespace switchyard::auth

// The identities file: what it accepts, what it refuses (naming the entry), and the credentials it checks.
#include "composer/auth/identities.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/identities.h"

namespace switchyard::auth {
namespace {

std::string refusal(const std::string& json) {
  auto parsed = Identities::parse(json, "ids.json");
  return parsed ? std::string("accepted") : parsed.error().message;
}

TEST(Identities, ChecksPasswordsTokensAndCertificateNames) {
  auto ids = testing::makeIdentities({{"alice", "admin", "", "s3cret"},
                                      {"slurm", "operator", "", "", "tok-slurm"},
                                      {"ci-a", "tenant", "team-a", "", "", "ci-a.example"}},
                                     {{"team-a", {{"max_gpus", 8}, {"max_systems", 2}, {"max_nvme", 4}, {"max_nics", 3}, {"max_endpoints", {{"fpga", 2}, {"dpu", 0}}}}}});
  auto alice = ids->byPassword("alice", "s3cret");
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->role, Role::kAdmin);
  EXPECT_TRUE(ids->byPassword("alice", "s3cret")) << "a remembered password still matches";
  EXPECT_FALSE(ids->byPassword("alice", "s3cret "));
  EXPECT_FALSE(ids->byPassword("slurm", "")) << "an identity without a password cannot log in with one";
  EXPECT_EQ(ids->byToken("tok-slurm")->identity, "slurm");
  EXPECT_FALSE(ids->byToken("tok-slurm2"));
  EXPECT_FALSE(ids->byToken(""));
  auto ci = ids->byCertificate("ci-a.example");
  ASSERT_TRUE(ci);
  EXPECT_EQ(ci->role, Role::kTenant);
  EXPECT_EQ(ci->tenant, "team-a");
  EXPECT_FALSE(ids->byCertificate("ci-b.example"));
  ASSERT_TRUE(ids->quotas().contains("team-a"));
  EXPECT_EQ(ids->quotas().at("team-a").maxGpus, 8);
  EXPECT_EQ(ids->quotas().at("team-a").maxSystems, 2);
  EXPECT_EQ(ids->quotas().at("team-a").maxDrives, 4);
  EXPECT_EQ(ids->quotas().at("team-a").maxNics, 3);
  EXPECT_EQ(ids->quotas().at("team-a").maxEndpoints, (std::map<std::string, int, std::less<>>{{"dpu", 0}, {"fpga", 2}}));
}

TEST(Identities, HashesAreSaltedAndNeverTheSecret) {
  const std::string a = Identities::hashPassword("pw", 1000), b = Identities::hashPassword("pw", 1000);
  EXPECT_NE(a, b) << "each hash has its own salt";
  EXPECT_EQ(a.find("pw$"), std::string::npos);
  EXPECT_EQ(a.rfind("pbkdf2-sha256$1000$", 0), 0u);
  EXPECT_EQ(Identities::hashToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") << "SHA-256 of 'abc'";
  const std::string token = Identities::newToken();
  EXPECT_EQ(token.rfind("syt_", 0), 0u);
  EXPECT_EQ(token.size(), 4u + 64u);
  EXPECT_NE(token, Identities::newToken());
}

TEST(Identities, RefusesMistakesNamingTheEntry) {
  const std::string hash = Identities::hashToken("t");
  EXPECT_NE(refusal("[]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(refusal(R"({"identities": []})").find("non-empty"), std::string::npos);
  EXPECT_NE(refusal(R"({"identity": []})").find("unknown key 'identity'"), std::string::npos);
  EXPECT_NE(refusal(R"({"identities": [{"name": "a", "role": "root", "token_sha256": ")" + hash + R"("}]})").find("role 'root'"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"identities": [{"name": "a", "role": "tenant", "token_sha256": ")" + hash + R"("}]})").find("needs a tenant"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"identities": [{"name": "a", "role": "admin", "tenant": "x", "token_sha256": ")" + hash + R"("}]})")
                .find("only the tenant role"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"identities": [{"name": "a", "role": "admin"}]})").find("no credential"), std::string::npos);
  EXPECT_NE(refusal(R"({"identities": [{"name": "a", "role": "admin", "password": "plain-text"}]})").find("--hash-password"),
            std::string::npos)
      << "a plain-text password is refused, not silently accepted";
  EXPECT_NE(refusal(R"({"identities": [{"name": "a", "role": "admin", "token_sha256": "abc"}]})").find("64 lower-case hex"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"identities": [{"name": "a", "role": "admin", "token_sha256": ")" + hash + R"("}, {"name": "b", "role": "viewer", "token_sha256": ")" +
                    hash + R"("}]})")
                .find("identities[1] (b): the same token"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}, {"name": "a", "role": "viewer", "certificate_cn": "y"}]})")
                .find("name 'a' appears twice"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"tenants": {"t": {"max_gpu": 1}}, "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})")
                .find("unknown limit 'max_gpu'"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"tenants": {"t": {"max_gpus": -1}}, "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})")
                .find("max_gpus must be a whole number"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"identities": [{"name": "a", "role": "admin", "certificate_cn": 5}]})").find("must be a string"), std::string::npos);
  EXPECT_NE(refusal(R"({"tenants": {"t": {"max_endpoints": 2}}, "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})")
                .find("max_endpoints must be an object of counts by device class"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"tenants": {"t": {"max_endpoints": {"nic": 2}}}, "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})")
                .find("'nic' is not another device class"),
            std::string::npos)
      << "the four kinds have their own limits";
  EXPECT_NE(refusal(R"({"tenants": {"t": {"max_endpoints": {"fpga": 1.5}}}, "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})")
                .find("max_endpoints: fpga must be a whole number"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"tenants": {"t": {"share": 0}}, "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})")
                .find("share must be a positive number"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"tenants": {"t": {"max_lease": "forever"}}, "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})")
                .find("max_lease must be a duration"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"tenants": {"t": {"default_lease": "8h", "max_lease": "1h"}}, "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})")
                .find("default_lease is longer than max_lease"),
            std::string::npos);
}

TEST(Identities, TenantsCarryTheirQueueAndLeasePolicy) {
  auto parsed = Identities::parse(
      R"({"tenants": {"team-a": {"share": 2.5, "max_queued": 10, "default_lease": "8h", "max_lease": "2d"}},
          "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})",
      "ids.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const TenantQuota q = (*parsed)->quotas().at("team-a");
  EXPECT_EQ(q.share, 2.5);
  EXPECT_EQ(q.maxQueued, 10);
  EXPECT_EQ(q.defaultLease, std::chrono::milliseconds(8 * 3600 * 1000));
  EXPECT_EQ(q.maxLease, std::chrono::milliseconds(48 * 3600 * 1000));
}

// Issue "No request can stop yardd", N11: an operator can limit a tenant to some priority classes.
TEST(Identities, TenantsCarryTheirAllowedPriorityClasses) {
  auto parsed = Identities::parse(R"({"tenants": {"team-a": {"priority_classes": ["batch", "spot"]}},
                                      "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})",
                                  "ids.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ((*parsed)->quotas().at("team-a").priorityClasses, (std::vector<std::string>{"batch", "spot"}));
  for (const std::string bad : {R"([])", R"("batch")", R"([""])", R"([1])"}) {
    auto refused = Identities::parse(R"({"tenants": {"t": {"priority_classes": )" + bad +
                                         R"(}}, "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})",
                                     "ids.json");
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message.find("priority_classes must be a non-empty list of class names"), std::string::npos)
        << refused.error().message;
  }
}

TEST(Identities, TenantsCarryTheirReclaimPolicyAndDisruptionBudget) {
  auto parsed = Identities::parse(
      R"({"tenants": {"team-a": {"reclaim_idle_after": "30m", "reclaim_mode": "detach", "max_preempted_gpus_per_day": 16},
                      "team-b": {"reclaim_idle_after": "never"}},
          "identities": [{"name": "a", "role": "admin", "certificate_cn": "x"}]})",
      "ids.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const TenantQuota a = (*parsed)->quotas().at("team-a");
  EXPECT_EQ(a.reclaimIdleAfter, std::chrono::milliseconds(30 * 60 * 1000));
  EXPECT_EQ(a.reclaimDryRun, false);
  EXPECT_EQ(a.maxPreemptedGpusPerDay, 16);
  EXPECT_EQ((*parsed)->quotas().at("team-b").reclaimIdleAfter, std::chrono::milliseconds(0));
  for (const char* bad : {R"("reclaim_idle_after": "10s")", R"("reclaim_idle_after": 30)", R"("reclaim_mode": "now")"}) {
    auto refused = Identities::parse(fmt::format(R"({{"tenants": {{"t": {{{}}}}}, "identities": [{{"name": "a", "role": "admin", "certificate_cn": "x"}}]}})", bad),
                                     "ids.json");
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message.find("reclaim_"), std::string::npos) << refused.error().message;
  }
}

// One identity, carol, whose password is "right"; lockouts timed by `clock`.
Result<std::unique_ptr<Identities>> carolOn(const ManualClock& clock) {
  auto ids = Identities::parse(fmt::format(R"({{"identities": [{{"name": "carol", "role": "viewer", "password": "{}"}}]}})",
                                           Identities::hashPassword("right", 1000)),
                               "ids.json");
  if (ids) (*ids)->useClock(clock);
  return ids;
}

TEST(Identities, RepeatedWrongPasswordsLockTheNameWithABackoffKnownOrNot) {
  ManualClock clock;
  auto ids = carolOn(clock);
  ASSERT_TRUE(ids) << ids.error().message;
  std::vector<std::string> locks;  // what yardd logs
  (*ids)->onLockout([&](const Identities::Lockout& l) {
    locks.push_back(fmt::format("{}{} {}s after {}", l.of == Identities::Lockout::Of::kSource ? "source " : "", l.who, l.lockedFor.count(),
                                l.failures));
  });
  for (int i = 0; i < Identities::kFreePasswordAttempts; ++i) EXPECT_FALSE((*ids)->byPassword("carol", "wrong"));
  ASSERT_TRUE((*ids)->lockedFor("carol"));
  EXPECT_EQ((*ids)->lockedFor("carol")->count(), 1);
  EXPECT_FALSE((*ids)->byPassword("carol", "right")) << "while locked, even the right password is refused";
  EXPECT_EQ(locks, std::vector<std::string>{"carol 1s after 5"}) << "told once per lock, not per refused attempt";
  clock.advance(std::chrono::seconds(1));
  EXPECT_FALSE((*ids)->lockedFor("carol"));
  EXPECT_FALSE((*ids)->byPassword("carol", "wrong"));
  EXPECT_EQ((*ids)->lockedFor("carol")->count(), 2) << "each further failure doubles the wait";
  EXPECT_EQ(locks.back(), "carol 2s after 6");
  clock.advance(std::chrono::seconds(2));
  EXPECT_TRUE((*ids)->byPassword("carol", "right"));
  EXPECT_FALSE((*ids)->lockedFor("carol"));
  EXPECT_FALSE((*ids)->byPassword("carol", "wrong")) << "a success starts the count again";
  EXPECT_FALSE((*ids)->lockedFor("carol"));

  for (int i = 0; i < Identities::kFreePasswordAttempts; ++i) EXPECT_FALSE((*ids)->byPassword("nobody", "x"));
  EXPECT_TRUE((*ids)->lockedFor("nobody")) << "an unknown name is locked like a known one: no difference to observe";
  EXPECT_EQ(locks.back(), "nobody 1s after 5");
  for (int i = 0; i < 40; ++i) (void)(*ids)->byPassword("carol", "wrong"), clock.advance(std::chrono::minutes(10));
  (void)(*ids)->byPassword("carol", "wrong");
  ASSERT_TRUE((*ids)->lockedFor("carol")) << "a guesser who comes back every 10 minutes keeps its count";
  EXPECT_LE((*ids)->lockedFor("carol")->count(), 15 * 60) << "the wait is capped";
  // Quiet for 15 minutes after the last lock ended: the count starts again.
  clock.advance(Identities::kMaxLockout * 2 + std::chrono::seconds(1));
  EXPECT_FALSE((*ids)->byPassword("carol", "wrong"));
  EXPECT_FALSE((*ids)->lockedFor("carol"));
}

TEST(Identities, OneSourceGuessingManyNamesIsLockedAsASource) {
  ManualClock clock;
  auto ids = carolOn(clock);
  ASSERT_TRUE(ids) << ids.error().message;
  std::vector<std::string> locks;
  (*ids)->onLockout([&](const Identities::Lockout& l) {
    locks.push_back(fmt::format("{} {} {}s after {}", l.of == Identities::Lockout::Of::kSource ? "source" : "name", l.who,
                                l.lockedFor.count(), l.failures));
  });
  // Four tries at each of five names: no name is locked, the source is, at its 20th failure in a row.
  for (int i = 0; i < Identities::kFreeSourceAttempts; ++i) {
    EXPECT_FALSE((*ids)->sourceLockedFor("10.0.0.7")) << "not before the 20th, try " << i;
    EXPECT_FALSE((*ids)->byPassword(fmt::format("name-{}", i % 5), "guess", "10.0.0.7"));
  }
  for (int n = 0; n < 5; ++n) EXPECT_FALSE((*ids)->lockedFor(fmt::format("name-{}", n)));
  ASSERT_TRUE((*ids)->sourceLockedFor("10.0.0.7"));
  EXPECT_EQ((*ids)->sourceLockedFor("10.0.0.7")->count(), 1);
  EXPECT_EQ(locks, std::vector<std::string>{"source 10.0.0.7 1s after 20"});
  EXPECT_FALSE((*ids)->byPassword("carol", "right", "10.0.0.7")) << "every password from a locked source is refused";
  EXPECT_TRUE((*ids)->byPassword("carol", "right", "10.0.0.8")) << "another source is not";
  EXPECT_TRUE((*ids)->byPassword("carol", "right")) << "nor a check that knows no source";
  EXPECT_EQ(locks.size(), 1U) << "refusals during a lock are not failures";

  clock.advance(std::chrono::seconds(1));
  EXPECT_FALSE((*ids)->byPassword("name-0", "guess", "10.0.0.7"));
  EXPECT_EQ((*ids)->sourceLockedFor("10.0.0.7")->count(), 2) << "each further failure doubles the wait";
  clock.advance(std::chrono::seconds(2));
  EXPECT_TRUE((*ids)->byPassword("carol", "right", "10.0.0.7"));
  EXPECT_FALSE((*ids)->byPassword("name-0", "guess", "10.0.0.7"));
  ASSERT_TRUE((*ids)->sourceLockedFor("10.0.0.7")) << "a match from the source does not start its count again (N7)";
  EXPECT_EQ((*ids)->sourceLockedFor("10.0.0.7")->count(), 4);
  // Quiet for the longest lockout (15 minutes) after the lock ended: the count starts again.
  clock.advance(Identities::kMaxLockout + std::chrono::seconds(10));
  EXPECT_FALSE((*ids)->byPassword("name-0", "guess", "10.0.0.7"));
  EXPECT_FALSE((*ids)->sourceLockedFor("10.0.0.7"));
}

// Issue "No request can stop yardd", N7: a guesser who knows one password could spray 76 guesses from one
// address and never be locked, by logging in correctly between them. The source is locked all the same.
TEST(Identities, ACorrectPasswordBetweenGuessesDoesNotResetTheSourcesCount) {
  ManualClock clock;
  auto ids = carolOn(clock);
  ASSERT_TRUE(ids) << ids.error().message;
  int refusedWhileLocked = 0;
  for (int i = 0; i < 76; ++i) {
    if (i % 4 == 3) {
      if (!(*ids)->byPassword("carol", "right", "10.0.0.9")) ++refusedWhileLocked;
    } else {
      (void)(*ids)->byPassword(fmt::format("name-{}", i % 7), "guess", "10.0.0.9");
    }
    clock.advance(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE((*ids)->sourceLockedFor("10.0.0.9")) << "57 failures from one address, a match every fourth try: locked";
  EXPECT_GT(refusedWhileLocked, 0) << "once locked, even the right password from there is refused";
}

// N6: a login made before a password change, or before the identity was removed (and added again), ends
// with that identity; an unchanged identity's logins survive a reload.
TEST(Identities, ALoginsGenerationEndsWithAChangedOrRemovedIdentity) {
  auto file = [](const std::string& password, bool withCarol = true, const std::string& role = "viewer") {
    std::string ids = R"([{"name": "dave", "role": "viewer", "certificate_cn": "dave-cn"})";
    if (withCarol) ids += fmt::format(R"(, {{"name": "carol", "role": "{}", "password": "{}"}})", role, password);
    return fmt::format(R"({{"identities": {}]}})", ids);
  };
  const std::string hash = Identities::hashPassword("right", 1000);
  auto live = Identities::parse(file(hash), "ids.json");
  ASSERT_TRUE(live) << live.error().message;
  std::uint64_t generation = 0;
  ASSERT_TRUE((*live)->byPassword("carol", "right", {}, &generation));
  EXPECT_NE(generation, 0u);
  EXPECT_TRUE((*live)->current("carol", generation));

  (*live)->replaceWith(**Identities::parse(file(hash), "ids.json"));
  EXPECT_TRUE((*live)->current("carol", generation)) << "the same identity reloaded: the login goes on";
  (*live)->replaceWith(**Identities::parse(file(hash, true, "operator"), "ids.json"));
  EXPECT_FALSE((*live)->current("carol", generation)) << "a new role is a new identity";

  ASSERT_TRUE((*live)->byPassword("carol", "right", {}, &generation));
  (*live)->replaceWith(**Identities::parse(file(Identities::hashPassword("new", 1000), true, "operator"), "ids.json"));
  EXPECT_FALSE((*live)->current("carol", generation)) << "a new password ends the logins made with the old";

  auto back = Identities::parse(file(hash, true, "operator"), "ids.json");
  ASSERT_TRUE((*live)->byPassword("carol", "new", {}, &generation) || true);
  (*live)->replaceWith(**back);
  ASSERT_TRUE((*live)->byPassword("carol", "right", {}, &generation));
  (*live)->replaceWith(**Identities::parse(file(hash, false), "ids.json"));
  EXPECT_FALSE((*live)->current("carol", generation)) << "removed";
  (*live)->replaceWith(**Identities::parse(file(hash, true, "operator"), "ids.json"));
  EXPECT_TRUE((*live)->byName("carol"));
  EXPECT_FALSE((*live)->current("carol", generation)) << "added again, with the same password: a new identity, the old login stays ended";
}

TEST(Identities, AReloadReplacesIdentitiesAndQuotasInPlace) {
  auto live = Identities::parse(R"({"tenants": {"t": {"max_gpus": 2}}, "identities": [{"name": "a", "role": "tenant", "tenant": "t", "certificate_cn": "a-cn"}]})",
                                "ids.json");
  auto fresh = Identities::parse(R"({"tenants": {"t": {"max_gpus": 8}}, "identities": [{"name": "b", "role": "viewer", "certificate_cn": "b-cn"}]})",
                                 "ids.json");
  ASSERT_TRUE(live && fresh);
  ASSERT_TRUE((*live)->byName("a"));
  (*live)->replaceWith(**fresh);
  EXPECT_FALSE((*live)->byCertificate("a-cn")) << "removed";
  EXPECT_FALSE((*live)->byName("a"));
  ASSERT_TRUE((*live)->byCertificate("b-cn"));
  EXPECT_EQ((*live)->byName("b")->role, Role::kViewer);
  EXPECT_EQ((*live)->quotas().at("t").maxGpus, 8);
  EXPECT_EQ((*live)->identities().size(), 1u);
}

}  // namespace
}  // namespace switchyard::auth

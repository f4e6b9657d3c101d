// Admission as a framework (issue 59, ADR 0032): the queue-sort plugins, the tenants' shares they read and the
// profiles' table. The pass itself, with each profile, is engine_queue_test.cpp's and engine_queue_tenants_test.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "composer/engine/admission/admission_profile.h"
#include "composer/engine/admission/queue_sort.h"
#include "composer/engine/admission/tenant_shares.h"

namespace switchyard::admission {
namespace {

TenantShares sharesOf(const TenantShares::Use& use, const std::map<std::string, double>& weights) {
  std::vector<std::string> tenants;
  for (const auto& [t, w] : weights) tenants.push_back(t);
  return TenantShares(tenants, use, [&](std::string_view t) { return weights.at(std::string(t)); });
}

QueueSort sortOf(std::vector<std::string> names) {
  auto sort = QueueSort::of(names);
  EXPECT_TRUE(sort) << sort.error().message;
  return *sort;
}

TEST(TenantShares, ChargesUseOverWeightAndTheFairLineIsEveryonesUseOverEveryonesWeight) {
  // a: 6 GPUs at weight 1; b: 4 at weight 2; c: nothing at weight 1. The line: 10 / 4 = 2.5 a unit of weight.
  const auto shares = sharesOf({{"a", 6}, {"b", 4}}, {{"a", 1}, {"b", 2}, {"c", 1}});
  ASSERT_EQ(shares.size(), 3u);
  const TenantIndex a = shares.index("a"), b = shares.index("b"), c = shares.index("c");
  EXPECT_DOUBLE_EQ(shares.charge(a), 6);
  EXPECT_DOUBLE_EQ(shares.charge(b), 2);
  EXPECT_DOUBLE_EQ(shares.charge(c), 0);
  EXPECT_DOUBLE_EQ(shares.chargeWith(b, 2), 3);
  EXPECT_FALSE(shares.belowFairLine(a));
  EXPECT_TRUE(shares.belowFairLine(b));
  EXPECT_TRUE(shares.belowFairLine(c));
}

TEST(TenantShares, ATenantNamedTwiceIsOneAndNobodyIsBelowAnEmptyPoolsLine) {
  const TenantShares shares({"x", "y", "x"}, {}, [](std::string_view) { return 1.0; });
  EXPECT_EQ(shares.size(), 2u);
  EXPECT_FALSE(shares.belowFairLine(shares.index("x"))) << "nobody uses anything: nobody is under the line";
}

TEST(QueueSort, TheDefaultOrdersByClassThenTheTenantsChargeThenAge) {
  const auto shares = sharesOf({{"heavy", 8}}, {{"heavy", 1}, {"light", 1}});
  const TenantIndex heavy = shares.index("heavy"), light = shares.index("light");
  const QueueSort sort = sortOf({"priority-class", "fair-share", "age"});
  const Waiting oldBatchHeavy{heavy, 100, 1, 8}, newBatchLight{light, 100, 5, 8}, newProductionHeavy{heavy, 1000, 9, 8},
      newerBatchHeavy{heavy, 100, 7, 1};
  EXPECT_TRUE(sort.before(newProductionHeavy, newBatchLight, shares)) << "class first, whatever the charge";
  EXPECT_TRUE(sort.before(newBatchLight, oldBatchHeavy, shares)) << "then the lower charge, whatever the age";
  EXPECT_TRUE(sort.before(oldBatchHeavy, newerBatchHeavy, shares)) << "one tenant, one class: the older";
  EXPECT_EQ(sort.compare(oldBatchHeavy, oldBatchHeavy, shares), 0);
  EXPECT_FALSE(sort.readsSize());
}

TEST(QueueSort, ShareFirstPutsATenantUnderTheFairLineBeforeAHigherClassOfOneAbove) {
  // heavy holds 8 of 10 at weight 1; light 2 at weight 3: the line is 10 / 4 = 2.5, light's charge 0.67.
  const auto shares = sharesOf({{"heavy", 8}, {"light", 2}}, {{"heavy", 1}, {"light", 3}});
  const TenantIndex heavy = shares.index("heavy"), light = shares.index("light");
  const QueueSort sort = sortOf({"share-first", "priority-class", "age"});
  EXPECT_TRUE(sort.readsSize());
  const Waiting productionHeavy{heavy, 1000, 1, 1}, spotLight{light, 50, 9, 16};
  EXPECT_TRUE(sort.before(spotLight, productionHeavy, shares)) << "under the line goes first, whatever its class";
  // Inside a tenant, class then age.
  const Waiting spotLightOlder{light, 50, 2, 1}, batchLight{light, 100, 5, 1};
  EXPECT_TRUE(sort.before(batchLight, spotLightOlder, shares));
  EXPECT_TRUE(sort.before(spotLightOlder, spotLight, shares));
}

TEST(QueueSort, ShareFirstWeighsTheChargeWithTheRequestAdmitted) {
  // a and b each hold 2 at weight 1: the line is 2 and neither is under it, so the charge with the request decides,
  // whatever the age: a's 1 GPU (3) before b's 4 (6), b's 4 before a's 8 (10).
  const auto shares = sharesOf({{"a", 2}, {"b", 2}}, {{"a", 1}, {"b", 1}});
  const TenantIndex a = shares.index("a"), b = shares.index("b");
  const QueueSort sort = sortOf({"share-first", "priority-class", "age"});
  EXPECT_TRUE(sort.before({a, 100, 9, 1}, {b, 100, 1, 4}, shares));
  EXPECT_TRUE(sort.before({b, 100, 9, 4}, {a, 100, 1, 8}, shares));
}

TEST(QueueSort, AnUnknownOrRepeatedPluginIsRefusedNamingTheKnownOnes) {
  const std::vector<std::string> unknown{"priority-class", "lottery"};
  auto r = QueueSort::of(unknown);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message, "no queue-sort plugin 'lottery' (known: priority-class, fair-share, share-first, age)");
  const std::vector<std::string> twice{"age", "age"};
  auto repeated = QueueSort::of(twice);
  ASSERT_FALSE(repeated);
  EXPECT_EQ(repeated.error().message, "queue-sort plugin 'age' named twice");
}

TEST(AdmissionProfile, TheDefaultProfileIsTodaysRulesAndEveryRowBuilds) {
  auto profile = buildProfile(kDefaultAdmissionProfile);
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ((*profile)->describe(),
            "switchyard-v1: queue sort priority-class, fair-share, age; pre-filter none; permit quota, host-policy, head-shadow; "
            "post-filter defragmentation, preemption, lease-shadow");
  EXPECT_TRUE((*profile)->moves()) << "defragmentation is a post-filter of the default";
  auto shareFirst = buildProfile("share-first");
  ASSERT_TRUE(shareFirst) << shareFirst.error().message;
  EXPECT_EQ((*shareFirst)->describe(),
            "share-first: queue sort share-first, priority-class, age; pre-filter backfill-per-tenant; permit quota, host-policy, "
            "head-shadow; post-filter defragmentation, share-preemption, lease-shadow");
  for (const auto& row : admissionProfiles()) {
    auto built = buildProfile(row.name);
    ASSERT_TRUE(built) << row.name << ": " << built.error().message;
    EXPECT_EQ((*built)->name, row.name);
    EXPECT_EQ((*built)->queueSort.names(), row.queueSort);
  }
  EXPECT_EQ(admissionProfileNames(), (std::vector<std::string>{"switchyard-v1", "share-first"}));
}

TEST(AdmissionProfile, BackfillPerTenantLetsEachTenantTrySixteenRequestsBesideAWaitingHead) {
  auto profile = buildProfile("share-first");
  ASSERT_TRUE(profile) << profile.error().message;
  ASSERT_EQ((*profile)->preFilters.size(), 1u);
  const PreFilterPlugin& cap = *(*profile)->preFilters.front();
  const auto shares = sharesOf({}, {{"a", 1}, {"b", 1}});
  Pass pass{shares, false, {}};
  Operation op;
  op.tenant = "a";
  const Waiting a{shares.index("a"), 100, 0, 1}, b{shares.index("b"), 100, 0, 1};
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(cap.skip(op, a, pass)) << "no head waits: nothing is capped";
  pass.headWaits = true;
  for (int i = 0; i < 16; ++i) EXPECT_FALSE(cap.skip(op, a, pass)) << i;
  const auto skipped = cap.skip(op, a, pass);
  ASSERT_TRUE(skipped);
  EXPECT_EQ(*skipped, "tenant 'a' had 16 requests tried beside the queue's head in this pass, its most; it is tried again at the next");
  EXPECT_FALSE(cap.skip(op, b, pass)) << "each tenant has its own";
}

TEST(AdmissionProfile, AQueueSortReplacesTheProfilesAndAnUnknownProfileIsRefused) {
  const std::vector<std::string> fifo{"age"};
  auto profile = buildProfile("share-first", fifo);
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ((*profile)->queueSort.names(), fifo);
  EXPECT_EQ((*profile)->permits.size(), 3u) << "the rest of the profile stays";
  auto unknown = buildProfile("lottery");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "no admission profile 'lottery' (known: switchyard-v1, share-first)");
  const std::vector<std::string> bad{"coin-flip"};
  EXPECT_FALSE(buildProfile("switchyard-v1", bad));
}

}  // namespace
}  // namespace switchyard::admission

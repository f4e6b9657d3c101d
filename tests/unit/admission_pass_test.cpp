// The admission pass alone (issue 59, admission_pass.h): the real profiles' plugins over a queue, with a scripted
// engine that says what fits, what admission answers, and what the post-filters' questions get. The same pass in the
// engine, with every profile, is engine_queue_test.cpp's and engine_queue_tenants_test.cpp's.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "composer/engine/admission/admission_pass.h"
#include "composer/engine/admission/admission_profile.h"
#include "composer/engine/request_queue.h"

namespace switchyard::admission {
namespace {

Operation queuedOp(const std::string& id, const std::string& tenant, int gpus, Timestamp enqueuedAt, int priority = 100) {
  Operation op;
  op.id = id;
  op.systemId = "sys-" + id;
  op.tenant = tenant;
  op.state = OperationState::kQueued;
  QueuedRequest q;
  q.gpuCount = gpus;
  q.priority = priority;
  q.enqueuedAt = enqueuedAt;
  op.queued = q;
  return op;
}

// Fits a request when its GPU count is at most `free`; admission takes the request out of the queue, as the
// engine's does, and takes its GPUs.
class ScriptedEngine final : public PassEngine {
 public:
  explicit ScriptedEngine(RequestQueue& queue, int free) : queue_(queue), free_(free) {}

  PlacementDecision place(const Operation& op) override {
    placed.push_back(op.id);
    PlacementDecision d;
    if (op.queued->gpuCount <= free_) {
      d.placement = Placement{"host-1", {}, {}, "host-1: fits", ""};
      for (int i = 0; i < op.queued->gpuCount; ++i) d.placement->devices.push_back(PlacedDevice{fmt::format("{}-gpu{}", op.id, i)});
    } else {
      d.error = Error{Code::kResourceExhausted, fmt::format("no host has {} free GPUs", op.queued->gpuCount)};
    }
    return d;
  }
  Result<Operation> admit(const Operation& op, const Placement& placement) override {
    if (storeFails) return fail(Code::kUnavailable, "the store refused the write");
    if (refuseAdmission.contains(op.id)) return fail(Code::kFailedPrecondition, "its host went away");
    Operation admitted = op;  // the queue's copy goes below
    free_ -= static_cast<int>(placement.devices.size());
    admittedIds.push_back(admitted.id);
    queue_.remove(admitted.id);
    return admitted;
  }

  Result<void> quotaAllows(const Operation& op, const Placement&) const override {
    if (overQuota.contains(op.tenant)) return fail(Code::kResourceExhausted, fmt::format("tenant '{}' is at its quota", op.tenant));
    return {};
  }
  Result<void> hostAllows(const Placement&) const override { return {}; }
  std::optional<std::string> delaysHead(const Operation& op, const Placement&) const override {
    if (delaying.contains(op.id)) return "it would take what the queue's head gets";
    return std::nullopt;
  }
  std::optional<Promise> preemptFor(const Operation& head, const std::string&, const VictimFilter&) override {
    preemptAsked.push_back(head.id);
    return std::nullopt;
  }
  std::optional<Promise> defragmentFor(const Operation& head, const std::string&) override {
    defragmentAsked.push_back(head.id);
    return std::nullopt;
  }
  Promise leaseShadow(const Operation& head) override {
    shadowAsked.push_back(head.id);
    return {{head.id, 500, Placement{"host-2", {}, {}, "", ""}}, std::nullopt};
  }

  std::vector<OperationId> placed, admittedIds, preemptAsked, defragmentAsked, shadowAsked;
  std::set<std::string> overQuota, delaying, refuseAdmission;
  bool storeFails = false;

 private:
  RequestQueue& queue_;
  int free_;
};

struct Queue {
  RequestQueue queue;
  TenantShares shares;
  std::shared_ptr<const Profile> profile;

  Queue(const std::vector<Operation>& ops, std::string_view profileName = kDefaultAdmissionProfile)
      : shares(tenantsOf(ops), {}, [](std::string_view) { return 1.0; }) {
    for (const auto& op : ops) queue.add(op);
    auto built = buildProfile(profileName);
    EXPECT_TRUE(built) << built.error().message;
    profile = *built;
  }
  static std::vector<std::string> tenantsOf(const std::vector<Operation>& ops) {
    std::vector<std::string> tenants;
    for (const auto& op : ops) tenants.push_back(op.tenant);
    return tenants;
  }
  PassOutcome run(PassEngine& engine) {
    const auto order = admissionOrder(profile->queueSort, queue, shares);
    std::vector<OperationId> ids;
    for (const auto& a : order) ids.push_back(a.id);
    queue.beginPass();
    Pass pass{shares, false, {}};
    const PassOutcome outcome = runPass(*profile, order, queue, pass, engine);
    headWaited = pass.headWaits;
    if (!outcome.halted) queue.endPass(ids);
    return outcome;
  }
  std::string why(const OperationId& id) const {
    const std::string* w = queue.why(id);
    return w ? *w : "";
  }
  bool headWaited = false;
};

TEST(AdmissionPass, AdmitsWhatFitsInOrderAndPlacesEachShapeOnce) {
  // 4 free GPUs. By age: a (2) fits; b (4) no longer does: the head; c asks what b asks: not placed again; d (1) fits.
  Queue q({queuedOp("a", "t", 2, 1), queuedOp("b", "t", 4, 2), queuedOp("c", "t", 4, 3), queuedOp("d", "t", 1, 4)});
  ScriptedEngine engine(q.queue, 4);
  const PassOutcome outcome = q.run(engine);
  EXPECT_FALSE(outcome.halted);
  EXPECT_EQ(outcome.admitted, 2u);
  EXPECT_EQ(engine.admittedIds, (std::vector<OperationId>{"a", "d"}));
  EXPECT_EQ(engine.placed, (std::vector<OperationId>{"a", "b", "d"})) << "c has b's shape: b's answer is c's";
  EXPECT_EQ(q.why("b"), q.why("c"));
  EXPECT_NE(q.why("b").find("no host has 4 free GPUs"), std::string::npos) << q.why("b");
  EXPECT_TRUE(q.headWaited);
  // The head's post-filters, in the default profile's order: moves, then preemption, then the lease shadow, which
  // promises; the shadow is the head's and nobody else's is asked for.
  EXPECT_EQ(engine.defragmentAsked, (std::vector<OperationId>{"b"}));
  EXPECT_EQ(engine.preemptAsked, (std::vector<OperationId>{"b"}));
  EXPECT_EQ(engine.shadowAsked, (std::vector<OperationId>{"b"}));
  ASSERT_TRUE(q.queue.shadow());
  EXPECT_EQ(q.queue.shadow()->head, "b");
  EXPECT_EQ(q.queue.shadow()->at, 500);
  EXPECT_EQ(q.queue.size(), 2u);
}

TEST(AdmissionPass, APermitKeepsARequestThatFitsWaitingWithItsReason) {
  // e would delay the head's shadow (backfill's permit), f's tenant is at its quota, g's admission is refused:
  // each waits with its reason; h goes. z does not fit either, but the head is b: z is promised nothing.
  Queue q({queuedOp("b", "t", 8, 1), queuedOp("e", "t", 1, 2), queuedOp("f", "over", 1, 3), queuedOp("g", "t", 2, 4), queuedOp("h", "t", 3, 5),
           queuedOp("z", "t", 6, 6)});
  ScriptedEngine engine(q.queue, 4);
  engine.delaying = {"e"};
  engine.overQuota = {"over"};
  engine.refuseAdmission = {"g"};
  const PassOutcome outcome = q.run(engine);
  EXPECT_EQ(outcome.admitted, 1u);
  EXPECT_EQ(engine.admittedIds, (std::vector<OperationId>{"h"}));
  EXPECT_EQ(q.why("e"), "it would take what the queue's head gets");
  EXPECT_NE(q.why("f").find("at its quota"), std::string::npos) << q.why("f");
  EXPECT_EQ(q.why("g"), "its host went away");
  EXPECT_NE(q.why("z").find("no host has 6 free GPUs"), std::string::npos) << q.why("z");
  EXPECT_EQ(engine.shadowAsked, (std::vector<OperationId>{"b"}));
  EXPECT_EQ(q.queue.size(), 5u);
}

TEST(AdmissionPass, AStoreThatFailsStopsThePassWhereItIs) {
  Queue q({queuedOp("a", "t", 1, 1), queuedOp("b", "t", 1, 2)});
  ScriptedEngine engine(q.queue, 4);
  engine.storeFails = true;
  const PassOutcome outcome = q.run(engine);
  EXPECT_TRUE(outcome.halted);
  EXPECT_EQ(outcome.admitted, 0u);
  EXPECT_EQ(engine.placed, (std::vector<OperationId>{"a"})) << "nothing after the failed write is tried";
  EXPECT_EQ(q.queue.size(), 2u);
}

TEST(AdmissionPass, ShareFirstLetsATenantTrySixteenRequestsBesideAWaitingHead) {
  // share-first's pre-filter: once a head waits, a tenant's 17th request tried beside it in the pass is left out.
  std::vector<Operation> ops;
  for (int i = 0; i < 19; ++i) ops.push_back(queuedOp(fmt::format("s{:02}", i), "small", 1, 10 + i));
  Queue q(ops, "share-first");
  ScriptedEngine engine(q.queue, 0);  // nothing fits: s00 is the head
  const PassOutcome outcome = q.run(engine);
  EXPECT_EQ(outcome.admitted, 0u);
  EXPECT_EQ(engine.placed, (std::vector<OperationId>{"s00"})) << "the others have its shape: its answer is theirs";
  EXPECT_EQ(engine.preemptAsked, (std::vector<OperationId>{"s00"}));
  EXPECT_NE(q.why("s16").find("no host has 1 free GPUs"), std::string::npos) << "the 16th tried beside the head: " << q.why("s16");
  for (const char* left : {"s17", "s18"})
    EXPECT_NE(q.why(left).find("had 16 requests tried beside the queue's head"), std::string::npos) << left << ": " << q.why(left);
}

}  // namespace
}  // namespace switchyard::admission

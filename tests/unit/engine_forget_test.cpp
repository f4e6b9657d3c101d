// A store belongs to the fabric that made it (issue 63, "the ghost-system trap"): the engine refuses to start on
// another fabric unless told to adopt the store, and an admin can then forget the systems left on devices the
// new fabric does not have. Real simulated fabrics, a real SQLite store.
#include <filesystem>
#include <future>

#include "composer/engine/engine_client.h"
#include "tests/support/topology_builder.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace engine_forget_test {

const Caller kAdmin{"root", Role::kAdmin, {}};
const Caller kOperator{"ops", Role::kOperator, {}};

// Another fabric: other switch ids (a PAX-like pair), and a host of the same name as the default fabric's host0.
Topology otherFabric() {
  return testing::TopologyBuilder().sw("pax0").sw("pax1").gpus("pax0", 2).gpus("pax1", 2).host("host0", {"pax0", "pax1"}).build();
}

class ForgetTest : public EngineTest {
 protected:
  // The default fabric's store with a composed system "train", then the engine stopped and the fabric swapped.
  void composeThenSwapFabric() {
    start();
    ComposeRequest r{"train", {}, {}};
    r.placement.gpuCount = 2;
    r.placement.host = "host0";
    run(engine_->blocking().compose(Caller::local(), r));
    engine_.reset();
    swapFabric(otherFabric());
  }

  // Another switch in place of the first (the simulated switch's bindings file belongs to the first).
  void swapFabric(Topology t) {
    fabric_.reset();
    std::filesystem::remove(dir_ / "switch.json");
    startFabric(std::move(t));
  }

  Result<System> forget(const Caller& caller, const std::string& system) {
    EngineClient client(*engine_);
    std::promise<Result<System>> answered;
    client.run<System>([&](EngineCore& core) { return core.forgetSystem(caller, system); },
                       [&](Result<System> r) { answered.set_value(std::move(r)); });
    return answered.get_future().get();
  }
};

TEST_F(ForgetTest, AStoreMadeByAnotherFabricIsRefusedNamingBothAndTheWayOut) {
  composeThenSwapFabric();
  auto s = SqliteStore::open(dir_ / "yard.db");
  ASSERT_TRUE(s);
  store_ = std::move(*s);
  Engine engine(*fabric_, *store_, clock_, EngineOptions{.fabricPollInterval = 0ms, .reconcileInterval = 0ms, .pruneInterval = 0ms});
  auto started = engine.start();
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, Code::kFailedPrecondition);
  for (const char* part : {"another fabric", "sw0", "pax0", "1 system(s)", "--state-dir", "--adopt-fabric", "systems forget"})
    EXPECT_NE(started.error().message.find(part), std::string::npos) << part << " in: " << started.error().message;
  // Nothing was written: the store still belongs to the first fabric.
  auto stored = store_->load();
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->inventory->switches.front().id, "sw0");
  EXPECT_EQ(stored->systems.size(), 1u);
}

TEST_F(ForgetTest, AnAdoptedStoresGhostSystemIsDegradedAndAnAdminForgetsIt) {
  composeThenSwapFabric();
  configure_ = [](EngineOptions& o) { o.adoptFabric = true; };
  start();
  auto ghost = engine_->reads().getSystem("train");
  ASSERT_TRUE(ghost);
  EXPECT_EQ(ghost->state, SystemState::kDegraded);
  {
    const auto types = eventTypes();
    EXPECT_EQ(std::count(types.begin(), types.end(), "inventory.fabric-adopted"), 1);
  }
  // The ghost holds host0, which the new fabric also has: nothing can be composed there while it is remembered.
  ComposeRequest onHost0{"next", {}, {}};
  onHost0.placement.gpuCount = 2;
  onHost0.placement.host = "host0";
  EXPECT_FALSE(engine_->blocking().compose(Caller::local(), onHost0));

  auto refused = forget(kOperator, "train");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kPermissionDenied);
  auto forgotten = forget(kAdmin, "train");
  ASSERT_TRUE(forgotten) << forgotten.error().message;
  EXPECT_EQ(forgotten->state, SystemState::kDecomposed);
  EXPECT_TRUE(forgotten->bindings.empty());
  EXPECT_NE(forgotten->stateReason.find("forgotten by root"), std::string::npos) << forgotten->stateReason;
  EXPECT_FALSE(engine_->reads().getSystem("train"));
  EXPECT_EQ(eventTypes().back(), "system.forgotten");
  // Both attempts are audited, the refusal with its code.
  auto audit = engine_->history().listAudit({});
  ASSERT_TRUE(audit);
  std::vector<std::string> results;
  for (const auto& a : *audit)
    if (a.action == "forget") results.push_back(a.caller.identity + ":" + a.result);
  EXPECT_EQ(results, (std::vector<std::string>{"root:accepted", "ops:PERMISSION_DENIED"}));  // newest first
  // host0 is free again, and a restart keeps it forgotten.
  run(engine_->blocking().compose(Caller::local(), onHost0));
  start();
  EXPECT_FALSE(engine_->reads().getSystem("train"));
  EXPECT_EQ(engine_->reads().getSystem("next")->state, SystemState::kComposed);
}

TEST_F(ForgetTest, ASystemWhoseDevicesTheFabricReportsIsRefusedAndKept) {
  start();
  compose("train", 2);
  auto refused = forget(kAdmin, "train");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("yardctl decompose train"), std::string::npos) << refused.error().message;
  EXPECT_EQ(engine_->reads().getSystem("train")->state, SystemState::kComposed);
  EXPECT_EQ(fabricBindings().size(), 2u);
  auto unknown = forget(kAdmin, "nope");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
}

TEST_F(ForgetTest, AFabricThatKeepsOneSwitchOfTheStoreIsTheSameFabric) {
  start();
  compose("train", 2);
  engine_.reset();
  // sw1 left, a new switch came: still this store's fabric (no flag needed).
  swapFabric(testing::TopologyBuilder().sw("sw0").sw("sw9").gpus("sw0", 2).gpus("sw9", 2).host("host0", {"sw0", "sw9"}).build());
  start();
  EXPECT_TRUE(engine_->reads().getSystem("train"));
}

}  // namespace engine_forget_test
}  // namespace switchyard

// The engine test fixture: a simulated fabric, a SQLite store in a temp dir, a manual clock, and helpers
// that compose and wait. Shared by the engine_*_test.cpp files.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "composer/engine/engine.h"
#include "agent/host_agents.h"
#include "fabric/simulated_fabric.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"
#include "tests/support/gated_driver.h"
#include "tests/support/temp_dir.h"

namespace switchyard {

using namespace std::chrono_literals;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { startFabric(defaultTopology()); }
  void TearDown() override { engine_.reset(); }

  void startFabric(Topology topology) {
    auto f = SimulatedFabric::create(std::move(topology), clock_, {.statePath = dir_ / "switch.json"});
    ASSERT_TRUE(f) << f.error().message;
    fabric_ = std::move(*f);
  }

  // Starts (or restarts) the engine over the same store file and switch.
  RecoveryReport start(FabricDriver* driver = nullptr) {
    engine_.reset();
    store_.reset();
    auto s = SqliteStore::open(dir_ / "yard.db");
    EXPECT_TRUE(s);
    store_ = std::move(*s);
    EngineOptions options{.steps = stepKinds_,
                          .switchCallTimeout = switchCallTimeout_,
                          .fabricPollInterval = 0ms, .reconcileInterval = reconcileInterval_, .retention = retention_, .pruneInterval = 0ms};
    options.hostCallTimeout = hostCallTimeout_;
    options.quotas = quotas_;
    options.onHalt = onHalt_;
    options.deadlineInterval = 0ms;  // leases and queue timeouts: tests call expireDeadlines() on the manual clock
    if (configure_) configure_(options);
    engine_ = std::make_unique<Engine>(driver ? *driver : *fabric_, *store_, clock_, options);
    if (hosts_) engine_->useHostAgents(*hosts_);
    auto report = engine_->start();
    EXPECT_TRUE(report) << report.error().message;
    return report ? *report : RecoveryReport{};
  }

  Operation run(Result<Operation> accepted) {
    EXPECT_TRUE(accepted) << accepted.error().message;
    if (!accepted) return {};
    auto done = engine_->waitOperation(accepted->id, 10s);
    EXPECT_TRUE(done);
    EXPECT_TRUE(done->finished()) << done->id;
    return *done;
  }

  Operation compose(const std::string& name, int gpus, PeerToPeer p2p = PeerToPeer::kPreferred) {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuCount = gpus;
    r.placement.peerToPeer = p2p;
    return run(engine_->blocking().compose(Caller::local(), r));
  }

  std::vector<Binding> fabricBindings() { return *fabric_->readBindings(); }

  std::size_t freeDevices() {
    auto devices = engine_->reads().listDevices();
    return static_cast<std::size_t>(std::count_if(devices->begin(), devices->end(),
                                                  [](const DeviceView& d) { return d.assignment.allocation == DeviceAllocation::kFree; }));
  }

  std::vector<std::string> eventTypes() {
    std::vector<std::string> out;
    const auto events = engine_->history().listEvents(0, 10'000);
    for (const auto& e : *events) out.push_back(e.type);
    return out;
  }

  testing::TempDir dir_;
  RetentionPolicy retention_;
  std::shared_ptr<const StepKindRegistry> stepKinds_;  // null: the built-in step kinds
  std::chrono::milliseconds reconcileInterval_{0};
  std::chrono::milliseconds switchCallTimeout_{60'000};
  std::chrono::milliseconds hostCallTimeout_{30'000};
  TenantQuotas quotas_;  // set before start()
  std::function<void(const std::string&)> onHalt_;  // set before start()
  std::function<void(EngineOptions&)> configure_;   // set before start(): anything else about the engine
  HostAgents* hosts_ = nullptr;  // set before start(): the host side (none: every host trusts the fabric)
  ManualClock clock_;
  std::unique_ptr<SimulatedFabric> fabric_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<Engine> engine_;
};

// A compose of `gpus` GPUs named `name`, everything else as the request's defaults.
inline ComposeRequest gpuCompose(std::string name, int gpus) {
  ComposeRequest r{std::move(name), {}, {}};
  r.placement.gpuCount = gpus;
  return r;
}

// Starts a compose whose bind call then waits in the switch until gated.open().
inline Result<Operation> composeHeldInTheSwitch(Engine& engine, testing::GatedDriver& gated, std::string name, int gpus) {
  gated.closeBeforeBind(0);
  auto accepted = engine.blocking().compose(Caller::local(), gpuCompose(std::move(name), gpus));
  if (accepted) gated.waitUntilHeld();
  return accepted;
}

// The log of an operation as kind:state, with * for compensations.
inline std::vector<std::string> stepLog(const Operation& op) {
  std::vector<std::string> log;
  for (const auto& s : op.steps) log.push_back(s.kind + ":" + std::string(toString(s.state)) + (s.compensation ? "*" : ""));
  return log;
}

}  // namespace switchyard

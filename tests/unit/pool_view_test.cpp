// The published pool view (pool_view.h, ADR 0016): reads answer while the control thread is busy, a reader
// sees what it was told about, views never change once published, and they share what did not change.
#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <latch>

#include "composer/engine/pool_state.h"
#include "composer/engine/pool_view.h"
#include "composer/packing/capacity.h"
#include "composer/packing/composable_model.h"
#include "tests/support/gated_driver.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

ComposeRequest gpus(const std::string& name, int n) {
  ComposeRequest r{name, {}, {}};
  r.placement.gpuCount = n;
  return r;
}

TEST(ChunkedArray, AChangeCopiesOnlyItsChunk) {
  std::vector<int> items(200);
  for (int i = 0; i < 200; ++i) items[static_cast<std::size_t>(i)] = i;
  const ChunkedArray<int, 64> before(items);
  const auto after = before.with({{70, -1}, {71, -2}});
  EXPECT_EQ(before[70], 70) << "the old array never changes";
  EXPECT_EQ(after[70], -1);
  EXPECT_EQ(after[71], -2);
  EXPECT_EQ(after.size(), 200u);
  EXPECT_EQ(&before[0], &after[0]) << "an untouched chunk is shared, not copied";
  EXPECT_EQ(&before[199], &after[199]);
  EXPECT_NE(&before[72], &after[72]) << "the touched chunk is a copy";
}

TEST(SystemTable, AddsReplacesAndRemovesWithoutTouchingTheOriginal) {
  auto sys = [](std::string id, std::string name) {
    System s;
    s.id = std::move(id);
    s.name = std::move(name);
    return std::make_shared<const System>(std::move(s));
  };
  const SystemTable empty;
  const auto two = empty.with({{"sys-1", sys("sys-1", "a")}, {"sys-2", sys("sys-2", "b")}});
  const auto one = two.with({{"sys-1", nullptr}, {"sys-2", sys("sys-2", "b2")}});
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(two.size(), 2u);
  EXPECT_EQ(one.size(), 1u);
  EXPECT_EQ(two.findByIdOrName("a")->id, "sys-1");
  EXPECT_EQ(one.findByIdOrName("sys-1"), nullptr);
  EXPECT_EQ(one.findByIdOrName("a"), nullptr) << "a removed system's name is gone";
  EXPECT_EQ(one.findByIdOrName("b"), nullptr) << "a renamed system is not found by its old name";
  EXPECT_EQ(one.findByIdOrName("b2")->id, "sys-2");
  EXPECT_EQ(two.findByIdOrName("b")->id, "sys-2") << "the older table keeps its names";
  EXPECT_EQ(one.find("sys-2")->name, "b2");
  EXPECT_EQ(two.find("sys-2")->name, "b");
  ASSERT_EQ(two.sorted().size(), 2u);
  EXPECT_EQ(two.sorted()[0]->id, "sys-1");
}

TEST(SystemTable, ThousandsOfSystemsInEveryGroupAreFoundByIdAndNameThroughChangesInOneStep) {
  auto sys = [](int i, std::string suffix = {}) {
    System s;
    s.id = fmt::format("sys-{:06}", i);
    s.name = fmt::format("train-{}{}", i, suffix);
    return std::make_shared<const System>(std::move(s));
  };
  std::vector<std::pair<SystemId, std::shared_ptr<const System>>> all;
  for (int i = 0; i < 3000; ++i) all.emplace_back(fmt::format("sys-{:06}", i), sys(i));
  const auto full = SystemTable{}.with(all);
  ASSERT_EQ(full.size(), 3000u);
  // One step that renames every third system and removes every seventh: many buckets of one group change together.
  std::vector<std::pair<SystemId, std::shared_ptr<const System>>> changes;
  for (int i = 0; i < 3000; ++i) {
    if (i % 7 == 0) changes.emplace_back(fmt::format("sys-{:06}", i), nullptr);
    else if (i % 3 == 0) changes.emplace_back(fmt::format("sys-{:06}", i), sys(i, "-renamed"));
  }
  const auto changed = full.with(changes);
  std::size_t left = 0;
  changed.forEach([&](const System&) { ++left; });
  EXPECT_EQ(left, changed.size());
  EXPECT_EQ(changed.size(), 3000u - 429u);
  for (int i = 0; i < 3000; ++i) {
    const std::string id = fmt::format("sys-{:06}", i);
    ASSERT_NE(full.find(id), nullptr) << "the older table is unchanged: " << id;
    EXPECT_EQ(full.findByIdOrName(fmt::format("train-{}", i))->id, id);
    if (i % 7 == 0) {
      EXPECT_EQ(changed.find(id), nullptr) << id;
      EXPECT_EQ(changed.findByIdOrName(fmt::format("train-{}", i)), nullptr) << id;
    } else if (i % 3 == 0) {
      EXPECT_EQ(changed.findByIdOrName(fmt::format("train-{}-renamed", i))->id, id);
      EXPECT_EQ(changed.findByIdOrName(fmt::format("train-{}", i)), nullptr) << "the old name is gone: " << id;
    } else {
      EXPECT_EQ(changed.findByIdOrName(fmt::format("train-{}", i))->id, id);
    }
  }
  const auto sorted = changed.sorted();
  ASSERT_EQ(sorted.size(), changed.size());
  EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a->id < b->id; }));
}

TEST(PoolState, FindsALiveSystemByIdOrNameAndForgetsANameWhenItGoes) {
  PoolState state{Topology{}};
  System s;
  s.id = "sys-1";
  s.name = "train";
  s.state = SystemState::kComposed;
  state.putSystem(s);
  ASSERT_NE(state.findSystem("train"), nullptr);
  EXPECT_EQ(state.findSystem("train")->id, "sys-1");
  EXPECT_EQ(state.findSystem("sys-1")->name, "train");
  s.name = "train-2";  // the same system under another name
  state.putSystem(s);
  EXPECT_EQ(state.findSystem("train"), nullptr);
  EXPECT_EQ(state.findSystem("train-2")->id, "sys-1");
  s.state = SystemState::kDecomposed;
  state.putSystem(s);
  EXPECT_EQ(state.findSystem("train-2"), nullptr);
  System again;  // a new system may take a name that is free again
  again.id = "sys-2";
  again.name = "train-2";
  again.state = SystemState::kComposed;
  state.putSystem(again);
  EXPECT_EQ(state.findSystem("train-2")->id, "sys-2");
}

TEST_F(EngineTest, PoolReadsAnswerWhileTheControlThreadIsBusy) {
  start();
  compose("train", 2);
  // Hold the control thread inside a task until the reads below have answered.
  std::latch release(1);
  std::promise<void> entered;
  std::promise<Result<int>> left;
  engine_->async<int>(
      [&]() -> Result<int> {
        entered.set_value();
        release.wait();
        return 0;
      },
      [&](Result<int> r) { left.set_value(std::move(r)); });
  entered.get_future().wait();
  auto systems = engine_->reads().listSystems();
  auto devices = engine_->reads().listDevices();
  auto hosts = engine_->reads().listHosts();
  auto system = engine_->reads().getSystem("train");
  auto capacity = engine_->reads().capacity({{1, PeerToPeer::kRequired, ""}});
  auto topology = engine_->reads().topology();
  release.count_down();
  ASSERT_TRUE(left.get_future().get());
  ASSERT_TRUE(systems && devices && hosts && system && capacity && topology);
  EXPECT_EQ(systems->size(), 1u);
  EXPECT_EQ(system->state, SystemState::kComposed);
  EXPECT_EQ(devices->size(), topology->devices.size());
  EXPECT_EQ(capacity->freeGpus + 2, static_cast<int>(std::count_if(topology->devices.begin(), topology->devices.end(),
                                                                  [](const Device& d) { return d.kind == DeviceKind::kGpu; })));
}

TEST_F(EngineTest, WhatACallerHearsOfIsAlreadyInTheView) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  gated.closeBeforeBind(0);
  auto op = engine_->blocking().compose(Caller::local(), gpus("train", 2));
  ASSERT_TRUE(op) << op.error().message;
  // Accepted: the system and its reserved devices are readable the moment compose returns.
  auto accepted = engine_->reads().getSystem("train");
  ASSERT_TRUE(accepted) << accepted.error().message;
  EXPECT_EQ(accepted->state, SystemState::kComposing);
  EXPECT_EQ(accepted->progress, "binding") << "the running operation's step";
  const auto reservedView = engine_->reads().view();
  gated.waitUntilHeld();
  gated.open();
  auto done = engine_->waitOperation(op->id, 10s);
  ASSERT_TRUE(done && done->state == OperationState::kSucceeded);
  // Finished: whoever waited reads the composed system, its devices allocated.
  const auto composedView = engine_->reads().view();
  auto s = composedView->systems.findByIdOrName("train");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SystemState::kComposed);
  EXPECT_TRUE(s->progress.empty());
  ASSERT_EQ(s->bindings.size(), 2u);
  for (const auto& b : s->bindings) {
    const DeviceView* d = composedView->device(b.deviceId);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->assignment.allocation, DeviceAllocation::kAllocated);
    EXPECT_EQ(d->systemId, s->id);
    EXPECT_EQ(d->upstreamPortId, b.upstreamPortId);
    EXPECT_EQ(reservedView->device(b.deviceId)->assignment.allocation, DeviceAllocation::kReserved) << "an older view never changes";
  }
  EXPECT_GT(composedView->version, reservedView->version);
  EXPECT_EQ(composedView->host(s->hostId)->systemId, s->id);
  EXPECT_EQ(composedView->host(s->hostId)->attachedDevices, 2);
}

TEST_F(EngineTest, TheViewsPoolAgreesWithTheEnginesPlacements) {
  start();
  compose("a", 4, PeerToPeer::kRequired);
  compose("b", 3);
  ASSERT_TRUE(fabric_->setDeviceHealth("sw1-gpu0", DeviceHealth::kCritical));
  ASSERT_TRUE(engine_->pollFabricEvents());
  const auto view = engine_->reads().view();
  const Pool pool = poolOf(*view);
  const auto scheduler = *buildComposableScheduler("switchyard-v2");  // the engine's default profile
  // What the engine would place next, planned on its own pool, is what the view's pool places.
  for (int n : {1, 2, 4, 8}) {
    PlacementRequest r;
    r.gpuCount = n;
    auto planned = engine_->blocking().plan(r);
    ASSERT_TRUE(planned) << planned.error().message;
    const PlacementDecision fromView = place(*scheduler, pool, r);
    ASSERT_EQ(planned->decision.placement.has_value(), fromView.placement.has_value()) << n;
    if (planned->decision.placement) {
      EXPECT_EQ(planned->decision.placement->hostId, fromView.placement->hostId) << n;
      EXPECT_EQ(planned->decision.placement->devices.size(), fromView.placement->devices.size()) << n;
    }
  }
  EXPECT_EQ(pool.freeCount(), static_cast<int>(view->devices.size()) - 7);
}

TEST_F(EngineTest, DevicePagesFollowTheTokenAndTheFilters) {
  start();
  compose("train", 2, PeerToPeer::kRequired);
  const auto view = engine_->reads().view();
  const auto all = [](const DeviceView&) { return true; };
  // Every device once, in id order, page by page.
  std::vector<std::string> seen;
  std::string token, next;
  do {
    for (const DeviceView* d : pageOfDevices(*view, {}, all, 5, token, next)) seen.push_back(d->device.id);
    token = next;
  } while (!token.empty());
  ASSERT_EQ(seen.size(), view->devices.size());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  // Filters.
  auto ids = [&](const DeviceFilter& f) {
    std::vector<std::string> out;
    std::string n;
    for (const DeviceView* d : pageOfDevices(*view, f, all, 1000, "", n)) out.push_back(d->device.id);
    return out;
  };
  const auto system = view->systems.findByIdOrName("train");
  ASSERT_TRUE(system);
  EXPECT_EQ(ids({.system = "train"}).size(), 2u);
  EXPECT_EQ(ids({.system = system->id}), ids({.hostId = system->hostId}));
  EXPECT_TRUE(ids({.system = "nope"}).empty());
  const auto onSw0 = ids({.switchId = "sw0"});
  EXPECT_FALSE(onSw0.empty());
  for (const auto& id : onSw0) EXPECT_EQ(view->device(id)->switchId, "sw0");
  const auto free = ids({.freeOnly = true});
  EXPECT_EQ(free.size() + 2, view->devices.size());
  const auto freeOnSw0 = ids({.freeOnly = true, .switchId = "sw0"});
  for (const auto& id : freeOnSw0) {
    EXPECT_EQ(view->device(id)->assignment.allocation, DeviceAllocation::kFree);
    EXPECT_EQ(view->device(id)->switchId, "sw0");
  }
  const std::string model = view->devices[0].device.model;
  for (const auto& id : ids({.model = model})) EXPECT_EQ(view->device(id)->device.model, model);
  EXPECT_TRUE(ids({.model = "no-such-model"}).empty());
}

}  // namespace
}  // namespace switchyard

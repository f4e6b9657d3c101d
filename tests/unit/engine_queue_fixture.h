// The queue's test fixture (engine_queue_test.cpp, engine_queue_tenants_test.cpp): requests by size, class and
// tenant, and what the queue holds.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/engine_fixture.h"

namespace switchyard {

class EngineQueueTest : public EngineTest {
 protected:
  static ComposeRequest want(const std::string& name, int gpus, bool queue = false) {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuCount = gpus;
    r.queue = queue;
    return r;
  }
  static ComposeRequest queued(const std::string& name, int gpus, std::string priorityClass = {}, std::string tenant = "default") {
    auto r = want(name, gpus, true);
    r.priorityClass = std::move(priorityClass);
    r.placement.tenant = std::move(tenant);
    return r;
  }
  Operation enqueue(const ComposeRequest& r, const Caller& caller = Caller::local()) {
    auto op = engine_->blocking().compose(caller, r);
    EXPECT_TRUE(op) << op.error().message;
    if (!op) return {};
    EXPECT_EQ(op->state, OperationState::kQueued) << r.name << ": " << op->explanation;
    return *op;
  }
  Operation composeWith(ComposeRequest r) { return run(engine_->blocking().compose(Caller::local(), r)); }
  // The built-in classes, with spot's preempted systems queued again (spot=0:preemptible:requeue).
  static std::vector<PriorityClass> requeueingSpot() {
    std::vector<PriorityClass> classes = defaultPriorityClasses();
    for (auto& c : classes) c.requeue = c.name == "spot";
    return classes;
  }
  Operation finished(const OperationId& id) {
    auto op = engine_->waitOperation(id, 10s);
    EXPECT_TRUE(op) << op.error().message;
    return op ? *op : Operation{};
  }
  // The pool full (team-a's "a" and the default tenant's "x", 8 GPUs each); team-a queues "a-next", 12 hours
  // later team-b queues "b-next", then "a" is decomposed: both tenants hold nothing now, a-next is older.
  std::pair<Operation, Operation> queueAfterTeamAHeldEightGpusFor12Hours(std::chrono::milliseconds halfLife) {
    configure_ = [halfLife](EngineOptions& o) { o.fairShareHalfLife = halfLife; };
    start();
    auto a = want("a", 8);
    a.placement.tenant = "team-a";
    composeWith(a);
    compose("x", 8);
    const Operation aNext = enqueue(queued("a-next", 8, "batch", "team-a"));
    clock_.advance(12h);
    const Operation bNext = enqueue(queued("b-next", 8, "batch", "team-b"));
    run(engine_->blocking().decompose(Caller::local(), "a"));
    return {aNext, bNext};
  }
  std::vector<std::string> queueNames() {
    std::vector<std::string> out;
    const auto queue = engine_->reads().listQueue();  // held: a range-for over *temporary would dangle
    for (const auto& e : *queue) out.push_back(e.name);
    return out;
  }
};

}  // namespace switchyard

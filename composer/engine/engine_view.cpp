// The commit point of every control-thread task, and the published view of the pool (pool_view.h).
#include <boost/asio/io_context.hpp>
#include <set>
#include <utility>

#include "composer/engine/engine.h"
#include "composer/model/fail_points.h"

namespace switchyard {

void Engine::flush() {
  // Capacity that freed in this task goes to the queue in this task (engine_queue.cpp): no polling.
  if (state_) startDueDetaches();  // a move's attach succeeded in this task: its idle GPUs leave now
  if (queue_.dirty() && state_) admitQueued();
  // Group commit (group_commit.h): with a task queued behind this one, its commit point is that task's too; not
  // once the loop is stopping (stop() waits for this task's answer before it runs what is still queued).
  if (!loop_.context().stopped() && commits_.deferCommitPoint()) {
    if (failpoints::armed()) failpoints::crashPoint("commit.deferred");  // a batch is open: nobody heard of its tasks
    return;
  }
  (void)writeStaged();  // a failure halts the engine and marks what waited for it refused
  publishView();
  // Delivering may add to the outbox (a completion that posts nothing, a listener): take turns until empty;
  // whatever a delivery wrote is written before the deliveries after it.
  while (!outbox_.empty()) {
    outbox_.deliverTurn();
    (void)writeStaged();
  }
}

void Engine::publishView() {
  if (!state_) return;
  const bool rebuild = !view_.builtFrom(state_.get());
  auto current = view_.current();
  std::shared_ptr<PoolView> next;  // made once something changed: most commit points change nothing the view shows

  // Systems whose running operation may have moved on: their progress line is part of the view.
  std::vector<SystemId> progressed;
  std::map<std::string, int> running;
  for (const auto& [id, op] : runner_->running()) {
    ++running[std::string(toString(op.kind))];
    if (!op.systemId.empty()) progressed.push_back(op.systemId);
  }

  if (rebuild) {
    (void)state_->takeChanges();
    next = std::make_shared<PoolView>();
    next->shape = std::make_shared<const PoolShape>(state_->topology());
    const PoolShape& shape = *next->shape;
    std::vector<DeviceView> devices(shape.topology.devices.size());
    for (std::size_t i = 0; i < shape.topology.devices.size(); ++i)
      devices[shape.deviceOrder[i]] = state_->deviceView(shape.topology.devices[i].id);
    next->devices = ChunkedArray<DeviceView>(std::move(devices));
    std::vector<HostSlot> hosts;
    hosts.reserve(shape.topology.hosts.size());
    for (const auto& h : shape.topology.hosts) hosts.push_back(state_->hostSlot(h.id));
    for (const auto& [host, id] : reservations_.heldHosts())
      if (auto it = shape.hostPosition.find(host); it != shape.hostPosition.end()) hosts[it->second].reservationId = id;
    next->hosts = ChunkedArray<HostSlot>(std::move(hosts));
    std::vector<std::pair<SystemId, std::shared_ptr<const System>>> systems;
    for (const auto& [id, s] : state_->systems()) systems.emplace_back(id, std::make_shared<const System>(withProgress(s)));
    next->systems = SystemTable{}.with(systems);
  } else {
    PoolState::Changes changes = state_->takeChanges();
    for (const auto& id : progressed) {
      const System* s = state_->system(id);
      auto shown = current->systems.find(id);
      if (s != nullptr && shown && shown->progress != runner_->progressOf(s->activeOperation)) changes.systems.insert(id);
    }
    if (changes.empty() && !queue_.changed() && !idle_.changed() && running == current->runningOperations && state_->pool().sharedDemand() == current->demand) return;
    next = std::make_shared<PoolView>();
    next->shape = current->shape;
    const PoolShape& shape = *next->shape;
    std::vector<std::pair<std::size_t, DeviceView>> devices;
    for (const auto& id : changes.devices)
      if (auto it = shape.devicePosition.find(id); it != shape.devicePosition.end()) devices.emplace_back(it->second, state_->deviceView(id));
    next->devices = current->devices.with(std::move(devices));
    std::vector<std::pair<std::size_t, HostSlot>> hosts;
    for (const auto& id : changes.hosts) {
      auto it = shape.hostPosition.find(id);
      if (it == shape.hostPosition.end()) continue;
      HostSlot slot = state_->hostSlot(id);
      slot.reservationId = reservations_.holderOfHost(id);
      hosts.emplace_back(it->second, std::move(slot));
    }
    next->hosts = current->hosts.with(std::move(hosts));
    std::vector<std::pair<SystemId, std::shared_ptr<const System>>> systems;
    for (const auto& id : changes.systems) {
      const System* s = state_->system(id);
      systems.emplace_back(id, s ? std::make_shared<const System>(withProgress(*s)) : nullptr);
    }
    next->systems = current->systems.with(systems);
  }
  next->version = current ? current->version + 1 : 1;
  next->runningOperations = std::move(running);
  if (queue_.changed() || !current || !current->queue) {
    auto queue = std::make_shared<std::vector<QueueEntry>>();
    queue->reserve(queue_.size());
    // In admission order, then what no pass has looked at yet (a standby's, a halted engine's).
    for (const Operation* waiting : queue_.inOrder()) {
      const Operation& op = *waiting;
      QueueEntry e;
      e.operationId = op.id;
      e.systemId = op.systemId;
      if (const System* s = state_->system(op.systemId)) e.name = s->name;
      e.tenant = op.tenant;
      e.requestedBy = op.requestedBy.identity;
      e.request = *op.queued;
      e.position = queue->size() + 1;
      if (const std::string* why = queue_.why(op.id)) e.waitingFor = *why;
      queue->push_back(std::move(e));
    }
    next->queue = std::move(queue);
    queue_.clearChanged();
  } else {
    next->queue = current->queue;
  }
  if (idle_.changed() || !current || !current->activity) {
    next->activity = idle_.forView(*state_, policyOf());  // a round builds its own off the control thread
  } else {
    next->activity = current->activity;
  }
  next->demand = state_->pool().sharedDemand();
  view_.publish(std::move(next), state_.get());
}

}  // namespace switchyard

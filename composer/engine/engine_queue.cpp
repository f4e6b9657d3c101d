// yardd's queue (issue 40, ADR 0017). A compose asked with `queue` that does not fit now is accepted as a
// queued system with a queued operation, both durable; at every commit point after which capacity may
// have freed (an operation ended, a request was cancelled or queued, a reservation let go), admitQueued
// places the waiting requests in order and admits each that fits, in the same control-thread task: no
// polling. The pass's rules are the admission profile's plugins (composer/engine/admission/, ADR 0032); the
// default, switchyard-v1, orders by priority class, then the tenant's fair-share charge (GPUs held per unit of
// share), then age, and lets a request behind the head go first only when it cannot delay the head (backfill): by
// the leases we know of, the head's placement is predicted, and a request that takes none of it, or ends before
// it, may go.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "composer/engine/engine.h"
#include "composer/engine/engine_control.h"
#include "composer/packing/gpu_shares.h"

namespace switchyard {

namespace {

PeerToPeer peerToPeerOf(std::string_view text) {
  if (text == "required") return PeerToPeer::kRequired;
  if (text == "none") return PeerToPeer::kNone;
  return PeerToPeer::kPreferred;
}

std::string_view peerToPeerName(PeerToPeer p) {
  switch (p) {
    case PeerToPeer::kRequired: return "required";
    case PeerToPeer::kNone: return "none";
    case PeerToPeer::kPreferred: break;
  }
  return "preferred";
}

PlacementRequest placementRequestOf(const QueuedRequest& q, const std::string& tenant) {
  PlacementRequest r;
  r.gpuCount = q.gpuCount;
  r.model = q.model;
  r.minMemoryGiB = q.minMemoryGiB;
  r.pooledMemoryGiB = q.pooledMemoryGiB;
  r.endpoints = q.endpoints;
  r.peerToPeer = peerToPeerOf(q.peerToPeer);
  if (!q.host.empty()) r.host = q.host;
  r.devices = q.devices;
  r.gpuInstances = q.gpuInstances;
  r.migCapable = q.migCapable;
  r.gpuShareMilli = q.gpuShareMilli;
  r.tenant = tenant;
  return r;
}

}  // namespace

const PriorityClass* Engine::priorityClass(std::string_view name) const {
  for (const auto& c : options_.priorityClasses)
    if (c.name == name) return &c;
  return nullptr;
}

Result<QueuedRequest> Engine::queuedRequestOf(const ComposeRequest& request) const {
  const PlacementRequest& p = request.placement;
  QueuedRequest q;
  q.gpuCount = p.gpuCount;
  q.model = p.model;
  q.minMemoryGiB = p.minMemoryGiB;
  q.pooledMemoryGiB = p.pooledMemoryGiB;
  q.endpoints = p.endpoints;
  q.peerToPeer = std::string(peerToPeerName(p.peerToPeer));
  q.host = p.host.value_or("");
  q.devices = p.devices;
  q.gpuInstances = p.gpuInstances;
  q.migCapable = p.migCapable;
  q.gpuShareMilli = p.gpuShareMilli;
  const std::string className = request.priorityClass.empty() ? std::string(kDefaultPriorityClass) : request.priorityClass;
  const PriorityClass* cls = priorityClass(className);
  if (cls == nullptr) {
    std::vector<std::string> known;
    for (const auto& c : options_.priorityClasses) known.push_back(c.name);
    return fail(Code::kInvalidArgument, fmt::format("no priority class '{}' (known: {})", className, fmt::join(known, ", ")));
  }
  // A tenant limited to some classes (the identities file's priority_classes) may not name another.
  if (auto quota = options_.quotas.find(p.tenant); quota != options_.quotas.end() && quota->second.priorityClasses) {
    const auto& allowed = *quota->second.priorityClasses;
    if (std::find(allowed.begin(), allowed.end(), cls->name) == allowed.end())
      return fail(Code::kPermissionDenied, fmt::format("tenant '{}' may compose in priority class{} {} only, not '{}'{}", p.tenant,
                                                       allowed.size() == 1 ? "" : "es", fmt::join(allowed, ", "), cls->name,
                                                       request.priorityClass.empty() ? " (the default): name one with --priority" : ""));
  }
  q.priorityClass = cls->name;
  q.priority = cls->value;
  const auto maxWait = options_.maxLease;
  if (request.queueTimeout.count() < 0 || request.queueTimeout > maxWait)
    return fail(Code::kInvalidArgument, fmt::format("queue timeout: between 1s and {}", formatDuration(maxWait)));
  // The tenant's policy (the identities file): the lease its systems get when none is asked, and its longest.
  std::chrono::milliseconds lease = request.lease;
  std::chrono::milliseconds maxLease = options_.maxLease;
  if (auto quota = options_.quotas.find(p.tenant); quota != options_.quotas.end()) {
    if (lease.count() == 0 && quota->second.defaultLease) lease = *quota->second.defaultLease;
    if (quota->second.maxLease) maxLease = std::min(maxLease, *quota->second.maxLease);
  }
  if (lease.count() < 0 || lease > maxLease)
    return fail(Code::kInvalidArgument, fmt::format("lease: between 1s and {}{}", formatDuration(maxLease),
                                                    maxLease < options_.maxLease ? fmt::format(" for tenant '{}'", p.tenant) : ""));
  if (lease.count() > 0 && lease < std::chrono::seconds(1)) return fail(Code::kInvalidArgument, "lease: at least 1s");
  q.enqueuedAt = clock_.now();
  if (request.queueTimeout.count() > 0) q.deadline = q.enqueuedAt + std::chrono::duration_cast<Duration>(request.queueTimeout).count();
  q.leaseSeconds = std::chrono::duration_cast<std::chrono::seconds>(lease).count();
  return q;
}

Result<void> Engine::queueHasRoom(const std::string& tenant, const std::string& why) const {
  if (queue_.size() >= options_.maxQueued)
    return fail(Code::kResourceExhausted, fmt::format("it does not fit now ({}), and the queue is full ({} requests)", why, queue_.size()));
  const std::size_t ofTenant = queue_.countOf(tenant);
  std::size_t mostOfTenant = options_.maxQueuedPerTenant;
  if (auto quota = options_.quotas.find(tenant); quota != options_.quotas.end() && quota->second.maxQueued)
    mostOfTenant = static_cast<std::size_t>(*quota->second.maxQueued);
  if (ofTenant >= mostOfTenant)
    return fail(Code::kResourceExhausted, fmt::format("it does not fit now ({}), and tenant '{}' has {} request(s) queued, its most; "
                                                      "cancel one (`yardctl queue cancel ID`) or wait",
                                                      why, tenant, ofTenant));
  return {};
}

Engine::QueuedCompose Engine::queuedCompose(const Acceptance& a, const std::string& name, const std::string& tenant,
                                            const std::map<std::string, std::string>& labels, QueuedRequest queued, std::string explanation,
                                            Mutation& m) {
  System system;
  system.id = numbers_.nextSystem();
  system.name = name;
  system.tenant = tenant;
  system.labels = labels;
  system.state = SystemState::kQueued;
  system.priorityClass = queued.priorityClass;
  system.createdAt = system.updatedAt = clock_.now();
  system.asked = queued;
  Operation op = newOperation(OperationKind::kCompose, system, a);
  op.state = OperationState::kQueued;
  op.explanation = std::move(explanation);
  op.queued = std::move(queued);
  system.activeOperation = op.id;
  m.writes.emplace_back(PutSystem{system});
  m.writes.emplace_back(PutOperation{op});
  auditInto(&a, m, system.tenant, op.id, op.explanation);
  return {std::move(system), std::move(op)};
}

void Engine::enqueue(const QueuedCompose& queued) {
  numbers_.systemAdded();
  state_->putSystem(queued.system);
  if (options_.metrics) options_.metrics->queued.add({queued.op.queued->priorityClass});
  queue_.add(queued.op);
  queue_.markDirty();
}

Result<Operation> Engine::acceptQueued(const Acceptance& a, const ComposeRequest& request, const std::string& why) {
  const Caller& caller = a.caller();
  const std::string& tenant = request.placement.tenant;
  SY_TRY(queueHasRoom(tenant, why));
  SY_ASSIGN(QueuedRequest asked, queuedRequestOf(request));
  const std::string explanation = fmt::format("queued ({} class): {}", asked.priorityClass, why);
  Mutation m;
  QueuedCompose queued = queuedCompose(a, request.name, tenant, request.labels, std::move(asked), explanation, m);
  const Operation& op = queued.op;
  m.events.push_back(operationEvent("queue.entered", op,
                               fmt::format("{} ({}) for {} waits in the queue, {} class: {}", request.name, describeShape(*op.queued),
                                           caller.identity, op.queued->priorityClass, why),
                               caller.identity));
  for (auto& e : m.events) e.tenant = tenant;
  SY_TRY(persist(m));
  enqueue(queued);
  spdlog::info("{} compose of {} for {} queued ({} class): {}", op.id, request.name, caller.identity, op.queued->priorityClass, why);
  return op;
}

Pool Engine::poolWithout(std::span<const System* const> systems) const {
  Pool pool = state_->pool();
  for (const System* s : systems) {
    const int hi = pool.hostIndex(s->hostId);
    for (const auto& b : s->bindings)
      if (const int di = pool.deviceIndex(b.deviceId); di >= 0) {
        pool.setFree(di, true);
        if (hi >= 0) pool.addAttached(hi, -1);
      }
    if (hi >= 0) pool.setInSystem(hi, false);
  }
  return pool;
}

RequestQueue::HeadShadow Engine::leaseShadowOf(const Operation& head) {
  // When, by the leases we know of, could the head go, and where? Feasibility only grows as leased systems
  // end, so a binary search over them in expiry order finds the first moment.
  RequestQueue::HeadShadow shadow{head.id, 0, {}};
  std::vector<const System*> leased;
  for (const auto& [id, s] : state_->systems())
    if (s.leaseExpiresAt > 0 && !s.hostId.empty()) leased.push_back(&s);
  std::sort(leased.begin(), leased.end(), [](const System* a, const System* b) { return a->leaseExpiresAt < b->leaseExpiresAt; });
  std::size_t lo = 1, hi = leased.size();
  while (lo <= hi && hi > 0) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const Pool pool = poolWithout(std::span(leased).first(mid));
    if (auto d = placeQueued(head, &pool); d.placement) {
      shadow.placement = std::move(*d.placement);
      shadow.at = leased[mid - 1]->leaseExpiresAt;
      hi = mid - 1;
    } else {
      lo = mid + 1;
    }
  }
  return shadow;
}

PlacementRequest Engine::wantedOf(const Operation& op) const {
  PlacementRequest wanted = placementRequestOf(*op.queued, op.tenant);
  if (wanted.gpuShareMilli != 0) wanted = freshGpuForShare(wanted);
  return wanted;
}

PlacementDecision Engine::placeQueued(const Operation& op, const Pool* pool) {
  const PlacementRequest wanted = wantedOf(op);
  if (pool != nullptr) return place(*placement_, *pool, wanted);
  return place(*placement_, state_->pool(), wanted, &state_->placementIndex());
}

std::optional<std::string> Engine::delaysHead(const Placement& placement, std::int64_t leaseSeconds, const std::string& tenant,
                                              int priority) const {
  if (!queue_.shadow() || queue_.shadow()->at == 0) return std::nullopt;  // no lease we know of lets the head in: nothing to delay
  const RequestQueue::HeadShadow& head = *queue_.shadow();
  if (const Operation* queued = queue_.find(head.head); queued != nullptr && queued->queued && priority > queued->queued->priority)
    return std::nullopt;  // it would be ahead of the head in the queue
  if (leaseSeconds > 0 && clock_.now() + leaseSeconds * 1'000'000'000LL <= head.at) return std::nullopt;  // ends before it starts
  auto headName = [&] {
    const Operation* queued = queue_.find(head.head);
    const System* s = queued == nullptr ? nullptr : state_->system(queued->systemId);
    if (queued == nullptr || queued->tenant != tenant) return std::string("(a request queued earlier)");
    return s ? fmt::format("{} ({})", s->name, head.head) : head.head;
  };
  if (placement.hostId == head.placement.hostId)
    return fmt::format("it would take host {}, which the queue's head {} gets at {} when leases end", placement.hostId, headName(),
                       formatTimestamp(head.at));
  for (const auto& d : placement.devices)
    for (const auto& h : head.placement.devices)
      if (d.deviceId == h.deviceId)
        return fmt::format("it would take {}, which the queue's head {} gets at {} when leases end", d.deviceId, headName(),
                           formatTimestamp(head.at));
  return std::nullopt;
}

RecentUse::Charges Engine::heldGpusByTenant() const {
  RecentUse::Charges held;
  for (const auto& [id, s] : state_->systems())
    for (const auto& b : s.bindings)
      if (const Device* d = state_->index().device(b.deviceId); d && d->kind == DeviceKind::kGpu) held[s.tenant] += 1.0;
  return held;
}

class Engine::AdmissionHandle final : public admission::PassEngine {
 public:
  explicit AdmissionHandle(Engine& engine) : e_(engine) {}

  Result<void> quotaAllows(const Operation& op, const Placement& placement) const override {
    return e_.checkQuota(op.tenant, 0, e_.holdingOf(placement.devices));
  }
  Result<void> hostAllows(const Placement& placement) const override {
    SY_TRY(e_.hostPolicy(placement.hostId));
    return {};
  }
  std::optional<std::string> delaysHead(const Operation& op, const Placement& placement) const override {
    return e_.delaysHead(placement, op.queued->leaseSeconds, op.tenant, op.queued->priority);
  }
  std::optional<admission::Promise> preemptFor(const Operation& head, const std::string& why, const VictimFilter& mayTake) override {
    if (const Preemption* p = e_.preemptions_.current()) {
      // Its victims are on notice or going: what they free is the head's. Another head's preemption: none now.
      if (p->head != head.id) return std::nullopt;
      return admission::Promise{{head.id, p->decomposeAt, p->placement}, std::nullopt};
    }
    if (!e_.planPreemption(head, mayTake)) return std::nullopt;
    const Preemption& p = *e_.preemptions_.current();
    // The head's tenant sees which of its own systems go; another tenant's only as a count (issue 58, N4).
    std::vector<std::string> own;
    std::size_t others = 0;
    for (const auto& v : p.victims)
      if (const System* s = e_.state_->system(v); s && s->tenant == head.tenant) own.push_back(v);
      else ++others;
    if (others > 0) own.push_back(fmt::format("{} system{} of other tenants", others, others == 1 ? "" : "s"));
    return admission::Promise{{head.id, p.decomposeAt, p.placement},
                              fmt::format("{}; preempting {} at {}", why, fmt::join(own, ", "), formatTimestamp(p.decomposeAt))};
  }
  std::optional<admission::Promise> defragmentFor(const Operation& head, const std::string& why) override { return e_.defragmentFor(head, why); }
  admission::Promise leaseShadow(const Operation& head) override { return {e_.leaseShadowOf(head), std::nullopt}; }
  PlacementDecision place(const Operation& op) override { return e_.placeQueued(op); }
  Result<Operation> admit(const Operation& op, const Placement& placement) override {
    Operation admitting = op;  // a copy: `op` is the queue's, which admission takes it out of
    return e_.admit(admitting, placement);
  }

 private:
  Engine& e_;
};

admission::TenantShares Engine::sharesOf(const RecentUse::Charges& used, const std::string& alsoTenant) const {
  std::vector<std::string> tenants{alsoTenant};
  for (const auto& [id, op] : queue_.waiting()) tenants.push_back(op.tenant);
  for (const auto& [tenant, gpus] : used) tenants.push_back(tenant);
  for (const auto& [tenant, quota] : options_.quotas)
    if (quota.share) tenants.push_back(tenant);
  return admission::TenantShares(tenants, used, [&](std::string_view tenant) {
    auto quota = options_.quotas.find(tenant);
    return quota == options_.quotas.end() || !quota->second.share ? 1.0 : *quota->second.share;
  });
}

void Engine::admitQueued() {
  queue_.clearDirty();
  if (queue_.empty()) {
    queue_.forgetPass();
    return;
  }
  if (!lifecycle_.accepting() || standby_.on()) return;
  const auto started = std::chrono::steady_clock::now();

  // Fair share: each tenant's GPUs held now plus what it held recently (decayed GPU-seconds over the half-life,
  // in GPUs), per unit of its share; the fair line over every tenant that waits, holds, remembers use or has a share.
  const admission::TenantShares shares = sharesOf(recentUse_.pass(heldGpusByTenant(), clock_.now()));
  const std::vector<admission::Admittable> order = admission::admissionOrder(admission_->queueSort, queue_, shares);
  std::vector<OperationId> ids;
  ids.reserve(order.size());
  for (const admission::Admittable& a : order) ids.push_back(a.id);

  queue_.beginPass();
  // A preemption whose request was admitted or left the queue is over (victims not yet decomposed keep running).
  preemptions_.endIfHeadLeft([this](const OperationId& id) { return queue_.contains(id); });
  AdmissionHandle handle(*this);
  admission::Pass pass{shares, false, {}};
  const admission::PassOutcome outcome = admission::runPass(*admission_, order, queue_, pass, handle);
  if (outcome.halted) return;  // the store failed: the engine has halted
  preemptions_.endIfHeadLeft([this](const OperationId& id) { return queue_.contains(id); });
  queue_.endPass(ids);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options_.metrics) options_.metrics->queuePassSeconds.observe({}, seconds);
  if (outcome.admitted > 0)
    spdlog::info("queue: admitted {} request(s), {} waiting ({:.1f} ms)", outcome.admitted, queue_.size(), seconds * 1e3);
}

Result<Operation> Engine::dropQueued(const Acceptance* a, const OperationId& which, const std::string& why, const std::string& eventType, const std::string& actor) {
  const OperationId id = which;  // a copy: `which` may be the queued system's own field, gone once it is dropped
  const Operation* queued = queue_.find(id);
  if (queued == nullptr) return fail(Code::kNotFound, fmt::format("no queued request '{}' (see `yardctl queue`)", id));
  Operation op = *queued;
  op.state = OperationState::kFailed;
  op.error = why;
  op.updatedAt = clock_.now();
  Mutation m;
  if (const System* s = state_->system(op.systemId)) {
    System dropped = *s;
    dropped.state = SystemState::kFailed;
    dropped.activeOperation.clear();
    dropped.updatedAt = op.updatedAt;
    m.writes.emplace_back(PutSystem{dropped});
  }
  m.writes.emplace_back(PutOperation{op, false, {}});
  auditInto(a, m, op.tenant, op.id, why);
  m.writes.emplace_back(PutAuditOutcome{op.id, eventType == "queue.cancelled" ? "cancelled" : "failed", op.updatedAt});
  m.events.push_back(operationEvent(eventType, op, fmt::format("compose {} left the queue: {}", op.id, why), actor));
  for (auto& e : m.events) e.tenant = op.tenant;
  SY_TRY(persist(m));
  if (const System* s = state_->system(op.systemId)) {
    System dropped = *s;
    dropped.state = SystemState::kFailed;
    state_->putSystem(dropped);
  }
  queue_.remove(id);
  if (options_.metrics)
    options_.metrics->queueWaitSeconds.observe({op.queued->priorityClass, "left"},
                                               static_cast<double>(op.updatedAt - op.queued->enqueuedAt) / 1e9);
  spdlog::info("{} left the queue: {}", op.id, why);
  completeWaiters(id, op);
  queue_.markDirty();  // it may have been the head: what waited behind it may go now
  return op;
}

Result<void> EngineCore::setQuotas(TenantQuotas quotas) {
  if (!inTask()) return answerFromTask("set quotas", [&](EngineCore& core) { return core.setQuotas(std::move(quotas)); });
  engine_.options_.quotas = std::move(quotas);
  engine_.queue_.markDirty();  // new shares may change the order; a raised quota may let a request in
  engine_.idle_.policiesChanged();  // and the reclaim policies shown with idle GPUs may have changed: shown anew
  return {};
}

Result<Operation> EngineCore::cancelQueued(const Caller& caller, const std::string& idOrName) {
  if (!inTask()) return answerFromTask("cancel", [&](EngineCore& core) { return core.cancelQueued(caller, idOrName); });
  return engine_.audited(caller, "cancel", idOrName, {}, {}, [&](const Engine::Acceptance& a) -> Result<Operation> {
    SY_TRY(engine_.checkAccepting());
    OperationId id;
    if (engine_.queue_.contains(idOrName)) {
      id = idOrName;
    } else if (const System* s = engine_.state_->findSystem(idOrName); s && s->state == SystemState::kQueued) {
      id = s->activeOperation;
    }
    const Operation* queued = engine_.queue_.find(id);
    if (queued == nullptr || !maySee(caller, queued->tenant))
      return fail(Code::kNotFound, fmt::format("no queued request '{}' (see `yardctl queue`)", idOrName));
    SY_TRY(mayChange(caller, queued->tenant, "cancel"));
    return engine_.dropQueued(&a, id, fmt::format("cancelled by {}", caller.identity), "queue.cancelled", caller.identity);
  });
}

}  // namespace switchyard

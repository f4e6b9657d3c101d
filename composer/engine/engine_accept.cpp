// Accepting work: validate a request, let the packing core place it, and record the operation with its
// reservation in one transaction before anything touches the switch. Runs on the control thread.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <regex>
#include <set>
#include <tuple>

#include "composer/engine/engine.h"
#include "composer/model/label_selector.h"
#include "composer/model/fail_points.h"
#include "composer/packing/gpu_shares.h"

namespace switchyard {

Result<void> Engine::checkAccepting() const {
  if (standby_.on()) {
    const std::string leader = standbyLeader();
    return fail(Code::kUnavailable, leader.empty() ? "this yardd is a standby and no yardd leads right now; retry shortly"
                                                   : fmt::format("this yardd is a standby; send changes to the leader at {}", leader));
  }
  return lifecycle_.refusal();
}

TenantHolding Engine::usageOf(std::string_view tenant, std::string_view applying) const {
  TenantHolding usage;
  auto counts = [&](const DeviceId& id) { return state_->index().device(id) != nullptr; };
  // What the tenant's systems hold, whatever the device's state (one quarantined by a failed undo is still
  // theirs), and what their running operations have reserved.
  std::set<DeviceId> held;
  std::set<OperationId> running;
  for (const auto& [id, s] : state_->systems()) {
    if (s.tenant != tenant) continue;
    ++usage.systems;
    for (const auto& b : s.bindings)
      if (counts(b.deviceId)) held.insert(b.deviceId);
    if (!s.activeOperation.empty()) running.insert(s.activeOperation);
  }
  for (const auto& [device, h] : state_->assignments())
    if (h.first.allocation == DeviceAllocation::kReserved && running.contains(h.first.owner) && counts(device)) held.insert(device);
  // Its reservations hold devices nobody else may take: as if composed (found by the simulation, thirty-fifth
  // session: a tenant reserved 3 GPUs, then composed 4 more past its quota of 6).
  for (const HeldSystem* s : reservations_.heldFor(tenant, applying)) {
    ++usage.systems;
    for (const auto& placed : s->placement.devices)
      if (counts(placed.deviceId)) held.insert(placed.deviceId);
  }
  for (const auto& id : held) usage.held.add(*state_->index().device(id));
  return usage;
}

Result<void> Engine::checkQuota(std::string_view tenant, int newSystems, const HeldDevices& more, std::string_view applying) const {
  auto quota = options_.quotas.find(tenant);
  if (quota == options_.quotas.end()) return {};
  return checkTenantQuota(tenant, quota->second, usageOf(tenant, applying), newSystems, more);
}

HeldDevices Engine::holdingOf(const std::vector<PlacedDevice>& devices) const {
  HeldDevices h;
  for (const auto& placed : devices)
    if (const Device* d = state_->index().device(placed.deviceId)) h.add(*d);
  return h;
}

Operation Engine::newOperation(OperationKind kind, const System& system, const Acceptance& a) {
  Operation op;
  op.requestedBy = a.caller();
  op.id = numbers_.nextOperation();
  op.kind = kind;
  op.systemId = system.id;
  op.hostId = system.hostId;
  op.tenant = system.tenant;
  op.requestId = a.requestId;
  op.createdAt = op.updatedAt = clock_.now();
  return op;
}

void Engine::auditInto(const Acceptance* a, Mutation& m, const std::string& tenant, const OperationId& operation, const std::string& message) {
  if (a == nullptr) return;
  AuditRecord record = a->audit;
  record.sequence = numbers_.nextAudit();
  record.tenant = tenant;
  record.operationId = operation;
  record.message = message;
  m.writes.emplace_back(PutAudit{std::move(record)});
}

void Engine::crashPointAfterWrite(const char* point) {
  if (!failpoints::armed()) return;
  (void)writeStaged();  // the point is after the write, which group commit may hold until the commit point
  failpoints::crashPoint(point);
}

Result<Operation> Engine::launch(const Acceptance& a, Operation op, const std::string& tenant, Mutation mutation,
                                 const std::function<void()>& applyInMemory) {
  mutation.writes.emplace_back(PutOperation{op});
  auditInto(&a, mutation, tenant, op.id, op.explanation);
  mutation.events.push_back(operationEvent("operation.accepted", op,
                                      fmt::format("{} {} accepted for {} on {} (asked by {})", toString(op.kind), op.id, op.systemId,
                                                  op.hostId, op.requestedBy.identity),
                                      op.requestedBy.identity));
  for (auto& e : mutation.events) e.tenant = tenant;  // the operation is not in memory yet: tenantOf() cannot tell
  SY_TRY(persist(mutation));
  crashPointAfterWrite("accept.after-persist");
  applyInMemory();
  spdlog::info("{} {} accepted for {}: system {} on {}{}", op.id, toString(op.kind), op.requestedBy.identity, op.systemId, op.hostId,
               op.explanation.empty() ? "" : " (" + op.explanation + ")");
  Operation snapshot = op;
  runner_->run(std::move(op));
  return snapshot;
}

namespace {

std::string describeDevices(const std::vector<Binding>& bindings) {
  std::vector<DeviceId> ids;
  for (const auto& b : bindings) ids.push_back(b.deviceId);
  return fmt::format("{}", fmt::join(ids, ", "));
}

// Devices a request names that are quarantined: said as such, with why and the way out, rather than "busy".
Result<void> noneQuarantined(const PoolState& state, const PlacementRequest& request) {
  for (const auto& d : request.devices)
    if (const DeviceAssignment held = state.assignment(d); held.allocation == DeviceAllocation::kQuarantined)
      return fail(Code::kFailedPrecondition, fmt::format("device '{}' is quarantined ({}); an operator returns it with `yardctl devices release {}`",
                                                         d, held.owner, d));
  return {};
}

bool printableAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7F; });
}

}  // namespace

Result<void> Engine::validateRequestStrings(const ComposeRequest& request) {
  // Checked at acceptance, for every adapter: what is stored and shown later (listings, the audit, labels
  // in ListSystems) has bounded size and no control characters.
  static const std::regex kTenant("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
  const std::string& tenant = request.placement.tenant;
  if (tenant.empty()) return fail(Code::kInvalidArgument, "tenant must not be empty");
  if (!std::regex_match(tenant, kTenant))
    return fail(Code::kInvalidArgument, "tenant: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit");
  if (request.labels.size() > 64) return fail(Code::kInvalidArgument, fmt::format("{} labels: a system has at most 64", request.labels.size()));
  for (const auto& [key, value] : request.labels) {
    if (key.empty()) return fail(Code::kInvalidArgument, "label keys must not be empty");
    if (!isLabelKey(key)) return fail(Code::kInvalidArgument, fmt::format("label keys: {}", kLabelKeyRule));
    if (value.size() > 256 || !printableAscii(value))
      return fail(Code::kInvalidArgument, fmt::format("label {}: values are at most 256 printable ASCII characters", key));
  }
  if (request.requestId.size() > 128 || !printableAscii(request.requestId))
    return fail(Code::kInvalidArgument, "request id: at most 128 printable ASCII characters");
  SY_TRY(reclaimPolicyOf(request.labels, {}));  // the idle-reclaim labels, when set, must say something it understands
  return {};
}

Result<void> Engine::validateName(const std::string& name) {
  static const std::regex kName("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
  if (!std::regex_match(name, kName))
    return fail(Code::kInvalidArgument,
                fmt::format("system name '{}' is invalid: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", name));
  // Commands take an id or a name, ids first: a name shaped like an id would name another system later.
  static const std::regex kIdShaped("(sys|op|rsv)-[0-9]+");
  if (std::regex_match(name, kIdShaped))
    return fail(Code::kInvalidArgument,
                fmt::format("system name '{}' looks like a yardd id (sys-N, op-N, rsv-N) and would be mistaken for one: choose another", name));
  return {};
}

namespace {

// reserve (done at acceptance), bind every device in one switch call, verify, host-admit when the host
// takes devices through its host side, commit. An attach whose MIG instances all fit on GPUs the system
// already has binds nothing: reserve, commit.
// The host makes the operation's MIG instances in host-admit, so an attach of instances alone has one too.
std::vector<Step> bindSteps(const std::vector<PlacedDevice>& devices, HostPolicy policy, bool instances) {
  std::vector<Binding> bindings;
  for (const auto& d : devices) bindings.push_back({d.deviceId, d.upstreamPortId});
  std::vector<Step> steps{makeStep(step::kReserve)};
  steps.front().state = StepState::kDone;
  if (!bindings.empty()) {
    steps.push_back(makeStep(step::kBind, bindings));
    steps.push_back(makeStep(step::kVerify));
  }
  if (hasHostSteps(policy) && (!bindings.empty() || instances)) steps.push_back(makeStep(step::kHostAdmit, std::move(bindings)));
  steps.push_back(makeStep(step::kCommit));
  return steps;
}

// host-release when the host has a host side (it also destroys leaving MIG instances), unbind the devices
// in one switch call (none: no call), release.
std::vector<Step> unbindSteps(std::vector<Binding> bindings, HostPolicy policy, bool instances) {
  std::vector<Step> steps;
  if (hasHostSteps(policy) && (!bindings.empty() || instances)) steps.push_back(makeStep(step::kHostRelease, bindings));
  if (!bindings.empty()) steps.push_back(makeStep(step::kUnbind, std::move(bindings)));
  steps.push_back(makeStep(step::kRelease));
  return steps;
}

}  // namespace

Result<Operation> Engine::acceptCompose(const Acceptance& a, const ComposeRequest& request) {
  const Caller& caller = a.caller();
  SY_TRY(checkAccepting());
  expireReservations();  // what an expired reservation held (devices, a name) is free for this request
  SY_TRY(validateName(request.name));
  SY_TRY(validateRequestStrings(request));
  if (const System* existing = state_->findSystem(request.name))
    return fail(Code::kAlreadyExists, maySee(caller, existing->tenant)
                                          ? fmt::format("a system named '{}' already exists ({})", request.name, existing->id)
                                          : fmt::format("the name '{}' is taken", request.name));  // another tenant's: no id
  if (const Reservation* r = reservations_.holdingName(request.name))
    return fail(Code::kAlreadyExists, maySee(caller, r->tenant) ? fmt::format("reservation {} holds the name '{}'", r->id, request.name)
                                                                : fmt::format("the name '{}' is taken", request.name));
  SY_TRY(mayChange(caller, request.placement.tenant, "compose"));
  SY_TRY(checkQuota(request.placement.tenant, 1, {}));

  // A share on a new system takes a fresh GPU; its size is share demand either way.
  const int shareMilli = request.placement.gpuShareMilli;
  if (shareMilli != 0) {
    SY_TRY(validateShareRequest(request.placement));
    shareDemand_.observe(shareMilli);
  }
  const PlacementRequest wanted = shareMilli != 0 ? freshGpuForShare(request.placement) : request.placement;
  // Checked before placing: a bad class, timeout or lease is refused whether it fits or not.
  SY_ASSIGN(const QueuedRequest asked, queuedRequestOf(request));
  SY_TRY(noneQuarantined(*state_, wanted));
  PlacementDecision decision = place(*placement_, state_->pool(), wanted, &state_->placementIndex());
  // A well-formed request is demand whether it fits or not; a malformed one (unknown model, bad count) is not.
  const std::optional<DemandShape> demand = demandShapeOf(wanted);
  if (!decision.placement) {
    if (demand && decision.error->code == Code::kResourceExhausted) {
      recordDemand(*demand);
      if (request.queue) return acceptQueued(a, request, shortReason(decision.error->message, unexplainedHosts(decision)));
    }
    return fail(*decision.error);
  }
  const Placement& placement = *decision.placement;
  // What the queue's head has been promised is not taken by a request that arrives after it (backfill).
  if (auto why = delaysHead(placement, asked.leaseSeconds, request.placement.tenant, asked.priority)) {
    if (request.queue) return acceptQueued(a, request, *why);
    return fail(Code::kResourceExhausted, fmt::format("{}; add --queue to wait your turn", *why));
  }
  SY_TRY(checkQuota(request.placement.tenant, 1, holdingOf(placement.devices)));
  SY_ASSIGN(const HostPolicy policy, hostPolicy(placement.hostId));

  System system;
  system.id = numbers_.nextSystem();
  system.name = request.name;
  system.hostId = placement.hostId;
  system.tenant = request.placement.tenant;
  system.labels = request.labels;
  system.state = SystemState::kComposing;
  system.createdAt = system.updatedAt = clock_.now();
  if (asked.leaseSeconds > 0) system.leaseExpiresAt = system.createdAt + asked.leaseSeconds * 1'000'000'000LL;
  system.priorityClass = asked.priorityClass;
  system.asked = asked;
  Operation op = newOperation(OperationKind::kCompose, system, a);
  system.activeOperation = op.id;
  op.explanation = placement.explanation;
  op.gpuInstances = placement.gpuInstances;
  if (shareMilli != 0) {
    op.gpuShares.push_back({1, placement.devices.front().deviceId, shareMilli});
    op.explanation = fmt::format("share {} on a fresh GPU: {}", switchyard::describe(op.gpuShares.front()), placement.explanation);
  }
  op.steps = bindSteps(placement.devices, policy, !op.gpuInstances.empty());
  op.steps.front().finishedAt = op.createdAt;

  Mutation m;
  m.writes.emplace_back(PutSystem{system});
  std::vector<DeviceAssignment> reserved;
  for (const auto& d : placement.devices) {
    reserved.push_back({d.deviceId, DeviceAllocation::kReserved, op.id});
    m.writes.emplace_back(PutAssignment{reserved.back()});
  }
  if (demand) m.writes.emplace_back(PutDemand{*demand});
  return launch(a, std::move(op), system.tenant, std::move(m), [&] {
    numbers_.systemAdded();
    state_->putSystem(system);
    for (const auto& assignment : reserved) state_->assign(assignment, system.hostId);
    if (demand) state_->observeDemand(*demand);
  });
}

void Engine::recordDemand(const DemandShape& shape) {
  // Only what the packing core learns from, so the request's own answer stands; a failed write still halts
  // the engine (persist), as every failed store write does.
  Mutation m;
  m.writes.emplace_back(PutDemand{shape});
  if (auto r = persist(m); !r) spdlog::warn("cannot store a request's shape for the demand mix: {}", r.error().message);
  state_->observeDemand(shape);
}

namespace {

// The caller's system, idle. Another tenant's system is "no system" to a tenant, as in every listing.
Result<System> idleSystem(const PoolState& state, const std::string& idOrName, const Caller& caller, std::string_view what) {
  const System* s = state.findSystem(idOrName);
  if (!s || !maySee(caller, s->tenant)) return fail(Code::kNotFound, fmt::format("no system '{}' (see `yardctl systems`)", idOrName));
  SY_TRY(mayChange(caller, s->tenant, what));
  if (!s->activeOperation.empty())
    return fail(Code::kFailedPrecondition, fmt::format("system '{}' has operation {} in progress; wait for it with `yardctl ops wait {}`",
                                                       s->name, s->activeOperation, s->activeOperation));
  return *s;
}

}  // namespace

Result<HostPolicy> Engine::hostPolicy(const HostId& host) const {
  if (hosts_ == nullptr) return HostPolicy::kTrustFabric;
  const HostPolicy policy = hosts_->policy(host);
  if (policy == HostPolicy::kUnset)
    return fail(Code::kFailedPrecondition,
                fmt::format("host {} has no host-side policy: start yard-agent on it, or choose one for it with `yardd --host-policy "
                            "{}=trust-fabric`",
                            host, host));
  return policy;
}

Result<Operation> Engine::admit(Operation& op, const Placement& placement) {
  SY_ASSIGN(const HostPolicy policy, hostPolicy(placement.hostId));
  const System* queued = state_->system(op.systemId);
  if (queued == nullptr) return fail(Code::kInternal, fmt::format("{}: its queued system {} is gone", op.id, op.systemId));
  const Timestamp now = clock_.now();
  System system = *queued;
  system.hostId = placement.hostId;
  system.state = SystemState::kComposing;
  system.updatedAt = now;
  if (op.queued->leaseSeconds > 0) system.leaseExpiresAt = now + op.queued->leaseSeconds * 1'000'000'000LL;
  const double waited = static_cast<double>(now - op.queued->enqueuedAt) / 1e9;
  op.state = OperationState::kRunning;
  op.hostId = placement.hostId;
  op.updatedAt = now;
  op.explanation = fmt::format("admitted from the queue after {:.1f}s: {}", waited, placement.explanation);
  op.gpuInstances = placement.gpuInstances;
  if (op.queued->gpuShareMilli != 0) {
    op.gpuShares = {{1, placement.devices.front().deviceId, op.queued->gpuShareMilli}};
    shareDemand_.observe(op.queued->gpuShareMilli);
  }
  op.steps = bindSteps(placement.devices, policy, !op.gpuInstances.empty());
  op.steps.front().finishedAt = now;

  Mutation m;
  m.writes.emplace_back(PutSystem{system});
  std::vector<DeviceAssignment> reserved;
  for (const auto& d : placement.devices) {
    reserved.push_back({d.deviceId, DeviceAllocation::kReserved, op.id});
    m.writes.emplace_back(PutAssignment{reserved.back()});
  }
  m.writes.emplace_back(PutOperation{op});
  m.events.push_back(operationEvent("queue.admitted", op,
                               fmt::format("{} ({}) admitted after {:.1f}s in the queue: {}", system.name, describeShape(*op.queued), waited,
                                           placement.explanation),
                               op.requestedBy.identity));
  for (auto& e : m.events) e.tenant = op.tenant;
  SY_TRY(persist(m));
  crashPointAfterWrite("queue.after-admit");
  state_->putSystem(system);
  for (const auto& a : reserved) state_->assign(a, system.hostId);
  if (options_.metrics) options_.metrics->queueWaitSeconds.observe({op.queued->priorityClass, "admitted"}, waited);
  spdlog::info("{} admitted from the queue after {:.1f}s: system {} on {}", op.id, waited, system.name, system.hostId);
  queue_.remove(op.id);
  runner_->run(op);
  return op;
}

Result<Operation> Engine::acceptDecompose(const Acceptance& a, const std::string& idOrName, std::optional<QueuedRequest> requeue) {
  const Caller& caller = a.caller();
  SY_TRY(checkAccepting());
  // A queued system has nothing to take apart: decomposing it cancels its request.
  if (const System* s = state_->findSystem(idOrName); s && s->state == SystemState::kQueued && maySee(caller, s->tenant)) {
    SY_TRY(mayChange(caller, s->tenant, "decompose"));
    return dropQueued(&a, s->activeOperation, fmt::format("cancelled by {} (decompose of a queued system)", caller.identity), "queue.cancelled",
                      caller.identity);
  }
  SY_ASSIGN(System system, idleSystem(*state_, idOrName, caller, "decompose"));
  // Nothing of it is in the fabric (a store taken over by another fabric, a chassis gone for good): no unbind
  // could succeed, and the rollback would leave it as it is. Say what ends it instead.
  if (!system.bindings.empty() && std::none_of(system.bindings.begin(), system.bindings.end(),
                                               [&](const Binding& b) { return state_->index().device(b.deviceId) != nullptr; }))
    return fail(Code::kFailedPrecondition,
                fmt::format("the fabric reports none of {}'s {} device(s) ({}), so nothing can be unbound; if they are gone for good, an "
                            "admin forgets the system: `yardctl systems forget {}`",
                            system.name, system.bindings.size(), describeDevices(system.bindings), system.name));
  SY_ASSIGN(const HostPolicy policy, hostPolicy(system.hostId));
  Operation op = newOperation(OperationKind::kDecompose, system, a);
  op.gpuInstances = system.gpuInstances;  // all of them leave, with their GPUs
  op.steps = unbindSteps(system.bindings, policy, !op.gpuInstances.empty());
  op.queued = std::move(requeue);
  system.state = SystemState::kDecomposing;
  system.activeOperation = op.id;
  system.updatedAt = op.createdAt;
  Mutation m;
  m.writes.emplace_back(PutSystem{system});
  return launch(a, std::move(op), system.tenant, std::move(m), [&] { state_->putSystem(system); });
}

Result<Operation> Engine::acceptAttach(const Acceptance& a, const AttachRequest& request, std::vector<DeviceId> replaces) {
  const Caller& caller = a.caller();
  SY_TRY(checkAccepting());
  SY_ASSIGN(System system, idleSystem(*state_, request.system, caller, "attach"));
  SY_ASSIGN(const HostPolicy policy, hostPolicy(system.hostId));
  PlacementRequest placement = request.placement;
  placement.host = system.hostId;
  placement.hostMayHaveSystem = true;
  placement.boundInstances = system.gpuInstances;
  // A share goes on one of the system's share GPUs when one has room; else it needs a fresh GPU.
  const int shareMilli = placement.gpuShareMilli;
  std::optional<SharePlan> sharePlan;
  if (shareMilli != 0) {
    SY_TRY(validateShareRequest(placement));
    shareDemand_.observe(shareMilli);
    sharePlan = planGpuShare(system.gpuShares, shareMilli, shareDemand_.mix());
    placement = freshGpuForShare(placement);
  }
  PlacementDecision decision;
  if (sharePlan && sharePlan->onBound)
    decision.placement = Placement{system.hostId, {}, {}, sharePlan->explanation};
  else {
    SY_TRY(noneQuarantined(*state_, placement));
    decision = place(*placement_, state_->pool(), placement, &state_->placementIndex());
  }
  if (!decision.placement) return fail(*decision.error);
  SY_TRY(checkQuota(system.tenant, 0, holdingOf(decision.placement->devices)));

  Operation op = newOperation(OperationKind::kAttach, system, a);
  op.explanation = decision.placement->explanation;
  op.gpuInstances = decision.placement->gpuInstances;
  if (sharePlan) {
    const DeviceId device = sharePlan->onBound ? *sharePlan->onBound : decision.placement->devices.front().deviceId;
    op.gpuShares.push_back({nextShareId(system.gpuShares), device, shareMilli});
    if (!sharePlan->onBound) op.explanation = fmt::format("{}; {}", sharePlan->explanation, decision.placement->explanation);
  }
  op.steps = bindSteps(decision.placement->devices, policy, !op.gpuInstances.empty());
  op.steps.front().finishedAt = op.createdAt;
  op.replaces = std::move(replaces);
  system.activeOperation = op.id;
  system.updatedAt = op.createdAt;
  Mutation m;
  m.writes.emplace_back(PutSystem{system});
  std::vector<DeviceAssignment> reserved;
  for (const auto& d : decision.placement->devices) {
    reserved.push_back({d.deviceId, DeviceAllocation::kReserved, op.id});
    m.writes.emplace_back(PutAssignment{reserved.back()});
  }
  return launch(a, std::move(op), system.tenant, std::move(m), [&] {
    state_->putSystem(system);
    for (const auto& assignment : reserved) state_->assign(assignment, system.hostId);
  });
}

Result<Operation> Engine::acceptDetach(const Acceptance& a, const DetachRequest& request) {
  const Caller& caller = a.caller();
  SY_TRY(checkAccepting());
  SY_ASSIGN(System system, idleSystem(*state_, request.system, caller, "detach"));
  if (request.devices.empty() && request.gpuInstances.empty() && request.gpuShares.empty())
    return fail(Code::kInvalidArgument, "name at least one device, MIG instance or GPU share to detach");
  SY_ASSIGN(const HostPolicy policy, hostPolicy(system.hostId));
  Operation op = newOperation(OperationKind::kDetach, system, a);
  std::set<DeviceId> unbound;
  for (const auto& device : request.devices) {
    if (!unbound.insert(device).second) return fail(Code::kInvalidArgument, fmt::format("device '{}' is listed twice", device));
    if (std::none_of(system.bindings.begin(), system.bindings.end(), [&](const Binding& b) { return b.deviceId == device; })) {
      if (!state_->index().device(device)) return fail(Code::kNotFound, fmt::format("no device '{}'", device));
      return fail(Code::kFailedPrecondition, fmt::format("device '{}' is not in system '{}'", device, system.name));
    }
    for (const auto& i : system.gpuInstances)  // its MIG instances and shares go with it
      if (i.deviceId == device) op.gpuInstances.push_back(i);
    for (const auto& share : system.gpuShares)
      if (share.deviceId == device) op.gpuShares.push_back(share);
  }
  for (int id : request.gpuShares) {
    auto it = std::find_if(system.gpuShares.begin(), system.gpuShares.end(), [&](const GpuShare& s) { return s.id == id; });
    if (it == system.gpuShares.end())
      return fail(Code::kNotFound, fmt::format("system '{}' has no GPU share #{} (see `yardctl systems {}`)", system.name, id, system.name));
    if (std::find(op.gpuShares.begin(), op.gpuShares.end(), *it) != op.gpuShares.end())
      return fail(Code::kInvalidArgument, fmt::format("GPU share #{} is listed twice (or its device is)", id));
    op.gpuShares.push_back(*it);
  }
  // A GPU whose last share leaves goes back to the pool with it.
  for (const auto& share : op.gpuShares) {
    const bool keepsOthers = std::any_of(system.gpuShares.begin(), system.gpuShares.end(), [&](const GpuShare& t) {
      return t.deviceId == share.deviceId && std::find(op.gpuShares.begin(), op.gpuShares.end(), t) == op.gpuShares.end();
    });
    if (!keepsOthers) unbound.insert(share.deviceId);
  }
  for (const auto& ref : request.gpuInstances) {
    auto it = std::find_if(system.gpuInstances.begin(), system.gpuInstances.end(),
                           [&](const GpuInstance& i) { return i.deviceId == ref.deviceId && i.start == ref.start; });
    if (it == system.gpuInstances.end())
      return fail(Code::kNotFound, fmt::format("system '{}' has no MIG instance at {}@{} (see `yardctl systems {}`)", system.name,
                                               ref.deviceId, ref.start, system.name));
    if (unbound.contains(ref.deviceId) || std::find(op.gpuInstances.begin(), op.gpuInstances.end(), *it) != op.gpuInstances.end())
      return fail(Code::kInvalidArgument, fmt::format("MIG instance {}@{} is listed twice", ref.deviceId, ref.start));
    op.gpuInstances.push_back(*it);
  }
  // A GPU whose last instance leaves goes back to the pool with them.
  for (const auto& i : op.gpuInstances) {
    const bool keepsOthers = std::any_of(system.gpuInstances.begin(), system.gpuInstances.end(), [&](const GpuInstance& j) {
      return j.deviceId == i.deviceId && std::find(op.gpuInstances.begin(), op.gpuInstances.end(), j) == op.gpuInstances.end();
    });
    if (!keepsOthers) unbound.insert(i.deviceId);
  }
  std::vector<Binding> leaving;
  for (const auto& b : system.bindings)
    if (unbound.contains(b.deviceId)) leaving.push_back(b);
  op.steps = unbindSteps(std::move(leaving), policy, !op.gpuInstances.empty());
  system.activeOperation = op.id;
  system.updatedAt = op.createdAt;
  Mutation m;
  m.writes.emplace_back(PutSystem{system});
  return launch(a, std::move(op), system.tenant, std::move(m), [&] { state_->putSystem(system); });
}

}  // namespace switchyard

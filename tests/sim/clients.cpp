#include "tests/sim/clients.h"

#include <fmt/format.h>

#include <variant>

#include "composer/engine/engine.h"
#include "composer/engine/engine_client.h"

namespace switchyard::sim {

using namespace std::chrono_literals;

std::vector<System> liveSystems(Engine& engine) {
  auto s = engine.reads().listSystems();
  return s ? *s : std::vector<System>{};
}

Clients::Clients(Engine& engine, bool migCapable, SimReport& report, Draw draw, Note note)
    : engine_(engine), migCapable_(migCapable), report_(report), draw_(std::move(draw)), note_(std::move(note)) {}

std::vector<std::string> Clients::takeCrossings() {
  std::vector<std::string> out;
  out.swap(crossings_);
  return out;
}

void Clients::submit() {
  const Caller& caller = kCallers[pick(4)];
  const auto live = liveSystems(engine_);
  const int kind = pick(100);
  std::function<Result<Operation>(EngineCore&)> call;
  std::string what;
  bool mustRefuse = false;
  if (kind >= 99) return useReservation(caller);
  if (kind >= 97) return reserve(caller);
  if (kind >= 95) return composeTogether(caller);
  if (kind < 40 || live.empty()) {
    ComposeRequest r{fmt::format("s{}", ++names_), {}, {}};
    r.placement.gpuCount = 1 + pick(4);
    // Now and then MIG instances instead (on the simulated switch: the Switchtec chips' GPUs are not MIG-capable).
    const bool mig = migCapable_ && pick(6) == 0;
    if (mig) {
      r.placement.gpuCount = 0;
      r.placement.gpuInstances = pick(2) ? std::vector<MigProfile>{MigProfile::k3g, MigProfile::k3g} : std::vector<MigProfile>{MigProfile::k2g};
    }
    // Tenants compose for their own tenant, now and then for the other one (which must be refused).
    r.placement.tenant = caller.role == Role::kTenant ? (pick(10) == 0 ? std::string("team-b") : caller.tenant)
                                                      : (pick(2) ? std::string("team-a") : std::string("team-b"));
    // Now and then it may wait in the queue, or carry a lease that a later expireDeadlines ends.
    r.queue = pick(4) == 0;
    if (pick(5) == 0) r.lease = std::chrono::seconds(1 + pick(120));
    // Some are spot work (preemptible), some production (which queues and preempts spot once its grace is over).
    if (const int cls = pick(8); cls == 0) r.priorityClass = "spot";
    else if (cls == 1) r.priorityClass = "production", r.queue = true;
    what = fmt::format("{} composes {} ({}, {}{}{}{})", caller.identity, r.name,
                       mig ? fmt::format("{} MIG instance(s)", r.placement.gpuInstances.size()) : fmt::format("{} GPUs", r.placement.gpuCount),
                       r.placement.tenant, r.priorityClass.empty() ? "" : ", " + r.priorityClass,
                       r.queue ? ", queue" : "", r.lease.count() > 0 ? fmt::format(", lease {}s", r.lease.count() / 1000) : "");
    mustRefuse = caller.role == Role::kViewer || (caller.role == Role::kTenant && r.placement.tenant != caller.tenant);
    call = [caller, r](EngineCore& core) { return core.compose(caller, r); };
  } else {
    const System& target = live[static_cast<std::size_t>(pick(static_cast<int>(live.size())))];
    if (kind >= 90) return renewLease(caller, target);
    if (kind >= 85) {
      what = fmt::format("{} cancels {}", caller.identity, target.name);
      call = [caller, name = target.name](EngineCore& core) { return core.cancelQueued(caller, name); };
    } else if (kind < 60) {
      what = fmt::format("{} decomposes {}", caller.identity, target.name);
      call = [caller, name = target.name](EngineCore& core) { return core.decompose(caller, name); };
    } else if (kind < 80) {
      AttachRequest r{target.name, {}};
      r.placement.gpuCount = 1 + pick(2);
      what = fmt::format("{} attaches {} GPU(s) to {}", caller.identity, r.placement.gpuCount, target.name);
      call = [caller, r](EngineCore& core) { return core.attach(caller, r); };
    } else {
      if (target.bindings.empty()) return submit();
      DetachRequest r{target.name, {target.bindings[static_cast<std::size_t>(pick(static_cast<int>(target.bindings.size())))].deviceId}, {}, {}};
      what = fmt::format("{} detaches {} from {}", caller.identity, r.devices[0], target.name);
      call = [caller, r](EngineCore& core) { return core.detach(caller, r); };
    }
    mustRefuse = (caller.role == Role::kTenant && target.tenant != caller.tenant) || caller.role == Role::kViewer;
  }
  note(what);
  ++requests_;
  // As the adapters call it; answered on the control thread, where the request was decided.
  EngineClient(engine_).run<Operation>(std::move(call), [this, what, mustRefuse](Result<Operation> r) { answered(what, mustRefuse, std::move(r)); });
}

// Two systems of one tenant (the caller's, or either for the operator and the viewer), 1 to `maxGpus` GPUs each.
std::vector<ComposeRequest> Clients::twoSystems(const Caller& caller, int maxGpus) {
  std::vector<ComposeRequest> both;
  const std::string tenant = caller.role == Role::kTenant ? caller.tenant : std::string(pick(2) ? "team-a" : "team-b");
  for (int i = 0; i < 2; ++i) {
    ComposeRequest r{fmt::format("s{}", ++names_), {}, {}};
    r.placement.gpuCount = 1 + pick(maxGpus);
    r.placement.tenant = tenant;
    both.push_back(std::move(r));
  }
  return both;
}

// Two systems placed together, accepted all or none (a manifest; engine_reservations.cpp), each then followed
// like any other operation.
void Clients::composeTogether(const Caller& caller) {
  const std::vector<ComposeRequest> both = twoSystems(caller, 3);
  const std::string& tenant = both[0].placement.tenant;
  const std::string what = fmt::format("{} composes {} and {} together ({}, {} + {} GPUs)", caller.identity, both[0].name, both[1].name,
                                       tenant, both[0].placement.gpuCount, both[1].placement.gpuCount);
  const bool mustRefuse = caller.role == Role::kViewer;
  note(what);
  ++requests_;
  EngineClient(engine_).run<std::vector<Operation>>([caller, both](EngineCore& core) { return core.composeTogether(caller, both); },
                                                     [this, what, mustRefuse](Result<std::vector<Operation>> r) { answeredAll(what, mustRefuse, std::move(r)); });
}

// Two systems' placements held for a while (PreviewReserve): the GPUs are held, in no system, until the
// reservation is composed, released, or its time passes (expireDeadlines).
void Clients::reserve(const Caller& caller) {
  const std::vector<ComposeRequest> both = twoSystems(caller, 2);
  const std::string& tenant = both[0].placement.tenant;
  const auto lifetime = std::chrono::seconds(1 + pick(120));
  const std::string what = fmt::format("{} reserves {} and {} for {}s ({})", caller.identity, both[0].name, both[1].name, lifetime.count(), tenant);
  const bool mustRefuse = caller.role == Role::kViewer;
  note(what);
  ++requests_;
  EngineClient(engine_).run<Reservation>([caller, both, lifetime](EngineCore& core) { return core.reserve(caller, both, lifetime); },
                                          [this, what, mustRefuse](Result<Reservation> r) {
                                            answers_.push_back(fmt::format("{}: {}", what, r ? r->id : std::string(codeName(r.error().code))));
                                            refusedAsSuch(what, mustRefuse, r ? std::optional<Error>{} : r.error());
                                            --requests_;
                                          });
}

// A reservation composed (its systems' operations followed like any other) or released, by its tenant's
// clients or the operator; others must be refused.
void Clients::useReservation(const Caller& caller) {
  auto held = engine_.blocking().listReservations();
  if (!held || held->empty()) return;
  const Reservation& r = (*held)[static_cast<std::size_t>(pick(static_cast<int>(held->size())))];
  const bool compose = pick(3) != 0;
  const std::string what = fmt::format("{} {} {}", caller.identity, compose ? "composes" : "releases", r.id);
  const bool mustRefuse = caller.role == Role::kViewer || (caller.role == Role::kTenant && caller.tenant != r.tenant);
  note(what);
  ++requests_;
  if (compose)
    return EngineClient(engine_).run<std::vector<Operation>>(
        [caller, id = r.id](EngineCore& core) { return core.composeReserved(caller, id); },
        [this, what, mustRefuse](Result<std::vector<Operation>> ops) { answeredAll(what, mustRefuse, std::move(ops)); });
  EngineClient(engine_).run<std::monostate>(
      [caller, id = r.id](EngineCore& core) -> Result<std::monostate> {
        SY_TRY(core.releaseReservation(caller, id));
        return std::monostate{};
      },
      [this, what, mustRefuse](Result<std::monostate> done) {
        answers_.push_back(fmt::format("{}: {}", what, done ? "released" : std::string(codeName(done.error().code))));
        refusedAsSuch(what, mustRefuse, done ? std::optional<Error>{} : done.error());
        --requests_;
      });
}

// Invariant 6 for an answer that is not an operation.
void Clients::refusedAsSuch(const std::string& what, bool mustRefuse, const std::optional<Error>& refused) {
  if (!mustRefuse) return;
  if (!refused) crossings_.push_back(fmt::format("6: '{}' was accepted though the caller may not", what));
  else if (refused->code != Code::kNotFound && refused->code != Code::kPermissionDenied)
    crossings_.push_back(fmt::format("6: '{}' was refused with {}, not NOT_FOUND or PERMISSION_DENIED", what, codeName(refused->code)));
}

// A lease renewed (or a queued system's refused): a lease that ends later, so a later expireDeadlines passes it by.
void Clients::renewLease(const Caller& caller, const System& target) {
  const std::string what = fmt::format("{} renews the lease of {}", caller.identity, target.name);
  const bool mustRefuse = (caller.role == Role::kTenant && target.tenant != caller.tenant) || caller.role == Role::kViewer;
  const auto lease = std::chrono::seconds(1 + pick(120));
  note(what);
  ++requests_;
  EngineClient(engine_).run<System>([caller, name = target.name, lease](EngineCore& core) { return core.renewLease(caller, name, lease); },
                                     [this, what, mustRefuse](Result<System> r) {
                                       if (r) answers_.push_back(fmt::format("{}: until {}", what, r->leaseExpiresAt));
                                       else answers_.push_back(fmt::format("{}: refused {}", what, codeName(r.error().code)));
                                       if (r && mustRefuse) crossings_.push_back(fmt::format("6: '{}' was accepted though the caller may not", what));
                                       --requests_;
                                     });
}

// A request that started several operations (a manifest, a reservation composed), answered: each as one.
void Clients::answeredAll(const std::string& what, bool mustRefuse, Result<std::vector<Operation>> ops) {
  if (!ops) return answered(what, mustRefuse, std::unexpected(ops.error()));
  for (auto& op : *ops) {
    ++requests_;
    answered(what, mustRefuse, std::move(op));
  }
  --requests_;
}

// On the control thread (this one, stepping): a request was answered.
void Clients::answered(const std::string& what, bool mustRefuse, Result<Operation> r) {
  if (!r) {
    ++report_.refused;
    answers_.push_back(fmt::format("{}: refused {}", what, codeName(r.error().code)));
    const Code c = r.error().code;
    if (mustRefuse && c != Code::kNotFound && c != Code::kPermissionDenied)
      crossings_.push_back(fmt::format("6: '{}' was refused with {}, not NOT_FOUND or PERMISSION_DENIED", what, codeName(c)));
  } else {
    ++report_.accepted;
    answers_.push_back(fmt::format("{}: {} accepted", what, r->id));
    if (mustRefuse) crossings_.push_back(fmt::format("6: '{}' was accepted ({}) though the caller may not", what, r->id));
    running_[r->id] = r->tenant;  // queued ones too: once admitted they reserve devices as their own
    if (r->state == OperationState::kQueued) ++report_.queued;
    engine_.waitOperation(r->id, 24h, [this](Result<Operation> done) {
      if (done && done->finished() && running_.erase(done->id))
        (done->state == OperationState::kSucceeded ? report_.succeeded : report_.failed)++;
    });
  }
  --requests_;
}


}  // namespace switchyard::sim

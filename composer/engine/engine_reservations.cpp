// Several systems at once, and composition reservations (Redfish's Compose action with a manifest:
// Preview, PreviewReserve, Apply). A manifest's systems are placed in order, each on what the ones before
// it left, so they fit together or the manifest is refused whole. A reservation keeps those placements
// held (devices kReserved under the reservation's id, hosts taken) until it is applied, released or
// expires. Runs on the control thread; reservations are in memory only (reservation.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>

#include "composer/engine/engine.h"
#include "composer/engine/engine_control.h"

namespace switchyard {

namespace {

// The holder of a manifest's placements while one engine call composes or previews them.
constexpr std::string_view kManifestHolder = "rsv-manifest";

std::string describeHeld(const std::vector<HeldSystem>& systems) {
  std::string out;
  for (const auto& s : systems) {
    std::string devices;
    for (const auto& d : s.placement.devices) devices += (devices.empty() ? "" : ", ") + d.deviceId;
    out += fmt::format("{}'{}' on {} with {}", out.empty() ? "" : "; ", s.name, s.placement.hostId, devices.empty() ? "no devices" : devices);
  }
  return out;
}

}  // namespace

void Engine::hold(const Placement& placement, const std::string& holder) {
  for (const auto& d : placement.devices) state_->assign({d.deviceId, DeviceAllocation::kReserved, holder}, placement.hostId);
  state_->holdHost(placement.hostId, true);
}

void Engine::letGo(const Placement& placement, const std::string& holder) {
  // Only what is still held: a device reconcile quarantined meanwhile stays quarantined.
  for (const auto& d : placement.devices) {
    const DeviceAssignment a = state_->assignment(d.deviceId);
    if (a.allocation == DeviceAllocation::kReserved && a.owner == holder) state_->assign({d.deviceId, DeviceAllocation::kFree, {}}, {});
  }
  state_->holdHost(placement.hostId, false);
  queue_.markDirty();  // what a queued request waits for may be what was held
}

Result<std::vector<Placement>> Engine::placeTogether(const std::vector<ComposeRequest>& requests, const std::string& holder) {
  std::vector<Placement> placed;
  auto refuse = [&](const std::string& name, Error e) -> Result<std::vector<Placement>> {
    for (const auto& p : placed) letGo(p, holder);
    if (requests.size() > 1) e.message = fmt::format("system '{}': {}", name, e.message);
    return fail(std::move(e));
  };
  if (requests.empty()) return fail(Code::kInvalidArgument, "name at least one system");
  std::set<std::string> names;
  for (const auto& r : requests) {
    if (auto valid = validateName(r.name); !valid) return refuse(r.name, valid.error());
    if (!names.insert(r.name).second) return refuse(r.name, Error{Code::kInvalidArgument, "the name is given to two systems"});
    if (const System* existing = state_->findSystem(r.name))
      return refuse(r.name, Error{Code::kAlreadyExists, fmt::format("a system named '{}' already exists ({})", r.name, existing->id)});
    if (reservations_.holdingName(r.name) != nullptr)
      return refuse(r.name, Error{Code::kAlreadyExists, fmt::format("a reservation holds the name '{}'", r.name)});
    if (r.placement.gpuShareMilli != 0 || !r.placement.gpuInstances.empty())
      return refuse(r.name, Error{Code::kInvalidArgument,
                                  "a manifest or reservation holds whole devices; compose a GPU share or MIG instances on its own"});
    if (r.placement.tenant.empty()) return refuse(r.name, Error{Code::kInvalidArgument, "tenant must not be empty"});
    PlacementDecision decision = place(*placement_, state_->pool(), r.placement, &state_->placementIndex());
    if (!decision.placement) return refuse(r.name, *decision.error);
    hold(*decision.placement, holder);
    placed.push_back(std::move(*decision.placement));
  }
  return placed;
}

Result<std::vector<Placement>> EngineCore::planSystems(const std::vector<ComposeRequest>& requests) {
  if (!inTask()) return answerFromTask("plan systems", [&](EngineCore& core) { return core.planSystems(requests); });
  SY_ASSIGN(auto placed, engine_.placeTogether(requests, std::string(kManifestHolder)));
  for (const auto& p : placed) engine_.letGo(p, std::string(kManifestHolder));
  return placed;
}

void Engine::announceReservation(const Reservation& r, const std::string& type, const std::string& message, const std::string& actor) {
  Mutation m;
  m.events.push_back(makeEvent(type, r.id, message, actor));
  m.events.back().tenant = r.tenant;
  if (auto written = persist(m); !written) spdlog::warn("cannot record {} for {}: {}", type, r.id, written.error().message);
}

Result<Reservation> EngineCore::reserve(const Caller& caller, const std::vector<ComposeRequest>& requests, Duration lifetime) {
  if (!inTask()) return answerFromTask("reserve", [&](EngineCore& core) { return core.reserve(caller, requests, lifetime); });
  SY_TRY(engine_.checkAccepting());
  engine_.expireReservations();
  if (lifetime <= Duration::zero()) return fail(Code::kInvalidArgument, "a reservation must last longer than zero");
  if (requests.empty()) return fail(Code::kInvalidArgument, "name at least one system to reserve for");
  const std::string tenant = requests.front().placement.tenant;
  for (const auto& r : requests)
    if (r.placement.tenant != tenant) return fail(Code::kInvalidArgument, "the systems of one reservation belong to one tenant");
  SY_TRY(mayChange(caller, tenant, "reserve"));
  // The tenant's other reservations count towards its quota as if composed (Engine::usageOf).
  const int systems = static_cast<int>(requests.size());
  SY_TRY(engine_.checkQuota(tenant, systems, {}));

  Reservation r;
  r.id = engine_.reservations_.nextId();
  SY_ASSIGN(auto placed, engine_.placeTogether(requests, r.id));
  HeldDevices total;
  for (const auto& p : placed) total += engine_.holdingOf(p.devices);
  if (auto quota = engine_.checkQuota(tenant, systems, total); !quota) {
    for (const auto& p : placed) engine_.letGo(p, r.id);
    return fail(quota.error());
  }
  r.reservedBy = caller;
  r.tenant = tenant;
  r.createdAt = engine_.clock_.now();
  r.expiresAt = r.createdAt + lifetime.count();
  for (std::size_t i = 0; i < requests.size(); ++i) r.systems.push_back({requests[i].name, requests[i].placement, placed[i], requests[i].labels});
  engine_.reservations_.add(r);
  engine_.announceReservation(r, "reservation.created",
                              fmt::format("{} holds {} for {} for {} s", r.id, describeHeld(r.systems), caller.identity,
                                          std::chrono::duration_cast<std::chrono::seconds>(lifetime).count()),
                              caller.identity);
  spdlog::info("{} reserved by {}: {}", r.id, caller.identity, describeHeld(r.systems));
  return r;
}

Result<std::vector<Reservation>> EngineCore::listReservations() {
  if (!inTask()) return answerFromTask("list reservations", [&](EngineCore& core) { return core.listReservations(); });
  // A read writes nothing: one past its time is left out here, and let go by the deadline tick or the
  // next change to reservations.
  return engine_.reservations_.live(engine_.clock_.now());
}

namespace {

// The reservation, if the caller may see it (else "none"), and may apply or release it (else refused).
Result<const Reservation*> ownReservation(const ReservationBook& reservations, const Caller& caller, const std::string& id, std::string_view what) {
  const Reservation* found = reservations.find(id);
  if (found == nullptr || !maySee(caller, found->tenant))
    return fail(Code::kNotFound, fmt::format("no reservation '{}' (it may have expired, or yardd restarted since)", id));
  const Reservation& r = *found;
  if (caller.identity != r.reservedBy.identity && caller.role != Role::kAdmin)
    return fail(Code::kPermissionDenied, fmt::format("{} belongs to {}: only they or an administrator may {} it", id, r.reservedBy.identity, what));
  return &r;
}

}  // namespace

Result<void> EngineCore::releaseReservation(const Caller& caller, const std::string& id) {
  if (!inTask()) return answerFromTask("release a reservation", [&](EngineCore& core) { return core.releaseReservation(caller, id); });
  SY_TRY(engine_.checkAccepting());
  engine_.expireReservations();
  SY_ASSIGN(const Reservation* found, ownReservation(engine_.reservations_, caller, id, "release"));
  const Reservation r = *found;
  for (const auto& s : r.systems) engine_.letGo(s.placement, r.id);
  engine_.reservations_.erase(id);
  engine_.announceReservation(r, "reservation.released", fmt::format("{} released by {}: {}", r.id, caller.identity, describeHeld(r.systems)),
                              caller.identity);
  return {};
}

Result<std::vector<Operation>> Engine::composeHeld(const Caller& caller, const std::vector<HeldSystem>& systems, const std::string& holder,
                                                   const std::function<void()>& letGoAll) {
  // Everything acceptCompose could refuse, checked for all systems while they are still held: the
  // manifest is accepted whole or not at all.
  SY_TRY(checkAccepting());
  HeldDevices held;
  for (const auto& s : systems) {
    for (const auto& d : s.placement.devices)
      if (const DeviceAssignment a = state_->assignment(d.deviceId); a.allocation != DeviceAllocation::kReserved || a.owner != holder)
        return fail(Code::kFailedPrecondition, fmt::format("device {} held for system '{}' is no longer available ({}{}); release this and reserve again",
                                                           d.deviceId, s.name, toString(a.allocation), a.owner.empty() ? "" : ": " + a.owner));
    if (const System* existing = state_->findSystem(s.name))
      return fail(Code::kAlreadyExists, fmt::format("a system named '{}' already exists ({})", s.name, existing->id));
    SY_TRY(mayChange(caller, s.request.tenant, "compose"));
    SY_TRY(hostPolicy(s.placement.hostId));
    held += holdingOf(s.placement.devices);
  }
  SY_TRY(checkQuota(systems.front().request.tenant, static_cast<int>(systems.size()), held, holder));
  letGoAll();
  std::vector<Operation> started;
  for (const auto& s : systems) {
    ComposeRequest request{s.name, s.request, s.labels, {}};
    request.placement.host = s.placement.hostId;
    request.placement.devices.clear();
    for (const auto& d : s.placement.devices) request.placement.devices.push_back(d.deviceId);
    request.placement.gpuCount = 0;
    auto op = audited(caller, "compose", s.name, s.request.tenant, {}, [&](const Acceptance& a) { return acceptCompose(a, request); });
    if (!op) {
      std::string before;
      for (const auto& o : started) before += fmt::format("{}{} ({})", before.empty() ? "" : ", ", o.systemId, o.id);
      return fail(op.error().code, fmt::format("system '{}': {}{}", s.name, op.error().message,
                                               before.empty() ? "" : fmt::format("; the systems before it are composing: {}", before)));
    }
    started.push_back(std::move(*op));
  }
  return started;
}

Result<std::vector<Operation>> EngineCore::composeReserved(const Caller& caller, const std::string& id) {
  if (!inTask()) return answerFromTask("compose a reservation", [&](EngineCore& core) { return core.composeReserved(caller, id); });
  SY_TRY(engine_.checkAccepting());
  engine_.expireReservations();
  SY_ASSIGN(const Reservation* found, ownReservation(engine_.reservations_, caller, id, "apply"));
  const Reservation r = *found;
  SY_ASSIGN(auto started, engine_.composeHeld(caller, r.systems, r.id, [&] {
              for (const auto& s : r.systems) engine_.letGo(s.placement, r.id);
              engine_.reservations_.erase(r.id);
            }));
  std::string ops;
  for (const auto& o : started) ops += fmt::format("{}{} ({})", ops.empty() ? "" : ", ", o.systemId, o.id);
  engine_.announceReservation(r, "reservation.applied", fmt::format("{} applied by {}: {}", r.id, caller.identity, ops), caller.identity);
  return started;
}

Result<std::vector<Operation>> EngineCore::composeTogether(const Caller& caller, const std::vector<ComposeRequest>& requests) {
  if (!inTask()) return answerFromTask("compose together", [&](EngineCore& core) { return core.composeTogether(caller, requests); });
  SY_TRY(engine_.checkAccepting());
  // Who may compose for these tenants is asked first: a caller who may not learns nothing of the pool (found by the
  // simulation: a viewer was told RESOURCE_EXHAUSTED).
  for (const auto& r : requests) SY_TRY(mayChange(caller, r.placement.tenant, "compose"));
  engine_.expireReservations();
  SY_ASSIGN(auto placed, engine_.placeTogether(requests, std::string(kManifestHolder)));
  std::vector<HeldSystem> systems;
  for (std::size_t i = 0; i < requests.size(); ++i) systems.push_back({requests[i].name, requests[i].placement, placed[i], requests[i].labels});
  bool released = false;
  auto letGoAll = [&] {
    for (const auto& p : placed) engine_.letGo(p, std::string(kManifestHolder));
    released = true;
  };
  auto started = engine_.composeHeld(caller, systems, std::string(kManifestHolder), letGoAll);
  if (!released) letGoAll();
  return started;
}

// On the control thread, from the deadline tick (EngineOptions::deadlineInterval) and from every change that
// reserves, applies, releases or composes, never from a read: devices held past their time go back to the pool.
void Engine::expireReservations() {
  if (reservations_.empty() || !state_ || standby_.on()) return;
  for (const Reservation& r : reservations_.takeExpired(clock_.now())) {
    for (const auto& s : r.systems) letGo(s.placement, r.id);
    spdlog::info("{} expired: {} are free again", r.id, describeHeld(r.systems));
    announceReservation(r, "reservation.expired", fmt::format("{} expired unused: {} are free again", r.id, describeHeld(r.systems)), "yardd");
  }
}

}  // namespace switchyard

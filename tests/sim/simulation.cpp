#include "tests/sim/simulation.h"

#include <fmt/format.h>

#include <fmt/ranges.h>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <variant>

#include "composer/engine/engine.h"
#include "composer/engine/engine_client.h"
#include "fabric/simulated_fabric.h"
#include "agent/simulated_hosts.h"
#include "fabric/cxl/cxl_fabric.h"
#include "fabric/switchtec/switchtec_fabric.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"
#include "tests/sim/clients.h"
#include "tests/sim/gate.h"
#include "tests/support/jackrabbit_cse.h"
#include "tests/support/switchtec_emulator.h"
#include "tests/support/temp_dir.h"

namespace switchyard::sim {

namespace {

using namespace std::chrono_literals;

std::string describe(std::string_view verb, std::span<const Binding> set) {
  std::string out(verb);
  for (const auto& b : set) out += fmt::format(" {}>{}", b.deviceId, b.upstreamPortId);
  return out;
}

// The switch, with every call the engine makes held at the gate.
class GatedSwitch final : public FabricDriver {
 public:
  GatedSwitch(FabricDriver& inner, Gate& gate) : inner_(inner), gate_(gate) {}
  std::string_view name() const override { return inner_.name(); }
  Result<Topology> discover() override { return inner_.discover(); }
  Result<void> bindAll(std::span<const Binding> set, const CallOptions& o = {}) override {
    return gate_.pass<Result<void>>(describe("bind", set), [&] { return inner_.bindAll(set, o); });
  }
  Result<void> unbindAll(std::span<const Binding> set, const CallOptions& o = {}) override {
    return gate_.pass<Result<void>>(describe("unbind", set), [&] { return inner_.unbindAll(set, o); });
  }
  Result<std::vector<Binding>> readBindings(const CallOptions& o = {}) override {
    return gate_.pass<Result<std::vector<Binding>>>("read bindings", [&] { return inner_.readBindings(o); });
  }
  Result<std::vector<FabricEvent>> pollEvents() override { return inner_.pollEvents(); }

 private:
  FabricDriver& inner_;
  Gate& gate_;
};

// The hosts' agents, likewise.
class GatedHosts final : public HostAgents {
 public:
  GatedHosts(SimulatedHosts& inner, Gate& gate) : inner_(inner), gate_(gate) {}
  HostPolicy policy(const HostId& host) const override { return inner_.policy(host); }
  Result<std::vector<HostDeviceIdentity>> admit(const HostId& host, const HostChange& change, const CallOptions& o = {}) override {
    return gate_.pass<Result<std::vector<HostDeviceIdentity>>>(describe("admit on " + host, change.devices),
                                                               [&] { return inner_.admit(host, change, o); });
  }
  Result<HostRelease> release(const HostId& host, const HostChange& change, const CallOptions& o = {}) override {
    return gate_.pass<Result<HostRelease>>(describe("release on " + host, change.devices), [&] { return inner_.release(host, change, o); });
  }
  // Host reconcile's listing: gated like every other call (one host's listing per call, so its fate is the host's).
  bool canList(const HostId& host) const override { return inner_.canList(host); }
  Result<std::vector<HostDeviceIdentity>> listPresent(const HostId& host, const CallOptions& o = {}) override {
    return gate_.pass<Result<std::vector<HostDeviceIdentity>>>("list on " + host, [&] { return inner_.listPresent(host, o); });
  }
  // Activity samples change nothing: not gated (the simulation asks for them itself).
  bool canReportActivity(const HostId& host) const override { return inner_.canReportActivity(host); }
  Result<std::vector<GpuActivity>> activity(const HostId& host, const std::vector<Binding>& gpus, const CallOptions& o = {}) override {
    return inner_.activity(host, gpus, o);
  }

 private:
  SimulatedHosts& inner_;
  Gate& gate_;
};

class Simulation {
 public:
  explicit Simulation(const SimOptions& o)
      : options_(o), rng_(o.seed), clock_(1'800'000'000'000'000'000), gate_([this](const std::string& call) { return fateOf(call); }) {}

  SimReport run() {
    report_.seed = options_.seed;
    if (!setUp()) return report_;
    for (int i = 0; i < options_.actions && report_.violations.empty() && report_.unjudged.empty(); ++i) {
      act();
      if (!settle()) break;
      check(false);
    }
    if (report_.unjudged.empty()) drain();
    finish();
    return report_;
  }

 private:
  // The Switchtec rig: the embedded default's shape on two PAX chips; host N has port N on both.
  bool setUpSwitchtec() {
    testing::SwitchtecTopology t;
    for (std::uint8_t pax = 0; pax < 2; ++pax) {
      testing::EmulatedPax chip;
      chip.id = pax;
      for (std::uint8_t h = 0; h < 4; ++h) chip.hosts.push_back({h, 8});
      for (std::uint8_t g = 0; g < 8; ++g) chip.endpoints.push_back({static_cast<std::uint8_t>(16 + g), {testing::EmulatedFunction{}}});
      chip.links.push_back({static_cast<std::uint8_t>(48 + pax), static_cast<std::uint8_t>(1 - pax), static_cast<std::uint8_t>(49 - pax)});
      t.chips.push_back(std::move(chip));
    }
    auto emulator = testing::SwitchtecEmulator::start({t});
    if (!emulator) return violation("set-up: the Switchtec emulator did not start: " + emulator.error().message);
    emulator_ = std::move(*emulator);
    SwitchtecOptions o{.endpoint = emulator_->endpoint()};
    for (int pax = 0; pax < 2; ++pax)
      for (int h = 0; h < 4; ++h) o.hostNames[fmt::format("pax{}-p{}", pax, h)] = fmt::format("host{}", h);
    auto driver = SwitchtecFabric::connect(o);
    if (!driver) return violation("set-up: the Switchtec driver did not connect: " + driver.error().message);
    driver_ = std::move(*driver);
    return true;
  }

  // The CXL rig: Jackrabbit Labs' cse (a process of its own, one per seed), four VCSs of 8 vPPBs (hosts
  // host0..3) and 16 GPU ports, driven by the real CXL FM-API driver.
  bool setUpCxl() {
    if (auto why = testing::cseUnavailable(); !why.empty()) return violation("set-up: " + why);
    std::string why;
    cse_ = testing::CseProcess::start({.hosts = 4, .vppbsPerVcs = 8, .gpus = 16, .mld = false}, &why);
    if (!cse_) return violation("set-up: cse did not start: " + why);
    // A reply lost by cse (now and then, on a loaded machine) costs a batch two reply timeouts at most: well
    // inside settle()'s 10 s.
    CxlOptions o{.endpoint = cse_->endpoint(), .dialect = cxl::Dialect::jackrabbit(), .replyTimeout = std::chrono::seconds(2)};
    for (int h = 0; h < 4; ++h) o.hostNames[fmt::format("vcs{}", h)] = fmt::format("host{}", h);
    auto driver = CxlFabric::connect(o);
    if (!driver) return violation("set-up: the CXL driver did not connect: " + driver.error().message);
    driver_ = std::move(*driver);
    return true;
  }

  bool setUp() {
    if (options_.driver == "switchtec") {
      if (!setUpSwitchtec()) return false;
    } else if (options_.driver == "cxl") {
      if (!setUpCxl()) return false;
    } else {
      auto fabric = SimulatedFabric::create(defaultTopology(), clock_, {});
      if (!fabric) return violation("set-up: cannot create the switch");
      fabric_ = fabric->get();
      driver_ = std::move(*fabric);
      hosts_ = std::make_unique<SimulatedHosts>(*fabric_->discover(), fabric_->router(), clock_);
      gatedHosts_ = std::make_unique<GatedHosts>(*hosts_, gate_);
    }
    auto store = SqliteStore::open(dir_ / "yard.db");
    if (!store) return violation("set-up: cannot create the store");
    store_ = std::move(*store);
    gatedSwitch_ = std::make_unique<GatedSwitch>(*driver_, gate_);
    // Stepped (ADR 0026): this thread is the control thread, and the switch and host calls wait until act() picks one.
    EngineOptions eo{.switchCallTimeout = 1h, .hostCallTimeout = 1h, .fabricPollInterval = 0ms, .reconcileInterval = 0ms, .pruneInterval = 0ms};
    eo.stepped = true;
    eo.retryBackoff = 0ms;  // retries at once: a seed's schedule stays the same (the backoff's jitter is random)
    eo.deadlineInterval = 0ms;  // leases and queue timeouts end only when the simulation says, on its clock
    eo.quotas["team-a"] = TenantQuota{.maxGpus = kTeamAGpus, .maxSystems = kTeamASystems};
    // team-b's idle GPUs are detached after a minute (idle reclaim: the simulation samples activity itself).
    eo.quotas["team-b"].reclaimIdleAfter = std::chrono::minutes(1);
    eo.quotas["team-b"].reclaimDryRun = false;
    eo.activityInterval = 0ms;
    engine_ = std::make_unique<Engine>(*gatedSwitch_, *store_, clock_, eo);
    if (gatedHosts_) engine_->useHostAgents(*gatedHosts_);
    clients_ = std::make_unique<Clients>(*engine_, options_.driver == "simulated", report_, [this](int n) { return pick(n); },
                                         [this](std::string line) { note(std::move(line)); });
    const Topology topology = *driver_->discover();
    for (const auto& h : topology.hosts)
      for (const auto& u : h.upstreamPorts) hostOfPort_[u.portId] = h.id;
    if (auto r = engine_->start(); !r) return violation("set-up: the engine did not start: " + r.error().message);
    gate_.hold();
    return true;
  }

  bool violation(std::string what) {
    report_.violations.push_back(std::move(what));
    return false;
  }

  void note(std::string line) {
    report_.trace += line + "\n";
    if (options_.trace) fmt::print("seed {} | {}\n", options_.seed, line);
  }

  int pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }

  void act() {
    clock_.advance(std::chrono::milliseconds(1 + pick(50)));
    const std::size_t waiting = engine_->loop().waitingCalls();
    if (const std::size_t late = engine_->loop().lateReplies(); late > 0 && pick(4) == 0) return deliverLate(late);
    if (pick(25) == 0) return releaseQuarantined();
    const int roll = pick(100);
    if (waiting > 0 && (roll < 50 || running() >= 6)) return decide(waiting);
    if (roll < 86) return clients_->submit();
    if (roll < 89) return expireDeadlines();
    if (roll < 91 && hosts_) return sampleActivity();
    if (roll < 94 || (roll < 96 && !hosts_)) return reconcile();
    if (roll < 96) return reconcileHosts();
    if (waiting > 0) return decide(waiting);
    clients_->submit();
  }

  // One of the waiting switch or host calls runs now; fateOf() decides how it goes as it reaches the gate. Now and
  // then its reply comes back late: the call acts now, and other calls run and are answered before the engine hears
  // of it (deliverLate), as with a switch that is slow to answer.
  void decide(std::size_t waiting) {
    const auto index = static_cast<std::size_t>(pick(static_cast<int>(waiting)));
    const bool late = pick(5) == 0;
    if (late) note("the next call's reply comes back late");
    (void)engine_->loop().runCall(index, late ? ControlLoop::Reply::kLate : ControlLoop::Reply::kNow);
  }

  // One of the late replies, drawn from the seed (so late replies also overtake each other), reaches the engine.
  void deliverLate(std::size_t late) {
    const auto index = static_cast<std::size_t>(pick(static_cast<int>(late)));
    note(fmt::format("late reply {} of {} arrives", index + 1, late));
    (void)engine_->loop().deliverReply(index);
  }

  // The fate of a call reaching the gate: drawn from the seed, or pass while draining.
  Fate fateOf(const std::string& call) {
    const int roll = draining_ ? 0 : pick(100);
    Fate fate = roll < 76 ? Fate::kPass : roll < 88 ? Fate::kFail : Fate::kLoseReply;
    // A refused host call is an agent restarting (it misses the call); the trace says so.
    const bool hostCall = call.rfind("admit", 0) == 0 || call.rfind("release", 0) == 0;
    if (fate != Fate::kPass) ++report_.faults;
    note(fmt::format("{}{} {}", draining_ ? "drain: " : "",
                     fate == Fate::kPass ? "pass" : fate == Fate::kFail ? (hostCall ? "agent-restart" : "fail") : "lose-reply", call));
    return fate;
  }

  std::vector<System> systems() { return liveSystems(*engine_); }

  // Compares the store with the switch: refused while a step's call waits (the engine's rule); else its read of the
  // switch waits among the other calls, and the seed decides when it runs, so steps may start, run and return around
  // it, and its fate, like any other call's. A read that steps overtook must be refused as stale, not recorded.
  void reconcile() {
    ++report_.reconciles;
    ++reconciling_;
    note("reconcile");
    engine_->reconcile([this](Result<std::vector<Drift>> drifts) {
      --reconciling_;
      note(drifts ? fmt::format("reconcile: {} drift(s)", drifts->size()) : fmt::format("reconcile: {}", drifts.error().message));
      if (drifts) checkDrifts(*drifts);
    });
  }

  // The same for the hosts' side: the engine lists every host with an agent as one waiting call, and compares what
  // each shows with what its system holds; a host where a step answered meanwhile is left out of the round.
  void reconcileHosts() {
    ++report_.reconciles;
    ++reconciling_;
    note("host reconcile");
    engine_->reconcileHosts([this](Result<std::vector<Drift>> drifts) {
      --reconciling_;
      note(drifts ? fmt::format("host reconcile: {} drift(s)", drifts->size()) : fmt::format("host reconcile: {}", drifts.error().message));
      if (drifts) checkHostDrifts(*drifts);
    });
  }

  // The operator releases a quarantined GPU (`yardctl devices release`, unbinding it first or not): the engine
  // reads the switch, asks the host behind its port whether it still has the GPU, unbinds it where asked and the
  // host let it go, and frees it, in one waiting call, while operations and reconciles go on around it. This
  // operator asks for the unbind whatever the hosts have: the engine's question keeps surprise removals away.
  void releaseQuarantined() {
    auto devices = engine_->reads().listDevices();
    std::vector<DeviceId> quarantined;
    for (const auto& d : devices ? *devices : std::vector<DeviceView>{})
      if (d.assignment.allocation == DeviceAllocation::kQuarantined) quarantined.push_back(d.device.id);
    if (quarantined.empty()) return;
    const DeviceId device = quarantined[static_cast<std::size_t>(pick(static_cast<int>(quarantined.size())))];
    const bool unbind = pick(2) == 0;
    ++reconciling_;
    note(fmt::format("ops releases {}{}", device, unbind ? " --unbind" : ""));
    engine_->releaseQuarantined(kCallers[2], device, {.unbind = unbind}, [this, device](Result<DeviceView> released) {
      --reconciling_;
      note(released ? fmt::format("release {}: {}", device, toString(released->assignment.allocation))
                    : fmt::format("release {}: {}", device, released.error().message));
    });
  }

  // 9 on the hosts' side, against the hosts and the systems as they are when the engine says so: a device reported
  // missing is in a system whose host does not see it; one reported unexpected is seen by a host outside its systems.
  void checkHostDrifts(const std::vector<Drift>& drifts) {
    if (drifts.empty()) return;
    std::set<std::pair<HostId, DeviceId>> held, seen;
    for (const auto& s : systems())
      for (const auto& b : s.bindings) held.insert({s.hostId, b.deviceId});
    std::set<HostId> hostIds;
    for (const auto& [port, host] : hostOfPort_) hostIds.insert(host);
    for (const auto& h : hostIds)
      for (const auto& d : hosts_->present(h)) seen.insert({h, d.deviceId});
    for (const auto& d : drifts) {
      bool holds = false;
      for (const auto& h : hostIds) {
        const bool in = held.contains({h, d.deviceId}), sees = seen.contains({h, d.deviceId});
        holds = holds || (d.kind == "host-missing-device" ? in && !sees : sees && !in);
      }
      if (!holds) violation(fmt::format("9: host reconcile recorded {} of {}, which the hosts do not show: {}", d.kind, d.deviceId, d.message));
    }
  }

  // 9: a drift the engine records holds against the switch as it is when the engine says so (no call can have
  // run since its read: a step's call would have made the read stale). A read that a late reply or a reordering
  // let through stale records drift that is not there: a bound GPU quarantined, a whole system degraded.
  void checkDrifts(const std::vector<Drift>& drifts) {
    if (drifts.empty()) return;
    auto fabric = observeSwitch();
    if (!fabric) return;  // the observer's trouble; check() says so
    std::set<DeviceId> bound;
    for (const auto& b : *fabric) bound.insert(b.deviceId);
    for (const auto& d : drifts)
      if ((d.kind == "missing-binding") == bound.contains(d.deviceId))
        violation(fmt::format("9: reconcile recorded {} of {}, which the switch does not show: {}", d.kind, d.deviceId, d.message));
  }

  // Operations running now, as the engine's published view counts them: what the simulation accepted,
  // what the queue admitted and what a lease's end started (a queued request is not running: it waits
  // for capacity, not at the gate).
  int running() const {
    const auto view = engine_->reads().view();
    int n = 0;
    if (view)
      for (const auto& [kind, count] : view->runningOperations) n += count;
    return n;
  }

  void expireDeadlines() {
    clock_.advance(std::chrono::seconds(pick(90)));
    note("deadlines (leases, queue timeouts)");
    auto started = engine_->blocking().expireDeadlines();
    if (!started) return (void)violation("expireDeadlines failed: " + started.error().message);
    for (const auto& op : *started) note(fmt::format("lease ended: {} decomposes {}", op.id, op.systemId));
  }

  // The hosts report what their GPUs do (some run a process, some are busy, the rest idle; in MIG mode, a
  // process in some instances); team-b's GPUs and instances idle for a minute are reclaimed through the
  // ordinary detach path.
  void sampleActivity() {
    clock_.advance(std::chrono::seconds(pick(90)));
    for (const auto& s : systems()) {
      for (const auto& b : s.bindings) {
        const int use = pick(10);
        if (use == 0) hosts_->setActivity(b.deviceId, 0, {{4000 + pick(100), "python3", 512}});
        else if (use == 1) hosts_->setActivity(b.deviceId, 60);
        else if (use < 5) hosts_->setActivity(b.deviceId, 0);
      }
      for (const auto& i : s.gpuInstances) {
        const int use = pick(4);
        if (use == 0) hosts_->setInstanceActivity(i.deviceId, i.start, {{5000 + pick(100), "tritonserver", 4096}});
        else if (use == 1) hosts_->setInstanceActivity(i.deviceId, i.start, {});
      }
    }
    note("activity sample");
    auto started = engine_->sampleActivity();
    if (!started) return (void)violation("sampleActivity failed: " + started.error().message);
    for (const auto& op : *started) note(fmt::format("reclaim: {} detaches idle GPUs of {}", op.id, op.systemId));
  }

  // Runs the control thread's tasks until none is ready: then every request must be answered and every running
  // operation must wait for its one switch or host call, so that nothing moves until the next decision.
  bool settle() {
    while (engine_->loop().stepControl()) {
    }
    const std::size_t waiting = engine_->loop().waitingCalls() + engine_->loop().lateReplies();
    if (clients_->unanswered() != 0 || static_cast<int>(waiting) != running() + reconciling_)
      return violation(fmt::format("stuck: {} request(s) unanswered, {} operation(s) running, {} reconcile(s) reading, {} call(s) or "
                                   "late repl(ies) waiting", clients_->unanswered(), running(), reconciling_, waiting));
    return true;
  }

  void check(bool idle) {
    ++report_.checks;
    const std::map<OperationId, std::string>& running = clients_->running();
    for (auto& c : clients_->takeCrossings()) violation(std::move(c));
    auto live = engine_->reads().listSystems();
    auto devices = engine_->reads().listDevices();
    auto fabric = observeSwitch();
    if (!fabric && !report_.unjudged.empty()) return;  // the switch stopped answering: nothing more can be judged
    if (!live || !devices || !fabric)
      return (void)violation(fmt::format("cannot read the {}: {}", !fabric ? "switch's bindings" : "engine's state",
                                         !fabric ? fabric.error().message : !live ? live.error().message : devices.error().message));
    std::map<DeviceId, const System*> inSystem;
    std::map<std::string, int> tenantGpus;
    // The queue: every entry is a queued system with nothing bound, once; every queued system is in it.
    auto queue = engine_->reads().listQueue();
    if (!queue) return (void)violation("cannot read the queue");
    std::set<SystemId> inQueue;
    for (const auto& e : *queue)
      if (!inQueue.insert(e.systemId).second) violation(fmt::format("7: {} is in the queue twice", e.systemId));
    for (const auto& s : *live)
      if ((s.state == SystemState::kQueued) != inQueue.contains(s.id) || (s.state == SystemState::kQueued && !s.bindings.empty()))
        violation(fmt::format("7: system {} is {} with {} device(s), and {} the queue", s.name, toString(s.state), s.bindings.size(),
                              inQueue.contains(s.id) ? "in" : "not in"));
    for (const auto& s : *live)
      for (const auto& b : s.bindings) {
        if (!inSystem.emplace(b.deviceId, &s).second) violation(fmt::format("1: {} is in systems {} and {}", b.deviceId, inSystem[b.deviceId]->name, s.name));
        ++tenantGpus[s.tenant];
      }
    std::map<std::string, std::string> reservationTenant;
    if (auto held = engine_->blocking().listReservations())
      for (const auto& r : *held) reservationTenant[r.id] = r.tenant;
    std::map<DeviceId, const DeviceView*> view;
    std::set<DeviceId> quarantined;
    for (const auto& d : *devices) {
      view[d.device.id] = &d;
      if (d.assignment.allocation == DeviceAllocation::kQuarantined) quarantined.insert(d.device.id);
      if (d.assignment.allocation == DeviceAllocation::kReserved && isReservationId(d.assignment.owner)) {
        ++tenantGpus[reservationTenant[d.assignment.owner]];  // a reservation's GPUs count towards its tenant's quota
      } else if (d.assignment.allocation == DeviceAllocation::kReserved) {
        auto op = running.find(d.assignment.owner);
        if (op == running.end()) violation(fmt::format("4: {} is reserved by {}, which is not running", d.device.id, d.assignment.owner));
        else if (!inSystem.contains(d.device.id)) ++tenantGpus[op->second];
      }
    }
    if (tenantGpus["team-a"] > kTeamAGpus) violation(fmt::format("5: team-a holds {} GPUs (quota {})", tenantGpus["team-a"], kTeamAGpus));
    std::map<DeviceId, PortId> switchTable;
    for (const auto& b : *fabric) {
      switchTable[b.deviceId] = b.upstreamPortId;
      const DeviceView* d = view[b.deviceId];
      if (!d || d->assignment.allocation == DeviceAllocation::kFree)
        violation(fmt::format("1: the switch binds {} to {}, but the store has it free", b.deviceId, b.upstreamPortId));
      else if (d->assignment.allocation != DeviceAllocation::kQuarantined && hostOfPort_[b.upstreamPortId] != d->hostId)
        violation(fmt::format("1: the switch binds {} to {}, which is not a port of {}", b.deviceId, b.upstreamPortId, d->hostId));
    }
    if (idle) {
      std::map<DeviceId, PortId> storeTable;
      for (const auto& [device, system] : inSystem)
        for (const auto& b : system->bindings)
          if (b.deviceId == device && !quarantined.contains(device)) storeTable[device] = b.upstreamPortId;
      for (const auto& q : quarantined) switchTable.erase(q);
      if (storeTable != switchTable)
        violation(fmt::format("2: idle, the switch holds {} binding(s) and the systems {}", switchTable.size(), storeTable.size()));
    }
    // 8: idle, each host carries exactly the MIG instances its systems hold (none leaked by a rollback or a reclaim),
    // but on a quarantined GPU: a host that never confirmed a release keeps what it had, for an operator.
    if (idle && hosts_) {
      std::map<HostId, std::set<std::pair<DeviceId, int>>> held, made;
      for (const auto& s : *live)
        for (const auto& i : s.gpuInstances)
          if (!quarantined.contains(i.deviceId)) held[s.hostId].insert({i.deviceId, i.start});
      std::set<HostId> hostIds;
      for (const auto& [port, host] : hostOfPort_) hostIds.insert(host);
      for (const auto& h : hostIds) {
        for (const auto& i : hosts_->migInstances(h))
          if (!quarantined.contains(i.deviceId)) made[h].insert({i.deviceId, i.start});
        if (held[h] != made[h])
          violation(fmt::format("8: idle, host {} carries {} MIG instance(s) and its systems hold {}", h, made[h].size(), held[h].size()));
      }
    }
    if (auto removed = hosts_ ? hosts_->surpriseRemovals() : std::vector<std::string>{}; !removed.empty())
      violation(fmt::format("host: {} surprise removal(s), e.g. {}", removed.size(), removed.front()));
  }

  // The simulation's own look at the switch table, beside the engine's. cse (third-party, a process of its own)
  // now and then loses a request on a loaded machine (under TSan above all) and then leaves new connections
  // unanswered for seconds (its listen backlog is full while it tears the old one down); that is the observer's
  // trouble, not the engine's, so the look is retried for up to about 30 s before it counts as a violation. The
  // engine's own reads get no such help.
  Result<std::vector<Binding>> observeSwitch() {
    auto b = driver_->readBindings();
    const auto giveUpAt = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (int attempt = 1; !b && cse_ && std::chrono::steady_clock::now() < giveUpAt; ++attempt) {
      // stderr, not the trace: the trace is part of the digest the reproduction tests compare.
      fmt::print(stderr, "seed {}: observer: switch read failed ({}), reading again\n", options_.seed, b.error().message);
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(500 * attempt, 3000)));
      b = driver_->readBindings();
      if (b) fmt::print(stderr, "seed {}: observer: switch read again after {} failed attempt(s)\n", options_.seed, attempt);
    }
    // Still nothing after 30 s: cse is wedged (alive, but it accepts no connection), and every later call would
    // fail the same way. The seed cannot be judged any further; that is said, not counted as the engine's fault.
    if (!b && cse_) report_.unjudged = fmt::format("cse stopped answering for 30 s ({})", b.error().message);
    return b;
  }

  // Lets everything finish: the waiting calls pass one at a time, the oldest first, until nothing runs.
  void drain() {
    draining_ = true;
    for (int round = 0; round < 10'000; ++round) {
      const bool late = engine_->loop().lateReplies() > 0;
      if (engine_->loop().waitingCalls() == 0 && !late && running() == 0) break;
      if (engine_->loop().waitingCalls() == 0 && !late) return (void)violation("3: operations run but none waits for a call");
      (void)(engine_->loop().waitingCalls() > 0 ? engine_->loop().runCall(0) : engine_->loop().deliverReply(0));
      if (!settle()) return;
    }
    if (running() != 0) violation(fmt::format("3: {} operation(s) never ended", running()));
    check(true);
  }

  void finish() {
    gate_.open();
    if (engine_) engine_->stop(std::chrono::seconds(0));
    std::string state = report_.trace;
    for (const auto& a : clients_->answers()) state += a + "\n";
    if (auto b = report_.unjudged.empty() ? observeSwitch() : Result<std::vector<Binding>>(std::vector<Binding>{}))
      for (const auto& x : *b) state += x.deviceId + ">" + x.upstreamPortId + "\n";
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : state) h = (h ^ c) * 1099511628211ull;
    report_.digest = h;
  }

  SimOptions options_;
  std::mt19937_64 rng_;
  ManualClock clock_;
  testing::TempDir dir_;
  Gate gate_;
  std::unique_ptr<testing::SwitchtecEmulator> emulator_;  // switchtec: the switch, behind driver_
  std::unique_ptr<testing::CseProcess> cse_;              // cxl: the switch (a process), behind driver_
  std::unique_ptr<FabricDriver> driver_;                  // what the engine drives, through the gate
  SimulatedFabric* fabric_ = nullptr;                     // simulated: driver_ itself
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<SimulatedHosts> hosts_;
  std::unique_ptr<GatedSwitch> gatedSwitch_;
  std::unique_ptr<GatedHosts> gatedHosts_;
  std::unique_ptr<Engine> engine_;
  std::map<PortId, HostId> hostOfPort_;
  bool draining_ = false;  // every call passes
  int reconciling_ = 0;     // reconciles and quarantine releases whose call waits among the calls
  std::unique_ptr<Clients> clients_;  // the requests and their answers
  SimReport report_;
};

}  // namespace

SimReport simulate(const SimOptions& options) { return Simulation(options).run(); }

}  // namespace switchyard::sim

// Issue 24, crash consistency: the real yardd is killed with SIGKILL at a named fail point in the middle
// of a mixed workload (compose, attach, detach, decompose by two tenants and an operator, with a quota),
// restarted, and checked against the invariants of ../shared/design/architecture-sketch.md:
//   1. no device is in two systems, and every binding the switch holds belongs to the system of its host;
//   2. after recovery the store and the switch agree exactly;
//   3. every accepted operation ended (succeeded or rolled back) and its audit record says how;
//   4. no reservation outlived its operation;
//   5. no tenant holds more GPUs than its quota;
//   6. every host sees what the store says it holds: no host drift is reported (a host that released a
//      device before the crash still has it released after; the simulated hosts keep their state).
// CI runs every point at its first and second hit; SWITCHYARD_CRASH_RUNS=N adds N random (point, hit)
// pairs (seeded by SWITCHYARD_CRASH_SEED) for the long mode (docs/reliability.md).
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tests/integration/daemon_fixture.h"
#include "tests/support/jackrabbit_cse.h"

namespace switchyard::testing {
namespace {

const std::vector<std::string> kPoints = {
    "accept.after-persist",   "queue.after-admit",       "step.bind.before",        "step.bind.after-call",        "step.verify.before",
    "step.verify.after-call", "step.host-admit.before",  "step.host-admit.after-call",  "step.commit.before",
    "step.host-release.before", "step.host-release.after-call", "step.unbind.before", "step.unbind.after-call",
    "step.release.before",    "operation.after-finish",  "store.before-commit",         "store.after-commit"};
constexpr int kTeamAGpus = 5;

struct Outcome {
  bool crashed = false;
  std::vector<std::string> violations;
};

class CrashTest : public DaemonTest {
 protected:
  void crashAtEveryPoint(bool storePoints);

  void SetUp() override {
    DaemonTest::SetUp();
    json ids = json::array();
    for (auto [name, role, tenant] : {std::tuple{"alice", "tenant", "team-a"}, std::tuple{"bob", "tenant", "team-b"},
                                      std::tuple{"ops", "operator", ""}}) {
      json e{{"name", name}, {"role", role}, {"token_sha256", sha256(std::string("token-") + name)}};
      if (*tenant) e["tenant"] = tenant;
      ids.push_back(e);
    }
    std::ofstream(dir_ / "identities.json") << json{{"tenants", {{"team-a", {{"max_gpus", kTeamAGpus}, {"max_systems", 2}}}}}, {"identities", ids}}.dump();
    std::filesystem::permissions(dir_ / "identities.json", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }

  static std::string sha256(const std::string& s) { return runCommand("printf %s " + s + " | sha256sum", "/tmp").out.substr(0, 64); }

  // The switch yardd drives: the simulated one by default (its state file is the switch's truth).
  virtual std::vector<std::string> driverArgs() { return {}; }
  virtual std::map<std::string, std::string> switchBindings() {
    std::map<std::string, std::string> fabric;
    const json table = simulatedSwitch();  // kept alive: items() refers into it
    for (const auto& [device, port] : table.items()) fabric[device] = port.get<std::string>();
    return fabric;
  }
  virtual void resetSwitch() {}
  // Points this variant's pool never reaches (a pool with no host steps has no host-admit point).
  virtual bool reaches(const std::string&) { return true; }

  std::vector<std::string> args(const std::string& failPoint) {
    std::vector<std::string> a{"--identities", (dir_ / "identities.json").string(), "--reconcile-interval", "0"};
    for (auto& d : driverArgs()) a.push_back(std::move(d));
    if (!failPoint.empty()) a.insert(a.end(), {"--fail-point", failPoint});
    return a;
  }

  template <typename Req, typename Resp, typename Method>
  grpc::Status as(const std::string& who, Method method, const Req& req, Resp& resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    ctx.AddMetadata("authorization", "Bearer token-" + who);
    return (stub_.get()->*method)(&ctx, req, &resp);
  }

  // Runs one change and waits for it; false once yardd is gone.
  bool change(const std::string& who, const std::function<grpc::Status(pb::Operation&)>& start) {
    pb::Operation op;
    grpc::Status s = start(op);
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) return false;
    if (!s.ok()) return true;  // refused (quota, nothing to detach): the workload goes on
    pb::WaitOperationRequest w;
    w.set_id(op.id());
    w.set_timeout_ms(8'000);
    pb::Operation done;
    s = as(who, &pb::Switchyard::Stub::WaitOperation, w, done);
    return s.ok();
  }

  bool compose(const std::string& who, const std::string& name, int gpus, bool queue = false) {
    return change(who, [&](pb::Operation& op) {
      pb::ComposeRequest r;
      r.set_name(name);
      r.mutable_gpus()->set_count(gpus);
      r.set_queue(queue);
      return as(who, &pb::Switchyard::Stub::Compose, r, op);
    });
  }
  // A queued compose: accepted into the queue (its wait ends queued); admitted by a later decompose.
  bool composeQueued(const std::string& who, const std::string& name, int gpus) {
    pb::ComposeRequest r;
    r.set_name(name);
    r.mutable_gpus()->set_count(gpus);
    r.set_queue(true);
    pb::Operation op;
    grpc::Status s = as(who, &pb::Switchyard::Stub::Compose, r, op);
    return s.error_code() != grpc::StatusCode::UNAVAILABLE && s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED;
  }
  bool attach(const std::string& who, const std::string& system, int gpus) {
    return change(who, [&](pb::Operation& op) {
      pb::AttachRequest r;
      r.set_system(system);
      r.mutable_gpus()->set_count(gpus);
      return as(who, &pb::Switchyard::Stub::Attach, r, op);
    });
  }
  bool detachOne(const std::string& who, const std::string& system) {
    pb::GetSystemRequest g;
    g.set_system(system);
    pb::System s;
    if (auto st = as(who, &pb::Switchyard::Stub::GetSystem, g, s); !st.ok()) return st.error_code() != grpc::StatusCode::UNAVAILABLE;
    if (s.bindings_size() == 0) return true;
    return change(who, [&](pb::Operation& op) {
      pb::DetachRequest r;
      r.set_system(system);
      r.add_device_ids(s.bindings(0).device_id());
      return as(who, &pb::Switchyard::Stub::Detach, r, op);
    });
  }
  bool decompose(const std::string& who, const std::string& system) {
    return change(who, [&](pb::Operation& op) {
      pb::DecomposeRequest r;
      r.set_system(system);
      return as(who, &pb::Switchyard::Stub::Decompose, r, op);
    });
  }

  // The mixed workload; stops early when yardd dies.
  void workload() {
    (void)(compose("alice", "a1", 2) && compose("bob", "b1", 1) && attach("alice", "a1", 2) && detachOne("alice", "a1") &&
           compose("alice", "a2", 2) && compose("alice", "a3", 1) /* over max_systems */ && decompose("ops", "b1") &&
           attach("alice", "a2", 3) /* over max_gpus */ && decompose("alice", "a1") && compose("bob", "b2", 3) &&
           composeQueued("bob", "bq", 12) /* 11 free: it waits */ && decompose("alice", "a2") /* 13 free: admitted */ &&
           decompose("bob", "b2") && settleQueue("bq") && decompose("bob", "bq"));
  }

  // Waits for what the queue admitted to end; true when yardd still answers.
  bool settleQueue(const std::string& system) {
    pb::GetSystemRequest g;
    g.set_system(system);
    pb::System s;
    if (auto st = as("ops", &pb::Switchyard::Stub::GetSystem, g, s); !st.ok()) return st.error_code() != grpc::StatusCode::UNAVAILABLE;
    if (s.active_operation().empty()) return true;
    pb::WaitOperationRequest w;
    w.set_id(s.active_operation());
    w.set_timeout_ms(8'000);
    pb::Operation done;
    return as("ops", &pb::Switchyard::Stub::WaitOperation, w, done).ok();
  }

  std::vector<std::string> invariants() {
    std::vector<std::string> bad;
    pb::ListOperationsRequest lo;
    lo.set_limit(1000);
    pb::ListOperationsResponse ops;
    if (!as("ops", &pb::Switchyard::Stub::ListOperations, lo, ops).ok()) return {"cannot list operations"};
    std::set<std::string> queued;
    for (const auto& op : ops.operations()) {
      if (op.state() == pb::OPERATION_STATE_QUEUED) queued.insert(op.id());
      if (op.done() || op.state() == pb::OPERATION_STATE_QUEUED) continue;  // a queued request waits on: not lost
      // Admitted from the queue as yardd came back (after recovery, so it may still run): wait for it.
      pb::WaitOperationRequest w;
      w.set_id(op.id());
      w.set_timeout_ms(8'000);
      pb::Operation done;
      if (!as("ops", &pb::Switchyard::Stub::WaitOperation, w, done).ok() || !done.done())
        bad.push_back(fmt::format("3: operation {} did not end ({})", op.id(), yardctlState(op)));
    }
    pb::ListSystemsResponse systems;
    if (!as("ops", &pb::Switchyard::Stub::ListSystems, pb::ListSystemsRequest{}, systems).ok()) return {"cannot list systems"};
    std::map<std::string, std::string> storeBindings;  // device -> port, from live systems
    std::map<std::string, int> tenantGpus;
    for (const auto& s : systems.systems()) {
      if (s.state() == pb::SYSTEM_STATE_QUEUED && s.bindings_size() > 0) bad.push_back(fmt::format("1: queued system {} has devices", s.name()));
      if (s.state() != pb::SYSTEM_STATE_COMPOSED && s.state() != pb::SYSTEM_STATE_QUEUED)
        bad.push_back(fmt::format("3: system {} is {}", s.name(), static_cast<int>(s.state())));
      for (const auto& b : s.bindings()) {
        if (!storeBindings.emplace(b.device_id(), b.upstream_port_id()).second)
          bad.push_back(fmt::format("1: device {} is in two systems", b.device_id()));
        ++tenantGpus[s.tenant()];
      }
    }
    const auto fabric = switchBindings();
    if (fabric != storeBindings)
      bad.push_back(fmt::format("2: the switch holds {} binding(s) and the store's systems {}", fabric.size(), storeBindings.size()));
    pb::ListDevicesResponse devices;
    if (!as("ops", &pb::Switchyard::Stub::ListDevices, pb::ListDevicesRequest{}, devices).ok()) return {"cannot list devices"};
    for (const auto& d : devices.devices())
      if (d.allocation() == pb::DEVICE_ALLOCATION_RESERVED) bad.push_back(fmt::format("4: device {} is still reserved", d.id()));
    if (tenantGpus["team-a"] > kTeamAGpus) bad.push_back(fmt::format("5: team-a holds {} GPUs", tenantGpus["team-a"]));
    pb::ListAuditRequest la;
    la.set_limit(1000);
    pb::ListAuditResponse audit;
    if (!as("ops", &pb::Switchyard::Stub::ListAudit, la, audit).ok()) return {"cannot read the audit trail"};
    for (const auto& r : audit.records())
      if (r.result() == "accepted" && r.outcome().empty() && !queued.contains(r.operation_id())) bad.push_back(fmt::format("3: audit record {} ({}) has no outcome", r.sequence(), r.operation_id()));
    return bad;
  }

  static std::string yardctlState(const pb::Operation& op) { return std::to_string(static_cast<int>(op.state())); }

  Outcome crashAt(const std::string& failPoint) {
    Outcome out;
    // A point may be hit while yardd starts (a store write of its recovery): that is a crash too.
    if (daemon_->start(args(failPoint))) {
      channel_ = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
      stub_ = pb::Switchyard::NewStub(channel_);
      workload();
    }
    out.crashed = daemon_->waitExit(200ms) && daemon_->signaled() == SIGKILL;
    if (!out.crashed) {
      daemon_->kill(SIGKILL);
    } else if (daemon_->log().find("fail point") == std::string::npos) {
      out.violations.push_back("yardd died without reaching the fail point:\n" + daemon_->log());
      return out;
    }
    startDaemon(args(""));
    out.violations = invariants();
    // yardd still works: the workload runs again to its end, and the invariants hold after it too.
    workload();
    for (auto& v : invariants()) out.violations.push_back("after a second workload: " + v);
    const std::string log = daemon_->log();
    for (const std::string kind : {"drift: host-unexpected-device", "drift: host-missing-device"})
      if (const auto at = log.find(kind); at != std::string::npos)
        out.violations.push_back("6: " + log.substr(at, log.find('\n', at) - at));
    daemon_->kill(SIGKILL);  // the state is thrown away; a graceful stop would only wait for idle clients
    return out;
  }

  void reset() {
    daemon_ = std::make_unique<DaemonProcess>(YARDD_PATH, dir_.path());
    for (const char* f : {"yard.db", "yard.db-wal", "yard.db-shm", "sim-fabric.json", "sim-hosts.json", "yardd.log"}) std::filesystem::remove(dir_ / f);
    resetSwitch();
  }
};

// Every fail point, crashed at: a store write's 1st, 2nd, 6th, 12th and 20th hit, every other point's first
// two (the queue's admission: its one). Two tests, store points and the rest, so that each stays well within
// the test timeout under ASan and they run side by side.
void CrashTest::crashAtEveryPoint(bool storePoints) {
  int crashed = 0, runs = 0;
  for (const auto& point : kPoints) {
    if ((point.rfind("store.", 0) == 0) != storePoints || !reaches(point)) continue;
    for (int hit : storePoints ? std::vector<int>{1, 2, 6, 12, 20}
                   : point == "queue.after-admit" ? std::vector<int>{1}  // the workload's one admission from the queue
                                                  : std::vector<int>{1, 2}) {
      reset();
      const std::string spec = fmt::format("{}=crash@{}", point, hit);
      const Outcome o = crashAt(spec);
      ++runs;
      crashed += o.crashed ? 1 : 0;
      EXPECT_TRUE(o.crashed) << spec << ": the workload never reached it";
      for (const auto& v : o.violations) ADD_FAILURE() << spec << ": " << v;
    }
  }
  std::printf("crash points: %d runs, %d crashed at their point, invariant violations: %d\n", runs, crashed,
              ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count());
}

TEST_F(CrashTest, EveryStoreFailPointAtSeveralHitsRecoversToAConsistentPool) { crashAtEveryPoint(true); }

// The same harness on the Switchtec driver: yardd talks MRPC to switchtec-emulator (a separate process that
// outlives every yardd of a run, as a switch would), whose own record of what is bound is the switch's
// truth. Two PAX chips of 8 GPUs joined by a fabric link; four hosts, each with a host port on both chips
// (the embedded default's shape). The step and accept points, at their first and second hit (the store's
// points do not touch the driver: the simulated run covers them). The hosts trust the fabric (no host
// agents), so the host-admit and host-release points are not on its path: the simulated run covers them.
class SwitchtecCrashTest : public CrashTest {
 protected:
  bool reaches(const std::string& point) override { return point.find(".host-") == std::string::npos; }
  std::vector<std::string> driverArgs() override {
    std::vector<std::string> a{"--driver", "switchtec", "--switchtec", "127.0.0.1:" + std::to_string(emulator_->port()),
                               "--host-policy-default", "trust-fabric"};
    for (int pax = 0; pax < 2; ++pax)
      for (int h = 0; h < 4; ++h) a.insert(a.end(), {"--switchtec-host", fmt::format("pax{}-p{}=host{}", pax, h, h)});
    return a;
  }
  std::map<std::string, std::string> switchBindings() override {
    std::map<std::string, std::string> out;
    const auto text = readFile(dir_ / "switchtec" / "bindings.json");
    if (text.empty()) return out;
    const json table = json::parse(text);  // kept alive: items() refers into it
    for (const auto& [device, port] : table.items()) out[device] = port.get<std::string>();
    return out;
  }
  void resetSwitch() override {
    if (emulator_) emulator_->kill(SIGKILL);
    std::filesystem::create_directories(dir_ / "switchtec");
    json chips = json::array();
    for (int pax = 0; pax < 2; ++pax) {
      json hosts = json::array(), endpoints = json::array();
      for (int h = 0; h < 4; ++h) hosts.push_back({{"port", h}, {"logical_ports", 8}});
      for (int g = 0; g < 8; ++g) endpoints.push_back({{"port", 16 + g}});
      chips.push_back({{"id", pax}, {"hosts", hosts}, {"endpoints", endpoints},
                       {"links", json::array({{{"port", 48 + pax}, {"peer_pax", 1 - pax}, {"peer_port", 49 - pax}}})}});
    }
    std::ofstream(dir_ / "switchtec" / "fabric.json") << json{{"pax", chips}}.dump();
    emulator_ = std::make_unique<DaemonProcess>(SWITCHTEC_EMULATOR_PATH, dir_ / "switchtec");
    ASSERT_TRUE(emulator_->startProgram({"--topology", (dir_ / "switchtec" / "fabric.json").string(), "--listen", "127.0.0.1:0",
                                         "--bindings-file", (dir_ / "switchtec" / "bindings.json").string()}))
        << emulator_->log();
  }
  void TearDown() override {
    if (emulator_) emulator_->kill(SIGKILL);
    CrashTest::TearDown();
  }
  std::unique_ptr<DaemonProcess> emulator_;
};

TEST_F(SwitchtecCrashTest, EveryStepAndAcceptFailPointRecoversToAConsistentPool) { crashAtEveryPoint(false); }

// The same harness on the CXL FM-API driver against Jackrabbit Labs' cse: a third-party switch emulator, a
// process that outlives every yardd of a run and keeps its own state, read back with their jack CLI (the
// switch's truth). Four VCSs (hosts) of 16 vPPBs, 16 GPU ports. The hosts trust the fabric, as in the
// Switchtec run, so the host points are not on its path.
class CxlCrashTest : public CrashTest {
 protected:
  void SetUp() override {
    if (auto why = cseUnavailable(); !why.empty()) GTEST_SKIP() << why;
    CrashTest::SetUp();
  }
  bool reaches(const std::string& point) override { return point.find(".host-") == std::string::npos; }
  std::vector<std::string> driverArgs() override {
    return {"--driver", "cxl", "--cxl", cse_->endpoint(), "--cxl-dialect", "jackrabbit", "--host-policy-default", "trust-fabric"};
  }
  std::map<std::string, std::string> switchBindings() override {
    std::map<std::string, std::string> out;
    for (int vcs = 0; vcs < kConfig.hosts; ++vcs) {
      std::istringstream in(cse_->jack("show vcs -c " + std::to_string(vcs)));
      std::string line;
      while (std::getline(in, line)) {
        int vppb = 0, port = 0;
        if (line.find("Bound Physical Port") != std::string::npos && std::sscanf(line.c_str(), " %d: %d", &vppb, &port) == 2)
          out[fmt::format("cxl0-ep{}", port)] = fmt::format("cxl0-p{}", vcs);
      }
    }
    return out;
  }
  void resetSwitch() override {
    std::string why;
    cse_.reset();
    cse_ = CseProcess::start(kConfig, &why);
    ASSERT_TRUE(cse_) << why;
  }
  void TearDown() override {
    cse_.reset();
    CrashTest::TearDown();
  }
  static constexpr CseConfig kConfig{.hosts = 4, .vppbsPerVcs = 16, .gpus = 16, .mld = false};
  std::unique_ptr<CseProcess> cse_;
};

TEST_F(CxlCrashTest, EveryStepAndAcceptFailPointRecoversToAConsistentPool) { crashAtEveryPoint(false); }

TEST_F(CrashTest, EveryStepAndAcceptFailPointAtItsFirstAndSecondHitRecoversToAConsistentPool) { crashAtEveryPoint(false); }

// The checker itself can fail: a binding the store does not know, put into the switch while yardd is down,
// is reported by recovery as drift and breaks invariant 2.
TEST_F(CrashTest, TheCheckerSeesABindingTheStoreDoesNotKnow) {
  startDaemon(args(""));
  ASSERT_TRUE(compose("alice", "a1", 1));
  EXPECT_TRUE(invariants().empty());
  daemon_->kill(SIGKILL);
  json state = json::parse(readFile(dir_ / "sim-fabric.json"));
  state["bindings"]["sw1-gpu7"] = "sw1-usp1";
  std::ofstream(dir_ / "sim-fabric.json") << state.dump();
  startDaemon(args(""));
  const auto bad = invariants();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].rfind("2: the switch holds 2 binding(s) and the store's systems 1", 0), 0u) << bad[0];
}

// Group commit (ADR 0035): yardd killed while a commit point waits for the task queued behind it, with eight
// clients asking at once: composes that may wait in the queue (each accepted at once: bound or queued) and
// decomposes of what they got (a queued one's cancels it). After the restart the pool is consistent, every
// operation a client was told of is in the store, and one it was told had ended ended so: nobody heard of a task
// whose writes died with the batch.
TEST_F(CrashTest, ClientsAtOnceKilledWithAGroupCommitOpenLoseNothingTheyWereTold) {
  reset();
  ASSERT_TRUE(daemon_->start(args("commit.deferred=crash@10"))) << daemon_->log();
  channel_ = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
  stub_ = pb::Switchyard::NewStub(channel_);
  std::mutex mutex;
  std::vector<pb::Operation> told;  // the operations as answers said they were
  auto ask = [&](auto method, const auto& request) {
    pb::Operation op;
    grpc::Status s = as("bob", method, request, op);
    if (s.ok()) {
      std::lock_guard lock(mutex);
      told.push_back(op);
    }
    return s.error_code() != grpc::StatusCode::UNAVAILABLE && s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED;  // false: yardd died
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&, c] {
      for (int i = 0; i < 200; ++i) {
        pb::ComposeRequest r;
        r.set_name(fmt::format("c{}-{}", c, i));
        r.mutable_gpus()->set_count(1 + (i % 2));
        r.set_queue(true);
        if (!ask(&pb::Switchyard::Stub::Compose, r)) return;
        pb::DecomposeRequest d;
        d.set_system(fmt::format("c{}-{}", c, i > 0 ? i - 1 : i));
        if (!ask(&pb::Switchyard::Stub::Decompose, d)) return;
      }
    });
  for (auto& t : clients) t.join();
  ASSERT_TRUE(daemon_->waitExit(10s)) << "no commit point waited for another task in 8 x 400 requests at once";
  ASSERT_EQ(daemon_->signaled(), SIGKILL) << daemon_->log();
  ASSERT_NE(daemon_->log().find("fail point"), std::string::npos) << daemon_->log();

  startDaemon(args(""));
  for (const auto& v : invariants()) ADD_FAILURE() << v;
  pb::ListOperationsRequest lo;
  lo.set_limit(10'000);
  pb::ListOperationsResponse ops;
  ASSERT_TRUE(as("ops", &pb::Switchyard::Stub::ListOperations, lo, ops).ok());
  std::map<std::string, pb::Operation> stored;
  for (const auto& op : ops.operations()) stored[op.id()] = op;
  EXPECT_FALSE(told.empty()) << "some requests were answered before the kill";
  for (const auto& op : told) {
    auto it = stored.find(op.id());
    if (it == stored.end()) {
      ADD_FAILURE() << op.id() << " was answered but is not in the store";
    } else if (op.done()) {
      EXPECT_TRUE(it->second.done()) << op.id() << " was answered as ended but is not in the store";
      EXPECT_EQ(it->second.state(), op.state()) << op.id() << " was answered as ended one way and the store says another";
    }
  }
}

TEST_F(CrashTest, RandomFailPointsLongMode) {
  const char* runsEnv = std::getenv("SWITCHYARD_CRASH_RUNS");
  const char* seedEnv = std::getenv("SWITCHYARD_CRASH_SEED");
  const int runs = runsEnv ? std::atoi(runsEnv) : 4;
  std::mt19937_64 rng(seedEnv ? std::strtoull(seedEnv, nullptr, 10) : 1);
  int crashed = 0, violations = 0;
  std::map<std::string, int> byPoint;
  for (int i = 0; i < runs; ++i) {
    reset();
    const std::string spec = fmt::format("{}=crash@{}", kPoints[rng() % kPoints.size()], 1 + rng() % 6);
    const Outcome o = crashAt(spec);
    if (o.crashed) ++crashed, ++byPoint[spec.substr(0, spec.find('='))];
    for (const auto& v : o.violations) ++violations, ADD_FAILURE() << spec << ": " << v;
  }
  std::printf("random crash points: %d runs, %d crashed (the rest finished their workload before the hit), %d violation(s)\n", runs,
              crashed, violations);
  for (const auto& [point, n] : byPoint) std::printf("  %-32s %d\n", point.c_str(), n);
}

}  // namespace
}  // namespace switchyard::testing

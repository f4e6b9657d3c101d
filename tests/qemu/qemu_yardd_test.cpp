// yardd end to end on real kernels: yardd drives two QEMU VMs through the QEMU driver, and in each guest
// yard-agent (unchanged, the build's own binary) registers with yardd, verifies what the guest's kernel
// enumerated, refuses to release a drive a guest process holds, and releases the rest. The guests reach
// yardd only through QEMU's guestfwd (10.0.2.100:7390 -> 127.0.0.1:<yardd>), yardd reaches each agent
// through a hostfwd bound to 127.0.0.1.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fabric/qemu/qmp_client.h"
#include "tests/support/free_port.h"
#include "tests/support/qemu_vm.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::QemuVm;

using testing::freeLoopbackPort;

struct Ran {
  std::string out;
  int status = -1;
};
Ran run(const std::string& command) {
  Ran r;
  if (FILE* pipe = ::popen((command + " 2>&1").c_str(), "r")) {
    char buffer[4096];
    while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) r.out.append(buffer, n);
    const int status = ::pclose(pipe);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return r;
}

// The yardd process of the suite (restartable: a crash test kills it).
class Yardd {
 public:
  Yardd(std::filesystem::path dir, int port) : dir_(std::move(dir)), port_(port) {}
  ~Yardd() { kill(); }
  bool start(const std::vector<std::string>& extra = {}) {
    std::string command = fmt::format("{} --driver qemu --qemu-pool {} --state-dir {} --listen 127.0.0.1:{} --plaintext --reconcile-interval 0",
                                      YARDD_PATH, (dir_ / "pool.json").string(), (dir_ / "state").string(), port_);
    for (const auto& e : extra) command += " " + e;
    pid_ = ::fork();
    if (pid_ == 0) {
      const auto log = (dir_ / "yardd.log").string();
      std::freopen(log.c_str(), "a", stdout);
      std::freopen(log.c_str(), "a", stderr);
      ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), nullptr);
      std::_Exit(127);
    }
    for (int i = 0; i < 200; ++i) {
      if (ctl("hosts").status == 0) return true;
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  // Whether it exited (a fail point's crash) within the timeout.
  bool exited(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return true;
      }
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  Ran ctl(const std::string& args) const { return run(fmt::format("{} -s 127.0.0.1:{} --plaintext --timeout 60 {}", YARDCTL_PATH, port_, args)); }
  std::string log() const {
    std::ifstream in(dir_ / "yardd.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::filesystem::path dir_;
  int port_;
  pid_t pid_ = -1;
};

class QemuYarddTest : public ::testing::Test {
 protected:
  struct Suite {
    std::filesystem::path dir;
    std::vector<std::unique_ptr<QemuVm>> vms;
    std::unique_ptr<Yardd> yardd;
    std::string error;
  };
  static Suite& suite() {
    static Suite s;
    return s;
  }

  static void SetUpTestSuite() {
    if (!testing::qemuUnavailable().empty()) return;
    auto& s = suite();
    s.dir = std::filesystem::temp_directory_path() / fmt::format("qemu-yardd-{}", ::getpid());
    std::filesystem::remove_all(s.dir);
    std::filesystem::create_directories(s.dir);
    const int yarddPort = freeLoopbackPort();
    std::vector<int> agentPorts;
    for (const char* name : {"vm-a", "vm-b"}) {
      agentPorts.push_back(freeLoopbackPort());
      auto vm = QemuVm::start({.name = name, .slots = 3, .forwards = {{agentPorts.back(), 7391}}, .guestForward = yarddPort}, &s.error);
      if (!vm) return;
      s.vms.push_back(std::move(vm));
    }
    json pool{{"hosts", json::array()}, {"devices", json::array()}};
    for (const auto& vm : s.vms) pool["hosts"].push_back({{"name", vm->name()}, {"qmp", vm->qmpPath()}, {"slots", vm->slots()}, {"cpu_cores", 1}, {"memory_gib", 1}});
    for (int i = 0; i < 4; ++i)
      pool["devices"].push_back({{"id", fmt::format("gpu{}", i)}, {"kind", "gpu"}, {"model", "stand-in GPU (QEMU NVMe)"},
                                 {"qemu", {{"driver", "nvme"}, {"serial", fmt::format("E2E-GPU-{}", i)}}}, {"backing_mib", 64}});
    std::ofstream(s.dir / "pool.json") << pool.dump(2);
    s.yardd = std::make_unique<Yardd>(s.dir, yarddPort);
    if (!s.yardd->start()) {
      s.error = "yardd did not start: " + s.yardd->log();
      return;
    }
    for (std::size_t i = 0; i < s.vms.size(); ++i) {
      auto& vm = *s.vms[i];
      if (!vm.ready(180s, &s.error)) return;
      // The agent as an operator would run it, with no NVIDIA tools in the guest.
      auto started = vm.shell(fmt::format(
          "yard-agent --host {} --yardd 10.0.2.100:7390 --yardd-plaintext --listen 0.0.0.0:7391 --advertise 127.0.0.1:{} "
          "--gpu-uuid-command '' --gpu-activity-command '' --gpu-processes-command '' --gpu-mig-processes-command '' "
          "--verify-deadline 30 > /tmp/agent.log 2>&1 &",
          vm.name(), agentPorts[i]));
      if (started.status != 0) {
        s.error = "yard-agent did not start in " + vm.name() + ": " + started.out;
        return;
      }
    }
    // Both agents registered.
    for (int i = 0; i < 300; ++i) {
      auto agents = s.yardd->ctl("-o json agents");
      if (agents.out.find("vm-a") != std::string::npos && agents.out.find("vm-b") != std::string::npos) return;
      std::this_thread::sleep_for(100ms);
    }
    s.error = "the agents did not register: " + s.yardd->ctl("agents").out + "\n" + s.vms[0]->shell("cat /tmp/agent.log").out;
  }
  static void TearDownTestSuite() {
    auto& s = suite();
    s.yardd.reset();
    s.vms.clear();
    if (!s.dir.empty()) std::filesystem::remove_all(s.dir);
  }

  void SetUp() override {
    if (auto why = testing::qemuUnavailable(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(suite().error.empty()) << suite().error;
  }
  void TearDown() override {
    // Every system goes back, so each test starts from an empty pool.
    auto systems = yardd().ctl("-o json systems");
    json list = json::parse(systems.out, nullptr, false);
    if (list.is_object() && list.contains("systems")) list = list["systems"];
    ASSERT_TRUE(list.is_array()) << systems.out;
    for (const auto& sys : list) yardd().ctl("decompose " + sys.value("name", std::string()));
  }

  static Yardd& yardd() { return *suite().yardd; }
  static QemuVm& vm(int i) { return *suite().vms[static_cast<std::size_t>(i)]; }
  static std::vector<std::string> guestSerials(QemuVm& vm) {
    std::istringstream in(vm.shell("cat /sys/class/nvme/*/serial 2>/dev/null; true").out);
    std::vector<std::string> out;
    for (std::string s; in >> s;) out.push_back(s);
    std::sort(out.begin(), out.end());
    return out;
  }
  // Waits until both agents are registered (after a restart they register again within a heartbeat).
  static bool agentsRegistered() {
    for (int i = 0; i < 300; ++i) {
      auto agents = yardd().ctl("-o json agents");
      if (agents.out.find("vm-a") != std::string::npos && agents.out.find("vm-b") != std::string::npos) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  // Waits until the guest's kernel shows `n` drives (pciehp and the nvme driver take their time).
  static bool guestShowsCount(QemuVm& vm, std::size_t n, std::chrono::milliseconds timeout = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      if (guestSerials(vm).size() == n) return true;
      std::this_thread::sleep_for(100ms);
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }
  static json system(const std::string& name) {
    auto r = yardd().ctl("-o json systems " + name);
    return json::parse(r.out, nullptr, false);
  }
  static std::vector<std::string> devicesOf(const json& system) {
    std::vector<std::string> out;
    for (const auto& b : system.value("bindings", json::array())) out.push_back(b.value("device_id", std::string()));
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST_F(QemuYarddTest, AComposeIsVerifiedByTheAgentInTheGuestAndADecomposeLetsGo) {
  auto composed = yardd().ctl("compose train --host vm-a --gpus 2");
  ASSERT_EQ(composed.status, 0) << composed.out << yardd().log() << vm(0).shell("cat /tmp/agent.log").out;
  const auto sys = system("train");
  ASSERT_TRUE(sys.is_object()) << sys;
  const auto devices = devicesOf(sys);
  ASSERT_EQ(devices.size(), 2u) << sys.dump(2);
  // The guest's kernel has them, with the serials yardd expects.
  auto serials = guestSerials(vm(0));
  ASSERT_EQ(serials.size(), 2u);
  EXPECT_TRUE(guestSerials(vm(1)).empty());
  // The agent reported where the guest's kernel put each one: its PCI address in the guest, where the
  // guest's nvme driver serves it.
  for (const auto& b : sys["bindings"]) {
    const auto address = b.value("host_pci_address", std::string());
    ASSERT_FALSE(address.empty()) << sys.dump(2);
    EXPECT_EQ(vm(0).shell("ls /sys/bus/pci/devices/" + address + "/nvme").status, 0) << address;
  }
  // Decompose: the agent releases (driver unbind, remove), then the switch (QMP) unbinds.
  auto gone = yardd().ctl("decompose train");
  ASSERT_EQ(gone.status, 0) << gone.out;
  EXPECT_TRUE(guestSerials(vm(0)).empty());
  // The same devices now on the other VM.
  auto moved = yardd().ctl(fmt::format("compose train-b --host vm-b -d {} -d {}", devices[0], devices[1]));
  ASSERT_EQ(moved.status, 0) << moved.out;
  EXPECT_EQ(guestSerials(vm(1)), serials);
}

TEST_F(QemuYarddTest, ADetachIsRefusedWhileAGuestProcessHoldsTheDrive) {
  ASSERT_EQ(yardd().ctl("compose held --host vm-a --gpus 1").status, 0);
  const auto device = devicesOf(system("held")).at(0);
  // A process in the guest holds the drive's namespace open.
  ASSERT_TRUE(vm(0).eventually("ls /dev/nvme*n1", 10s)) << vm(0).shell("ls /dev").out;
  ASSERT_EQ(vm(0).shell("sleep 600 < $(ls /dev/nvme*n1 | head -n1) &").status, 0);
  auto refused = yardd().ctl("detach held -d " + device);
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.out.find("(sleep)"), std::string::npos) << refused.out;
  EXPECT_EQ(guestSerials(vm(0)).size(), 1u) << "still there";
  EXPECT_EQ(devicesOf(system("held")), std::vector<std::string>{device});
  // Once the process is gone, the detach goes through.
  vm(0).shell("kill $(pidof sleep)");
  auto detached = yardd().ctl("detach held -d " + device);
  ASSERT_EQ(detached.status, 0) << detached.out;
  EXPECT_TRUE(guestSerials(vm(0)).empty());
}

// yardd killed right after QMP added the devices, before the agent verified them: restarted, it finishes
// the operation, and the guests' kernels agree with its store.
TEST_F(QemuYarddTest, AKill9BetweenTheBindAndTheVerifyEndsWithTheGuestsAgreeingWithTheStore) {
  yardd().kill();
  ASSERT_TRUE(yardd().start({"--fail-point", "step.bind.after-call=crash"})) << yardd().log();
  ASSERT_TRUE(agentsRegistered()) << yardd().log();
  yardd().ctl("compose crash --host vm-b --gpus 2");
  ASSERT_TRUE(yardd().exited(30s)) << "the fail point did not fire:\n" << yardd().log();
  EXPECT_TRUE(guestShowsCount(vm(1), 2)) << "QMP added them before yardd died";
  ASSERT_TRUE(yardd().start()) << yardd().log();
  ASSERT_TRUE(agentsRegistered()) << yardd().log();
  // Recovery resumes the operation; wait for it to end either way.
  json sys;
  for (int i = 0; i < 100; ++i) {
    sys = system("crash");
    if (!sys.is_object() || sys.value("state", "") != "composing") break;
    std::this_thread::sleep_for(200ms);
  }
  const auto held = sys.is_object() ? devicesOf(sys) : std::vector<std::string>{};
  // What the store says vm-b holds is what vm-b's kernel shows.
  EXPECT_TRUE(guestShowsCount(vm(1), held.size())) << sys.dump(2) << "\n" << yardd().log();
  // Recovery runs before yardd listens, before any agent can register again: yardd dials the agents it knew
  // (kept in <state-dir>/agents.json), so the resumed compose is verified in the guest and finishes.
  EXPECT_EQ(held.size(), 2u) << sys.dump(2) << "\n" << yardd().log();
  EXPECT_TRUE(guestSerials(vm(0)).empty());
}

// A guest that does not let go (its CPUs stopped, so its pciehp never completes the unplug QEMU asked for):
// the decompose's unbind ends at the switch timeout, the rollback's re-bind is refused (QEMU cannot cancel an
// unplug) and the device is quarantined in its system: QEMU still has it and the store still holds it. vm-a is trust-fabric here (no agent steps): the
// switch's unbind is what meets the guest. Last in the suite: it restarts yardd with other flags.
TEST_F(QemuYarddTest, ZAGuestThatDoesNotLetGoKeepsTheDeviceAndTheDecomposeFails) {
  yardd().kill();
  ASSERT_TRUE(yardd().start({"--switch-timeout", "2", "--host-policy", "vm-a=trust-fabric"})) << yardd().log();
  ASSERT_EQ(yardd().ctl("compose stuck --host vm-a --gpus 1").status, 0) << yardd().log();
  ASSERT_TRUE(guestShowsCount(vm(0), 1));
  const auto device = devicesOf(system("stuck")).at(0);
  auto qmp = [&](const std::string& command) -> Result<nlohmann::json> {
    SY_ASSIGN(auto s, qemu::QmpSession::connect(vm(0).qmpPath(), deadlineAfter(10s)));
    return s.execute(command, command == "qom-list" ? nlohmann::json{{"path", "/machine/peripheral"}} : nlohmann::json::object(), deadlineAfter(10s));
  };
  ASSERT_TRUE(qmp("stop"));
  auto r = yardd().ctl("decompose stuck");
  auto children = qmp("qom-list");
  const auto sys = system("stuck");
  ASSERT_TRUE(qmp("cont"));
  EXPECT_NE(r.status, 0) << r.out;
  ASSERT_TRUE(children);
  EXPECT_NE(children->dump().find("sy-" + device), std::string::npos) << "QEMU still has it: " << children->dump();
  ASSERT_TRUE(sys.is_object()) << r.out << "\n" << yardd().log();
  EXPECT_EQ(devicesOf(sys), std::vector<std::string>{device}) << sys.dump(2);
  // The rollback's re-bind is refused, not reported done: QEMU cannot cancel the unplug it was asked for.
  EXPECT_NE(r.out.find("is leaving VM vm-a"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace switchyard

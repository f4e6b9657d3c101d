// Jackrabbit Labs' CXL switch emulator (cse) as a process for tests: unmodified third-party code, built from
// ../shared/third-party/jackrabbit-cxl into the build tree (tests/CMakeLists.txt, target jackrabbit_cxl, with
// the multi-LD pooling patch), serving the FM-API on 127.0.0.1 at a port of its own. cse serves one fabric
// manager at a time, so every test starts its own. Its `jack` CLI is the independent judge of what a driver did.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/free_port.h"

extern char** environ;

namespace switchyard::testing {

inline std::filesystem::path jackrabbitBin() { return std::filesystem::path(SWITCHYARD_BINARY_DIR) / "jackrabbit-cxl" / "bin"; }

// Why cse cannot run here; empty when it can.
inline std::string cseUnavailable() {
  if (!std::filesystem::exists(jackrabbitBin() / "cse"))
    return "no cse at " + (jackrabbitBin() / "cse").string() + " (built only where ../shared/third-party/jackrabbit-cxl exists)";
  return {};
}

// A switch like the example config of ../shared/third-party/jackrabbit-cxl. By default: VCS 0 and 1 on host
// root ports 0 and 1 (8 vPPBs each), four GPU-like PCIe endpoints (10de:2330, class 0302h) on ports 2-5, one
// 4 GiB MLD of 4 LDs on port 6 (each LD 1 GiB: range 1 of 4 x 256 MB), port 7 empty; nothing bound. In
// general: `hosts` root ports first (VCS N on port N), then `gpus` GPU ports, `nics` NIC ports (ConnectX-7,
// 15b3:1021, class 0200h), `drives` NVMe ports (Samsung PM1733, 144d:a824, class 010802h), then the MLD (if
// `mld`), then one empty port.
struct CseConfig {
  int hosts = 2;
  int vppbsPerVcs = 8;
  int gpus = 4;
  int nics = 0;
  int drives = 0;
  bool mld = true;
  bool boundAtStart = false;  // VCS 0 vPPB 0 <- the first GPU port, VCS 0 vPPB 1 <- the MLD's LD 0
  [[nodiscard]] int firstNicPort() const { return hosts + gpus; }
  [[nodiscard]] int firstDrivePort() const { return hosts + gpus + nics; }
  [[nodiscard]] int mldPort() const { return hosts + gpus + nics + drives; }
  [[nodiscard]] int ports() const { return mldPort() + (mld ? 1 : 0) + 1; }
};

// A plain PCIe endpoint profile of the config: `name` with these ids and class.
inline std::string cseEndpointProfile(const char* name, int did, const char* vendor, const char* device, const char* subclass, const char* baseclass,
                                      const char* pi, int width) {
  std::ostringstream y;
  y << "  " << name << ":\n    did: " << did << "\n    port:\n      dv: 0\n      dt: 1\n      cv: 0x0\n      mlw: " << width
    << "\n      mls: 5\n    pcicfg:\n      vendor: " << vendor << "\n      device: " << device
    << "\n      command: 0x0506\n      status: 0x0010\n      revid: 0\n      pi: " << pi << "\n      subclass: " << subclass
    << "\n      baseclass: " << baseclass << "\n      cacheline: 0x10\n      type: 0x0\n      subvendor: " << vendor << "\n      subsystem: 0x0001\n";
  return y.str();
}

inline std::string cseYaml(const CseConfig& c) {
  std::ostringstream y;
  y << R"(---
devices:
  host_rp_x16:
    did: 0
    port:
      dv: 2
      dt: 2
      cv: 0x3
      mlw: 16
      mls: 5
      rootport: 1
    pcicfg:
      vendor: 0x1aed
      device: 0x1002
      command: 0x0506
      status: 0x0010
      revid: 0
      pi: 0x00
      subclass: 0x02
      baseclass: 0x05
      cacheline: 0x10
      type: 0x0
      subvendor: 0x1aed
      subsystem: 0x0001
  gpu_pcie_x16:
    did: 1
    port:
      dv: 0
      dt: 1
      cv: 0x0
      mlw: 16
      mls: 5
    pcicfg:
      vendor: 0x10de
      device: 0x2330
      command: 0x0506
      status: 0x0010
      revid: 0
      pi: 0x00
      subclass: 0x02
      baseclass: 0x03
      cacheline: 0x10
      type: 0x0
      subvendor: 0x10de
      subsystem: 0x16c1
  mld_4ld_4G:
    did: 2
    port:
      dv: 2
      dt: 5
      cv: 0x3
      mlw: 16
      mls: 5
    pcicfg:
      vendor: 0x1aed
      device: 0x2004
      command: 0x0506
      status: 0x0010
      revid: 0
      pi: 0x10
      subclass: 0x02
      baseclass: 0x05
      cacheline: 0x10
      type: 0x0
      subvendor: 0x1aed
      subsystem: 0x0005
    mld:
      mmap: 0
      memory_size: 0x100000000
      num: 4
      epc: 1
      ttr: 1
      granularity: 0
      rng1: "4,4,4,4"
      rng2: "0,0,0,0"
      epc_en: 1
      ttr_en: 1
      egress_mod_pcnt: 10
      egress_sev_pcnt: 25
      sample_interval: 8
      req_cmp_basis: 0
      comp_interval: 64
      bp_avg_pcnt: 42
      alloc_bw: "64,64,64,64"
      bw_limit: "ff,ff,ff,ff"
)" << cseEndpointProfile("nic_pcie_x16", 3, "0x15b3", "0x1021", "0x00", "0x02", "0x00", 16)
    << cseEndpointProfile("nvme_pcie_x4", 4, "0x144d", "0xa824", "0x08", "0x01", "0x02", 4) << R"(---
emulator:
  dir: "cxl-mmap"
---
switch:
  vid: 0xa1a2
  did: 0xb1b2
  svid: 0xc1c2
  ssid: 0xd1d2
  sn: 0xa1a2a3a4a5a6a7a8
  max_msg_size_n: 13
  msg_rsp_limit_n: 13
  bos_running: 0
  bos_pcnt: 0
  bos_opcode: 0
  bos_rc: 0
  bos_ext: 0
  ingress_port: 1
  num_ports: )" << c.ports() << R"(
  num_vcss: )" << c.hosts << R"(
  num_vppbs: )"
    << c.hosts * c.vppbsPerVcs << R"(
  num_decoders: 32
  mlw: 16
  speeds: 0x30
  mls: 5
---
ports:
)";
  for (int p = 0; p < c.hosts; ++p) y << "  " << p << ":\n    device: \"host_rp_x16\"\n";
  for (int p = c.hosts; p < c.hosts + c.gpus; ++p) y << "  " << p << ":\n    device: \"gpu_pcie_x16\"\n";
  for (int p = c.firstNicPort(); p < c.firstDrivePort(); ++p) y << "  " << p << ":\n    device: \"nic_pcie_x16\"\n";
  for (int p = c.firstDrivePort(); p < c.mldPort(); ++p) y << "  " << p << ":\n    device: \"nvme_pcie_x4\"\n";
  if (c.mld) y << "  " << c.mldPort() << ":\n    device: \"mld_4ld_4G\"\n";
  y << "---\nvcss:\n";
  for (int v = 0; v < c.hosts; ++v) {
    y << "  " << v << ":\n    state: 1\n    uspid: " << v << "\n    num_vppb: " << c.vppbsPerVcs << "\n    vppbs:\n";
    for (int k = 0; k < c.vppbsPerVcs; ++k) {
      int status = 0, port = 0, ld = 0;
      if (c.boundAtStart && v == 0 && k == 0) status = 2, port = c.hosts;
      if (c.boundAtStart && v == 0 && k == 1 && c.mld) status = 3, port = c.mldPort();
      y << "      " << k << ":\n        bind_status: " << status << "\n        ppid: " << port << "\n        ldid: " << ld << "\n";
    }
  }
  return y.str();
}

class CseProcess {
 public:
  // Starts cse with `config` in a scratch directory of its own and waits until it listens. Null (with
  // `why` set) when it does not come up.
  static std::unique_ptr<CseProcess> start(const CseConfig& config, std::string* why = nullptr) {
    auto dir = std::filesystem::temp_directory_path() / ("cse-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "cxl-mmap");
    std::ofstream(dir / "config.yaml") << cseYaml(config);
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto p = std::unique_ptr<CseProcess>(new CseProcess(dir));
      if (p->launch()) return p;
      if (why) *why = "cse did not listen: " + p->log();
    }
    return nullptr;
  }
  ~CseProcess() {
    stop();
    std::filesystem::remove_all(dir_);
  }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] std::string log() const {
    std::ifstream in(dir_ / "cse.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  // jack's view of one VCS's bound vPPBs: vPPB -> "PPID LDID Status" ("2    - Bound Physical Port").
  [[nodiscard]] std::map<int, std::string> boundVppbs(int vcs) const {
    const auto out = jack("show vcs -c " + std::to_string(vcs));
    std::map<int, std::string> rows;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      int vppb = -1;
      char rest[128] = {};
      if (std::sscanf(line.c_str(), " %d: %127[^\n]", &vppb, rest) == 2 && line.find("Bound") != std::string::npos) {
        std::string r(rest);
        r.erase(0, r.find_first_not_of(' '));
        rows[vppb] = r;
      }
    }
    return rows;
  }
  // Runs `jack ARGS -T 127.0.0.1 -P <port>` under a timeout (jack has none of its own) and returns its output.
  // jack itself crashes now and then when it connects while cse is still tearing down the previous FM's
  // connection (a SIGSEGV, seen on a loaded machine): a crashed judge is asked again, up to three times.
  [[nodiscard]] std::string jack(const std::string& args) const {
    const auto command = "timeout 10 " + (jackrabbitBin() / "jack").string() + " " + args + " -T 127.0.0.1 -P " + std::to_string(port_) + " 2>&1";
    std::string out;
    for (int attempt = 0; attempt < 3; ++attempt) {
      out.clear();
      int status = -1;
      if (FILE* pipe = ::popen(command.c_str(), "r")) {
        char buffer[4096];
        while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
        status = ::pclose(pipe);
      }
      const bool crashed = (WIFEXITED(status) && WEXITSTATUS(status) >= 128 && WEXITSTATUS(status) != 124) || WIFSIGNALED(status) ||
                           out.find("Segmentation fault") != std::string::npos;
      if (!crashed) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return out;
  }

 private:
  explicit CseProcess(std::filesystem::path dir) : dir_(std::move(dir)) {}
  static int& counter() {
    static int n = 0;
    return n;
  }
  static int freePort() { return freeLoopbackPort(); }
  // True when our cse listens on 127.0.0.1:port: /proc/net/tcp has a socket there in state 0A (LISTEN) and
  // its inode is one of our process's descriptors. Tests run side by side may pick the same free port: a
  // cse that lost the race exits, and the winner's socket must not be taken for ours.
  bool listening() const {
    std::ifstream in("/proc/net/tcp");
    char want[32];
    std::snprintf(want, sizeof want, "0100007F:%04X", port_);
    std::string line, inode;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, node;
      if (fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> node && local == want &&
          state == "0A")
        inode = node;
    }
    if (inode.empty()) return false;
    const std::string socket = "socket:[" + inode + "]";
    std::error_code ec;
    for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/fd", ec)) {
      std::error_code link;
      if (std::filesystem::read_symlink(fd.path(), link).string() == socket) return true;
    }
    return false;
  }
  bool launch() {
    port_ = freePort();
    const auto cse = (jackrabbitBin() / "cse").string();
    const auto portText = std::to_string(port_);
    const auto logPath = (dir_ / "cse.log").string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawn_file_actions_addchdir_np(&actions, dir_.c_str());
    // Never -q (as root it writes /sys/bus/pci/slots); always -T 127.0.0.1 (cse binds every interface otherwise).
    std::vector<std::string> args{cse, "-T", "127.0.0.1", "-P", portText, "-l", "-c", "config.yaml"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, cse.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return false;
    for (int i = 0; i < 300; ++i) {
      if (listening()) return true;
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop();
    return false;
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace switchyard::testing

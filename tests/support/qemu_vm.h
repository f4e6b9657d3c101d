// QEMU VMs booting Debian's own kernel with the test bed's initramfs (tests/qemu/make_guest.sh): the host
// side of a binding on a real Linux kernel. Each VM has hot-plug slots (pcie-root-port rp1..rpN), a QMP
// socket for the driver, and a shell on its virtio console for the test (commands run in the guest and
// their output comes back); the kernel's messages go to a log. User-mode networking stays on loopback: `restrict=on`, forwards bound to
// 127.0.0.1. Booting takes seconds (TCG, no KVM): a fixture boots its VMs once, side by side.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace switchyard::testing {

#ifdef SWITCHYARD_QEMU_KERNEL
inline std::string qemuKernel() { return SWITCHYARD_QEMU_KERNEL; }
inline std::string qemuInitrd() { return SWITCHYARD_QEMU_INITRD; }
inline std::string qemuBinary() { return SWITCHYARD_QEMU_BINARY; }
#else
inline std::string qemuKernel() { return {}; }
inline std::string qemuInitrd() { return {}; }
inline std::string qemuBinary() { return {}; }
#endif

// Why the test bed cannot run here; empty when it can.
inline std::string qemuUnavailable() {
  if (qemuKernel().empty()) return "built without the QEMU test bed (./setup.sh fetches the kernel; then re-run cmake)";
  for (const auto& f : {qemuKernel(), qemuInitrd(), qemuBinary()})
    if (!std::filesystem::exists(f)) return "missing " + f;
  return {};
}

struct VmConfig {
  std::string name;
  int slots = 4;
  int memoryMiB = 512;
  std::vector<std::pair<int, int>> forwards;  // 127.0.0.1:HOST -> guest port
  int guestForward = 0;                       // > 0: the guest reaches 127.0.0.1:<this> at 10.0.2.100:7390
  std::string append;                         // more of the kernel's command line
};

class QemuVm {
 public:
  // Starts the VM; ready() waits for its kernel to boot.
  static std::unique_ptr<QemuVm> start(const VmConfig& config, std::string* why = nullptr) {
    auto vm = std::unique_ptr<QemuVm>(new QemuVm(config));
    if (!vm->launch(why)) return nullptr;
    return vm;
  }
  ~QemuVm() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (console_ >= 0) ::close(console_);
    std::filesystem::remove_all(dir_);
  }
  QemuVm(const QemuVm&) = delete;
  QemuVm& operator=(const QemuVm&) = delete;

  [[nodiscard]] const std::string& name() const { return config_.name; }
  [[nodiscard]] std::string qmpPath() const { return (dir_ / "qmp.sock").string(); }
  [[nodiscard]] std::vector<std::string> slots() const {
    std::vector<std::string> out;
    for (int i = 1; i <= config_.slots; ++i) out.push_back(fmt::format("rp{}", i));
    return out;
  }
  [[nodiscard]] std::string log() const {
    std::ifstream in(dir_ / "qemu.log");
    std::stringstream s;
    s << in.rdbuf();
    std::ifstream kernel(dir_ / "kernel.log");
    s << "\n-- kernel --\n" << kernel.rdbuf();
    return s.str() + "\n-- shell --\n" + transcript_;
  }

  // Waits until the guest's /init says it is ready (its kernel booted, modules loaded).
  bool ready(std::chrono::seconds timeout, std::string* why = nullptr) {
    if (booted_) return true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string seen;
    while (seen.find("SWITCHYARD-GUEST-READY") == std::string::npos) {
      if (!readSome(seen, deadline)) {
        if (why) *why = fmt::format("VM {} did not boot in {} s: {}", config_.name, timeout.count(), log());
        return false;
      }
    }
    transcript_ += seen;
    booted_ = true;
    shell("true");  // what the shell prints when it starts (its banner) goes with this
    return true;
  }

  // Runs `command` in the guest's shell; what it printed (stdout and stderr), and its exit status.
  struct Ran {
    std::string out;
    int status = -1;
  };
  Ran shell(const std::string& command, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    const std::string marker = fmt::format("@@done-{}@@", ++commands_);
    const std::string line = "{ " + command + "\n} 2>&1\necho \"" + marker + " $?\"\n";
    if (::send(console_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) return {"(console write failed)", -1};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string seen;
    std::size_t at;
    while ((at = seen.find(marker)) == std::string::npos || seen.find('\n', at) == std::string::npos)
      if (!readSome(seen, deadline)) return {seen + "(no end of command within the timeout)", -1};
    transcript_ += seen;
    Ran r;
    r.out = seen.substr(0, at);
    std::erase(r.out, '\r');
    r.status = std::atoi(seen.c_str() + at + marker.size());
    return r;
  }
  // Polls `command` until it exits 0 or the timeout passes; whether it did.
  bool eventually(const std::string& command, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      if (shell(command).status == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }

 private:
  explicit QemuVm(VmConfig config) : config_(std::move(config)) {
    static int counter = 0;
    // Unix socket paths are short (108 bytes): keep the directory near the root of /tmp.
    dir_ = std::filesystem::path("/tmp") / fmt::format("syvm-{}-{}-{}", ::getpid(), config_.name, counter++);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  bool launch(std::string* why) {
    std::vector<std::string> args{qemuBinary(), "-machine", "q35", "-accel", "tcg", "-m", std::to_string(config_.memoryMiB), "-smp", "1",
                                  "-nodefaults", "-display", "none", "-no-reboot", "-kernel", qemuKernel(), "-initrd", qemuInitrd(), "-append",
                                  "console=ttyS0 quiet loglevel=3 panic=-1 " + config_.append};
    for (int i = 1; i <= config_.slots; ++i) args.insert(args.end(), {"-device", fmt::format("pcie-root-port,id=rp{0},slot={0},chassis={0}", i)});
    std::string net = "user,id=n0,restrict=on";
    for (const auto& [host, guest] : config_.forwards) net += fmt::format(",hostfwd=tcp:127.0.0.1:{}-:{}", host, guest);
    // guestfwd's "tcp:" target is one connection made when QEMU starts; "cmd:" runs the command for each
    // connection the guest opens, which is what a gRPC client (reconnecting, several streams) needs.
    if (config_.guestForward > 0) net += fmt::format(",guestfwd=tcp:10.0.2.100:7390-cmd:busybox nc 127.0.0.1 {}", config_.guestForward);
    args.insert(args.end(), {"-netdev", net, "-device", "virtio-net-pci,netdev=n0"});
    args.insert(args.end(), {"-qmp", fmt::format("unix:{},server=on,wait=off", qmpPath()), "-chardev",
                             fmt::format("socket,id=con,path={},server=on,wait=off", (dir_ / "console.sock").string()), "-device",
                             "virtio-serial-pci", "-device", "virtconsole,chardev=con", "-serial", fmt::format("file:{}", (dir_ / "kernel.log").string())});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const auto logPath = (dir_ / "qemu.log").string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const int rc = ::posix_spawn(&pid_, args[0].c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      if (why) *why = fmt::format("cannot start {}: {}", args[0], std::strerror(rc));
      return false;
    }
    // The console socket exists once QEMU has set up its devices; connect before the guest prints.
    const auto path = (dir_ / "console.sock").string();
    for (int i = 0; i < 1000; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        if (why) *why = "QEMU exited: " + log();
        return false;
      }
      if (std::filesystem::exists(path)) {
        console_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
        if (::connect(console_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return true;
        ::close(console_);
        console_ = -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (why) *why = "QEMU's console socket never appeared: " + log();
    return false;
  }

  bool readSome(std::string& into, std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{console_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char buffer[4096];
    const auto n = ::recv(console_, buffer, sizeof buffer, 0);
    if (n <= 0) return false;
    into.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  VmConfig config_;
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int console_ = -1;
  bool booted_ = false;
  int commands_ = 0;
  std::string transcript_;
};

}  // namespace switchyard::testing

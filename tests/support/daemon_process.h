// Runs the real yardd binary for integration tests: port 0, a private state directory, log captured.
#pragma once

#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace switchyard::testing {

struct CommandResult {
  int exitCode = -1;
  std::string out;
  std::string err;
};

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a command through /bin/sh, capturing stdout and stderr separately.
inline CommandResult runCommand(const std::string& command, const std::filesystem::path& scratch) {
  const auto errPath = scratch / "stderr.txt";
  CommandResult r;
  FILE* pipe = popen((command + " 2>" + errPath.string()).c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = readFile(errPath);
  return r;
}

class DaemonProcess {
 public:
  DaemonProcess(std::filesystem::path binary, std::filesystem::path stateDir)
      : binary_(std::move(binary)), stateDir_(std::move(stateDir)) {}
  ~DaemonProcess() { kill(SIGKILL); }

  // yardd serves gRPC over TLS (its flags, or its self-signed default) instead of --plaintext.
  void serveTls() { plaintext_ = false; }
  void setLogLevel(std::string level) { logLevel_ = std::move(level); }

  // Starts yardd and waits until it serves (or exits). Returns false if it did not come up.
  bool start(const std::vector<std::string>& extraArgs = {}) {
    // Plaintext gRPC on loopback unless a test asks for TLS, so that most tests' clients need no certificate.
    std::vector<std::string> args{"--listen", "127.0.0.1:0", "--state-dir", stateDir_.string(), "--log-level", logLevel_};
    if (plaintext_) args.push_back("--plaintext");
    args.insert(args.end(), extraArgs.begin(), extraArgs.end());
    return startProgram(args);
  }

  // Starts the binary with `programArgs` plus --port-file, and waits until it has written the port file
  // (any daemon that does, e.g. redfish-emulator).
  bool startProgram(const std::vector<std::string>& programArgs) {
    std::filesystem::remove(portFile());
    std::vector<std::string> args{binary_.string(), "--port-file", portFile().string()};
    args.insert(args.end(), programArgs.begin(), programArgs.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = logFile().string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&pid_, binary_.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return false;
    // Readiness poll: the daemon writes the port file once it serves.
    for (int i = 0; i < 1000; ++i) {
      if (std::filesystem::exists(portFile())) {
        port_ = std::stoi(readFile(portFile()));
        return true;
      }
      if (reaped(WNOHANG)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Waits up to `timeout` for the process to end by itself; true (and its exit code kept) if it did.
  bool waitExit(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (reaped(WNOHANG)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }
  // The signal that ended the process (0 if it exited, or is running).
  [[nodiscard]] int signaled() const { return signaled_; }

  void kill(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    (void)reaped(0);
  }

  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] int exitCode() const { return exitCode_; }
  [[nodiscard]] std::string log() const { return readFile(logFile()); }
  [[nodiscard]] std::filesystem::path logFile() const { return stateDir_ / "yardd.log"; }
  [[nodiscard]] std::filesystem::path portFile() const { return stateDir_ / "port"; }

 private:
  // Collects the process if it has ended (waitpid with `flags`), keeping how it ended.
  bool reaped(int flags) {
    int status = 0;
    if (waitpid(pid_, &status, flags) != pid_) return false;
    exitCode_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    signaled_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    pid_ = -1;
    return true;
  }

  std::filesystem::path binary_;
  bool plaintext_ = true;
  std::string logLevel_ = "debug";
  std::filesystem::path stateDir_;
  pid_t pid_ = -1;
  int port_ = 0;
  int exitCode_ = -1;
  int signaled_ = 0;
};

}  // namespace switchyard::testing

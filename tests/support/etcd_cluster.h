// Real etcd members (Debian's etcd-server) for tests: one or three on loopback, each with its own data
// directory and free ports, started and stopped by the test. With Security, clients reach them over TLS
// (optionally only with a client certificate the CA signed), and enableAuth() turns etcd's authentication on
// with etcdctl (Debian's etcd-client), as an operator would. `available()` says whether etcd is installed;
// a test that needs it skips without it, unless SWITCHYARD_REQUIRE_TOOLS=1 (./test.sh), where it fails.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "inventory/etcd/etcd_client.h"
#include "tests/support/free_port.h"

extern char** environ;

namespace switchyard::testing {

struct EtcdClusterSecurity {
  std::string certFile, keyFile;  // the members' certificate: clients reach them over https
  std::string caFile;             // the CA clients' certificates must chain to (with clientCertAuth)
  bool clientCertAuth = false;
  int authTokenTtlSeconds = 0;  // etcd's --auth-token-ttl (0: its default, 300)
  etcd::ClientSecurity client;  // what the cluster's own client (waitReady) presents
};

class EtcdCluster {
 public:
  static bool available() { return std::filesystem::exists("/usr/bin/etcd"); }
  static bool required() {
    const char* v = std::getenv("SWITCHYARD_REQUIRE_TOOLS");
    return v != nullptr && std::string(v) == "1";
  }

  // A port nothing listens on right now (etcd cannot bind port 0 and say which it got).
  static int freePort() { return freeLoopbackPort(); }

  using Security = EtcdClusterSecurity;

  EtcdCluster(std::filesystem::path dir, int members, Security security = {}) : dir_(std::move(dir)), security_(std::move(security)) {
    std::filesystem::create_directories(dir_);
    for (int i = 0; i < members; ++i) members_.push_back({fmt::format("m{}", i), freePort(), freePort(), -1});
  }
  ~EtcdCluster() {
    for (std::size_t i = 0; i < members_.size(); ++i) stop(i, SIGKILL);
  }
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // Starts every member and waits until the cluster answers a read.
  bool start() {
    for (std::size_t i = 0; i < members_.size(); ++i)
      if (!startMember(i)) return false;
    return waitReady(std::chrono::seconds(30));
  }

  bool startMember(std::size_t i) {
    auto& m = members_[i];
    std::string initial;
    for (const auto& o : members_) initial += fmt::format("{}{}=http://127.0.0.1:{}", initial.empty() ? "" : ",", o.name, o.peerPort);
    std::vector<std::string> args{"/usr/bin/etcd",
                                  "--name", m.name,
                                  "--data-dir", (dir_ / m.name).string(),
                                  "--listen-client-urls", clientUrl(i),
                                  "--advertise-client-urls", clientUrl(i),
                                  "--listen-peer-urls", fmt::format("http://127.0.0.1:{}", m.peerPort),
                                  "--initial-advertise-peer-urls", fmt::format("http://127.0.0.1:{}", m.peerPort),
                                  "--initial-cluster", initial,
                                  "--initial-cluster-state", "new",
                                  "--initial-cluster-token", dir_.filename().string(),
                                  "--max-txn-ops", "16384",
                                  "--heartbeat-interval", "100",
                                  "--election-timeout", "1000",
                                  "--log-level", "warn"};
    if (!security_.certFile.empty()) {
      for (const std::string& a : {"--cert-file", security_.certFile.c_str(), "--key-file", security_.keyFile.c_str()}) args.push_back(a);
      if (security_.clientCertAuth) for (const std::string& a : {"--client-cert-auth", "--trusted-ca-file", security_.caFile.c_str()}) args.push_back(a);
    }
    if (security_.authTokenTtlSeconds > 0) args.push_back(fmt::format("--auth-token-ttl={}", security_.authTokenTtlSeconds));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir_ / (m.name + ".log")).string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&m.pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0;
  }

  void stop(std::size_t i, int signal = SIGTERM) {
    auto& m = members_[i];
    if (m.pid <= 0) return;
    ::kill(m.pid, signal);
    int status = 0;
    waitpid(m.pid, &status, 0);
    m.pid = -1;
  }

  bool waitReady(std::chrono::seconds timeout) {
    etcd::Client client({endpoints(), std::chrono::milliseconds(500), security_.client});
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (client.range({"/ready-probe", {}, 1, false, false})) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Turns authentication on: a root user (etcd needs one) and `user` with read-write on `prefix`, through
  // etcdctl. Later reads by the cluster's own client need a user too.
  bool enableAuth(const std::string& user, const std::string& password, const std::string& prefix) {
    std::string endpoints;
    for (std::size_t i = 0; i < members_.size(); ++i) endpoints += (i ? "," : "") + clientUrl(i);
    std::string base = "ETCDCTL_API=3 /usr/bin/etcdctl --endpoints " + endpoints;
    if (!security_.client.caFile.empty()) base += " --cacert " + security_.client.caFile;
    if (!security_.client.certFile.empty()) base += " --cert " + security_.client.certFile + " --key " + security_.client.keyFile;
    const std::string log = " >> " + (dir_ / "etcdctl.log").string() + " 2>&1";
    for (const std::string& step : std::vector<std::string>{"user add root:root-" + password, "user grant-role root root", "role add switchyard",
                                    "role grant-permission switchyard --prefix=true readwrite " + prefix, "user add " + user + ":" + password,
                                    "user grant-role " + user + " switchyard", std::string("auth enable")})
      if (std::system((base + " " + step + log).c_str()) != 0) return false;
    security_.client.user = user;
    security_.client.password = password;
    return true;
  }

  [[nodiscard]] std::string clientUrl(std::size_t i) const {
    return fmt::format("{}://127.0.0.1:{}", security_.certFile.empty() ? "http" : "https", members_[i].clientPort);
  }
  [[nodiscard]] std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < members_.size(); ++i) out.push_back(clientUrl(i));
    return out;
  }
  // "etcd://127.0.0.1:P1,127.0.0.1:P2/prefix" for yardd --store.
  [[nodiscard]] std::string storeUrl(const std::string& prefix = "/switchyard/") const {
    std::string hosts;
    for (const auto& m : members_) hosts += fmt::format("{}127.0.0.1:{}", hosts.empty() ? "" : ",", m.clientPort);
    return (security_.certFile.empty() ? "etcd://" : "etcds://") + hosts + prefix;
  }
  [[nodiscard]] std::size_t size() const { return members_.size(); }
  // What a client needs to reach the cluster: the CA, the client certificate, the user enableAuth() made.
  [[nodiscard]] const etcd::ClientSecurity& clientSecurity() const { return security_.client; }

 private:
  struct Member {
    std::string name;
    int clientPort = 0;
    int peerPort = 0;
    pid_t pid = -1;
  };
  std::filesystem::path dir_;
  Security security_;
  std::vector<Member> members_;
};

}  // namespace switchyard::testing

// A loopback TCP proxy for putting latency and broken connections in front of a real peer (Jackrabbit's cse,
// a third-party process we cannot slow down or break from inside): every chunk a client sends is held for
// the latency set when it arrived, then forwarded; replies pass at once; the next N connections can be
// closed as they come. One thread accepts; one thread serves each connection, and never sleeps past a stop.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace switchyard::testing {

class DelayProxy {
 public:
  // Listens on 127.0.0.1, port 0, and forwards to 127.0.0.1:upstreamPort. Null when it cannot listen.
  static std::unique_ptr<DelayProxy> start(int upstreamPort) {
    auto p = std::unique_ptr<DelayProxy>(new DelayProxy(upstreamPort));
    p->listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(p->listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(p->listener_, 16) != 0 ||
        ::getsockname(p->listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return nullptr;
    p->port_ = ntohs(a.sin_port);
    p->acceptor_ = std::thread([raw = p.get()] { raw->acceptLoop(); });
    return p;
  }
  ~DelayProxy() {
    stop_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    std::lock_guard lock(mutex_);
    for (auto& t : sessions_) t.join();
    ::close(listener_);
  }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  void setLatency(std::chrono::milliseconds latency) { latencyMs_ = latency.count(); }
  void dropConnections(int n) { drop_ = n; }
  // Connections served so far (closed-at-once ones included).
  [[nodiscard]] int connections() const { return connections_; }

 private:
  using Clock = std::chrono::steady_clock;
  explicit DelayProxy(int upstreamPort) : upstreamPort_(upstreamPort) {}

  void acceptLoop() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      ++connections_;
      if (drop_ > 0) {
        --drop_;
        ::close(client);
        continue;
      }
      const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<std::uint16_t>(upstreamPort_));
      if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(server);
        ::close(client);
        continue;
      }
      int one = 1;
      ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard lock(mutex_);
      sessions_.emplace_back([this, client, server] { serve(client, server); });
    }
  }

  void serve(int client, int server) {
    struct Held {
      Clock::time_point due;
      std::vector<char> bytes;
    };
    std::deque<Held> held;
    char buffer[4096];
    bool open = true;
    while (open && !stop_) {
      int wait = 20;
      if (!held.empty()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(held.front().due - Clock::now()).count();
        wait = static_cast<int>(std::clamp<long long>(left, 0, 20));
      }
      pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      ::poll(fds, 2, wait);
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        const auto n = ::recv(client, buffer, sizeof buffer, 0);
        if (n <= 0) open = false;
        else held.push_back({Clock::now() + std::chrono::milliseconds(latencyMs_.load()), std::vector<char>(buffer, buffer + n)});
      }
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        const auto n = ::recv(server, buffer, sizeof buffer, 0);
        if (n <= 0 || ::send(client, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) open = false;
      }
      while (open && !held.empty() && held.front().due <= Clock::now()) {
        const auto& h = held.front().bytes;
        if (::send(server, h.data(), h.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(h.size())) open = false;
        held.pop_front();
      }
    }
    ::close(client);
    ::close(server);
  }

  int upstreamPort_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<long long> latencyMs_{0};
  std::atomic<int> drop_{0};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> sessions_;
};

}  // namespace switchyard::testing

#include "fabric/tcp_stream.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace switchyard::tcp {

// Milliseconds left until `deadline`, at least 0.
int msLeft(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1'000'000));
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

// Waits until `fd` is ready for `events` or the deadline passes.
Result<void> waitFor(int fd, short events, Deadline deadline, std::string_view what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, msLeft(deadline));
    if (n > 0) return {};
    if (n == 0) return fail(Code::kDeadlineExceeded, fmt::format("no answer to {} before the deadline", what));
    if (errno != EINTR) return fail(Code::kUnavailable, fmt::format("{}: poll: {}", what, std::strerror(errno)));
  }
}

Result<void> writeAll(int fd, std::span<const std::uint8_t> data, Deadline deadline, std::string_view what) {
  std::size_t done = 0;
  while (done < data.size()) {
    SY_TRY(waitFor(fd, POLLOUT, deadline, what));
    const auto n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(Code::kUnavailable, fmt::format("{}: send: {}", what, std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

Result<void> readExact(int fd, std::span<std::uint8_t> out, Deadline deadline, std::string_view what) {
  std::size_t done = 0;
  while (done < out.size()) {
    SY_TRY(waitFor(fd, POLLIN, deadline, what));
    const auto n = ::recv(fd, out.data() + done, out.size() - done, 0);
    if (n == 0) return fail(Code::kUnavailable, fmt::format("{}: the switch closed the connection", what));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(Code::kUnavailable, fmt::format("{}: recv: {}", what, std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

void quickAck(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
}

namespace {

using AddressList = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

// The addresses of host:port within `deadline`. A numeric address is read as it is (no lookup). A name is
// looked up on a thread of its own: getaddrinfo cannot be interrupted, so when the deadline passes first the
// call fails (kDeadlineExceeded) and the lookup's late answer is dropped when it comes.
Result<AddressList> resolveWithin(const std::string& host, std::uint16_t port, Deadline deadline) {
  const auto service = std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) == 0) return AddressList(found, ::freeaddrinfo);
  struct Lookup {
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    int rc = 0;
    addrinfo* found = nullptr;
    ~Lookup() {
      if (found) ::freeaddrinfo(found);
    }
  };
  auto lookup = std::make_shared<Lookup>();
  hints.ai_flags = 0;
  std::thread([lookup, host, service, hints] {
    addrinfo* result = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
    std::lock_guard lock(lookup->mutex);
    lookup->rc = rc;
    lookup->found = result;
    lookup->finished = true;
    lookup->done.notify_all();
  }).detach();
  std::unique_lock lock(lookup->mutex);
  if (!lookup->done.wait_until(lock, deadline, [&] { return lookup->finished; }))
    return fail(Code::kDeadlineExceeded, fmt::format("{}:{}: the name did not resolve before the call's deadline", host, port));
  if (lookup->rc != 0) return fail(Code::kUnavailable, fmt::format("{}:{}: {}", host, port, ::gai_strerror(lookup->rc)));
  return AddressList(std::exchange(lookup->found, nullptr), ::freeaddrinfo);
}

}  // namespace

Result<Fd> connectTcp(const std::string& host, std::uint16_t port, Deadline deadline) {
  SY_ASSIGN(AddressList guard, resolveWithin(host, port, deadline));
  addrinfo* const found = guard.get();
  std::string lastError = "no address";
  for (auto* a = found; a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (fd.get() < 0) continue;
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      lastError = std::strerror(errno);
      continue;
    }
    if (auto ready = waitFor(fd.get(), POLLOUT, deadline, "connect"); !ready) return fail(ready.error().wrap(fmt::format("{}:{}", host, port)));
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      lastError = std::strerror(err);
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
  }
  return fail(Code::kUnavailable, fmt::format("cannot connect to the switch at {}:{}: {}", host, port, lastError));
}

}  // namespace switchyard::tcp

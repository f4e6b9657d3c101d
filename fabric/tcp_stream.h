// A blocking TCP stream to a switch's management endpoint, where every step has a deadline: connect (the
// name looked up on a thread of its own, since getaddrinfo cannot be interrupted), write all, read exactly.
// Shared by the drivers that speak a binary protocol over TCP (Switchtec MRPC, CXL FM-API over MCTP).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "composer/model/error.h"

namespace switchyard::tcp {

using Deadline = std::chrono::steady_clock::time_point;

// An owned file descriptor, closed when it goes.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

// Milliseconds left until `deadline`, at least 0.
[[nodiscard]] int msLeft(Deadline deadline);
// Waits until `fd` is ready for `events` (poll's) or the deadline passes (kDeadlineExceeded).
[[nodiscard]] Result<void> waitFor(int fd, short events, Deadline deadline, std::string_view what);
[[nodiscard]] Result<void> writeAll(int fd, std::span<const std::uint8_t> data, Deadline deadline, std::string_view what);
[[nodiscard]] Result<void> readExact(int fd, std::span<std::uint8_t> out, Deadline deadline, std::string_view what);
// Acknowledges what arrives at once, until the kernel's next delayed ACK (Linux resets TCP_QUICKACK after
// some reads: set it again before each). A peer that writes a reply in several small send()s without
// TCP_NODELAY (cse) otherwise holds its second packet until our delayed ACK, 40 ms later.
void quickAck(int fd);
// A connected, non-blocking socket with TCP_NODELAY. kUnavailable when nothing accepts; kDeadlineExceeded
// when the lookup or the connect outlives the deadline.
[[nodiscard]] Result<Fd> connectTcp(const std::string& host, std::uint16_t port, Deadline deadline);

}  // namespace switchyard::tcp

#include "fabric/switchtec/mrpc_channel.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "fabric/switchtec/protocol.h"
#include "fabric/tcp_stream.h"

namespace switchyard::switchtec {
namespace {
using tcp::connectTcp;
using tcp::Fd;
using tcp::readExact;
using tcp::waitFor;
using tcp::writeAll;

// The management Ethernet transport: a command channel opened with an OPEN request, then one MRPC or GAS
// command and its reply at a time.
class EthChannel final : public MrpcChannel {
 public:
  static Result<std::unique_ptr<MrpcChannel>> open(const Endpoint& e, Deadline deadline) {
    SY_ASSIGN(Fd fd, connectTcp(e.host, e.port, deadline));
    auto header = encodeHeader({.function = EthFunction::kOpenRequest,
                                .packet = EthPacket::kOpen,
                                .serviceInstance = e.instance,
                                .serviceType = static_cast<std::uint8_t>(EthService::kCommand)});
    const auto what = fmt::format("opening a command channel to {}", e.describe());
    SY_TRY(writeAll(fd.get(), header, deadline, what));
    std::array<std::uint8_t, kEthHeaderSize> reply{};
    SY_TRY(readExact(fd.get(), reply, deadline, what));
    SY_ASSIGN(auto h, decodeHeader(reply));
    if (h.function != EthFunction::kOpenAccept || h.outputBytes != 0)
      return fail(Code::kUnavailable, fmt::format("{}: the switch refused (function {}, code {})", what, static_cast<int>(h.function), h.outputBytes));
    if (h.payloadBytes > 0) {
      Bytes skip(h.payloadBytes);
      SY_TRY(readExact(fd.get(), skip, deadline, what));
    }
    return std::unique_ptr<MrpcChannel>(new EthChannel(std::move(fd), e));
  }

  Result<MrpcReply> call(std::uint32_t commandWord, std::span<const std::uint8_t> payload, std::size_t outputBytes,
                         Deadline deadline) override {
    if (payload.size() + 4 > kMrpcMaxData + 4 || outputBytes > kMrpcMaxData)
      return fail(Code::kInvalidArgument, "MRPC command larger than the chip's 1 KiB window");
    ByteWriter body;
    body.u32(commandWord).bytes(payload);
    return exchange(EthFunction::kMrpcCommand, body.take(), outputBytes, deadline,
                    fmt::format("MRPC {:#x}", commandWord & kCommandMask));
  }

  Result<Bytes> readGas(std::uint32_t offset, std::uint16_t bytes, Deadline deadline) override {
    ByteWriter body;
    body.u32(kGasRead).u32(offset).u16(bytes).u16(0);
    SY_ASSIGN(auto reply, exchange(EthFunction::kGasCommand, body.take(), 0, deadline, fmt::format("GAS read at {:#x}", offset), bytes));
    if (reply.status != 0) return fail(Code::kUnavailable, fmt::format("GAS read at {:#x}: status {:#x}", offset, reply.status));
    return std::move(reply.output);
  }

  std::string describe() const override { return endpoint_.describe(); }

 private:
  EthChannel(Fd fd, Endpoint e) : fd_(std::move(fd)), endpoint_(std::move(e)) {}

  // Sends one command packet and reads its reply: status dword + `expectBytes` of output.
  Result<MrpcReply> exchange(EthFunction function, const Bytes& body, std::size_t outputBytes, Deadline deadline, const std::string& what,
                             std::size_t expectBytes = SIZE_MAX) {
    if (expectBytes == SIZE_MAX) expectBytes = outputBytes;
    auto header = encodeHeader({.function = function,
                                .packet = EthPacket::kCommand,
                                .payloadBytes = static_cast<std::uint16_t>(body.size()),
                                .outputBytes = static_cast<std::uint16_t>(outputBytes)});
    header.insert(header.end(), body.begin(), body.end());
    SY_TRY(writeAll(fd_.get(), header, deadline, what));
    std::array<std::uint8_t, kEthHeaderSize> rawHeader{};
    SY_TRY(readExact(fd_.get(), rawHeader, deadline, what));
    SY_ASSIGN(auto h, decodeHeader(rawHeader));
    if (h.packet == EthPacket::kOpen && h.function == EthFunction::kOpenClose)
      return fail(Code::kUnavailable, fmt::format("{}: the switch closed the channel", what));
    if (h.packet != EthPacket::kCommand) return fail(Code::kUnavailable, fmt::format("{}: unexpected packet type", what));
    if (h.payloadBytes < 4) return fail(Code::kUnavailable, fmt::format("{}: reply of {} bytes has no status", what, h.payloadBytes));
    Bytes payload(h.payloadBytes);
    SY_TRY(readExact(fd_.get(), payload, deadline, what));
    ByteReader r(payload);
    MrpcReply reply;
    reply.status = r.u32();
    if (payload.size() - 4 != expectBytes)
      return fail(Code::kUnavailable, fmt::format("{}: reply carries {} bytes, {} expected", what, payload.size() - 4, expectBytes));
    reply.output.assign(payload.begin() + 4, payload.end());
    return reply;
  }

  Fd fd_;
  Endpoint endpoint_;
};

// The kernel driver's character device: write the command dword and its input, read the return code and
// the output. The driver runs one MRPC per open file at a time.
class DeviceChannel final : public MrpcChannel {
 public:
  static Result<std::unique_ptr<MrpcChannel>> open(const Endpoint& e) {
    Fd fd(::open(e.devicePath.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0)
      return fail(errno == ENOENT ? Code::kNotFound : Code::kUnavailable,
                  fmt::format("{}: {}{}", e.devicePath, std::strerror(errno),
                              errno == EACCES ? " (the switchtec device needs root or the switchtec group)" : ""));
    return std::unique_ptr<MrpcChannel>(new DeviceChannel(std::move(fd), e));
  }
  Result<MrpcReply> call(std::uint32_t commandWord, std::span<const std::uint8_t> payload, std::size_t outputBytes,
                         Deadline deadline) override {
    const auto what = fmt::format("MRPC {:#x} on {}", commandWord & kCommandMask, endpoint_.devicePath);
    ByteWriter w;
    w.u32(commandWord & kCommandMask).bytes(payload);  // the kernel path names no PAX: the chip it opens
    const auto request = w.take();
    if (::write(fd_.get(), request.data(), request.size()) != static_cast<ssize_t>(request.size()))
      return fail(Code::kUnavailable, fmt::format("{}: write: {}", what, std::strerror(errno)));
    Bytes buffer(4 + outputBytes);
    for (;;) {
      SY_TRY(waitFor(fd_.get(), POLLIN, deadline, what));
      const auto n = ::read(fd_.get(), buffer.data(), buffer.size());
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n != static_cast<ssize_t>(buffer.size()))
        return fail(Code::kUnavailable, fmt::format("{}: read: {}", what, n < 0 ? std::strerror(errno) : "short reply"));
      break;
    }
    ByteReader r(buffer);
    MrpcReply reply;
    reply.status = r.u32();
    reply.output.assign(buffer.begin() + 4, buffer.end());
    return reply;
  }
  Result<Bytes> readGas(std::uint32_t offset, std::uint16_t, Deadline) override {
    return fail(Code::kInvalidArgument, fmt::format("GAS read at {:#x}: the kernel driver exposes it in sysfs, not here", offset));
  }
  std::string describe() const override { return endpoint_.devicePath; }

 private:
  DeviceChannel(Fd fd, Endpoint e) : fd_(std::move(fd)), endpoint_(std::move(e)) {}
  Fd fd_;
  Endpoint endpoint_;
};

}  // namespace

std::string Endpoint::describe() const {
  if (!devicePath.empty()) return devicePath;
  return instance ? fmt::format("{}:{}@{}", host, port, instance) : fmt::format("{}:{}", host, port);
}

Result<Endpoint> parseEndpoint(std::string_view text) {
  Endpoint e;
  if (text.empty()) return fail(Code::kInvalidArgument, "empty Switchtec endpoint (HOST[:PORT][@INSTANCE] or /dev/switchtecN)");
  if (text.front() == '/') {
    e.devicePath = std::string(text);
    return e;
  }
  auto parseNumber = [&](std::string_view s, unsigned max, auto& out, std::string_view what) -> Result<void> {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || v > max)
      return fail(Code::kInvalidArgument, fmt::format("Switchtec endpoint '{}': {} '{}' is not a number up to {}", text, what, s, max));
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    return {};
  };
  std::string_view rest = text;
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    SY_TRY(parseNumber(rest.substr(at + 1), 255, e.instance, "instance"));
    rest = rest.substr(0, at);
  }
  e.port = kEthPort;
  if (rest.starts_with('[')) {  // [IPv6]:PORT
    auto close = rest.find(']');
    if (close == std::string_view::npos) return fail(Code::kInvalidArgument, fmt::format("Switchtec endpoint '{}': unclosed '['", text));
    e.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (rest.starts_with(':')) SY_TRY(parseNumber(rest.substr(1), 65535, e.port, "port"));
  } else if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    e.host = std::string(rest.substr(0, colon));
    SY_TRY(parseNumber(rest.substr(colon + 1), 65535, e.port, "port"));
  } else {
    e.host = std::string(rest);
  }
  if (e.host.empty() || e.port == 0) return fail(Code::kInvalidArgument, fmt::format("Switchtec endpoint '{}': no host or port", text));
  return e;
}

Result<std::unique_ptr<MrpcChannel>> openChannel(const Endpoint& endpoint, Deadline deadline) {
  if (!endpoint.devicePath.empty()) return DeviceChannel::open(endpoint);
  return EthChannel::open(endpoint, deadline);
}

Result<std::unique_ptr<MrpcChannel>> MrpcPool::acquire(Deadline deadline) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    if (open_ < size_) {
      ++open_;
      lock.unlock();
      auto c = openChannel(endpoint_, deadline);
      if (!c) {
        lock.lock();
        --open_;
        freed_.notify_one();
      }
      return c;
    }
    if (freed_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() && open_ >= size_)
      return fail(Code::kDeadlineExceeded, fmt::format("all {} channels to {} stayed busy until the deadline", size_, endpoint_.describe()));
  }
}

void MrpcPool::release(std::unique_ptr<MrpcChannel> channel, bool healthy) {
  std::lock_guard lock(mutex_);
  if (healthy)
    idle_.push_back(std::move(channel));
  else
    --open_;
  freed_.notify_one();
}

Result<MrpcReply> MrpcPool::call(std::uint32_t commandWord, std::span<const std::uint8_t> payload, std::size_t outputBytes,
                                 Deadline deadline) {
  Result<MrpcReply> out = fail(Code::kInternal, "not run");
  SY_TRY(withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
    out = c.call(commandWord, payload, outputBytes, deadline);
    if (!out) return fail(out.error());
    return {};
  }));
  return out;
}

Result<void> MrpcPool::withChannel(Deadline deadline, const std::function<Result<void>(MrpcChannel&)>& work) {
  SY_ASSIGN(auto channel, acquire(deadline));
  // Counts each command the work sends.
  class Counting final : public MrpcChannel {
   public:
    Counting(MrpcChannel& inner, MrpcPool& pool) : inner_(inner), pool_(pool) {}
    Result<MrpcReply> call(std::uint32_t w, std::span<const std::uint8_t> p, std::size_t n, Deadline d) override {
      {
        std::lock_guard lock(pool_.mutex_);
        ++pool_.commands_;
      }
      auto r = inner_.call(w, p, n, d);
      if (!r) broken_ = true;
      return r;
    }
    Result<Bytes> readGas(std::uint32_t o, std::uint16_t b, Deadline d) override {
      auto r = inner_.readGas(o, b, d);
      if (!r && r.error().code != Code::kInvalidArgument) broken_ = true;
      return r;
    }
    std::string describe() const override { return inner_.describe(); }
    bool broken_ = false;

   private:
    MrpcChannel& inner_;
    MrpcPool& pool_;
  } counting(*channel, *this);
  auto result = work(counting);
  release(std::move(channel), !counting.broken_);
  return result;
}

Result<Bytes> MrpcPool::readGas(std::uint32_t offset, std::uint16_t bytes, Deadline deadline) {
  Result<Bytes> out = fail(Code::kInternal, "not run");
  SY_TRY(withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
    out = c.readGas(offset, bytes, deadline);
    if (!out) return fail(out.error());
    return {};
  }));
  return out;
}

std::uint64_t MrpcPool::commandsSent() const {
  std::lock_guard lock(mutex_);
  return commands_;
}

}  // namespace switchyard::switchtec

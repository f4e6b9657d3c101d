#include "fabric/cxl/fm_transport.h"

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "fabric/tcp_stream.h"

namespace switchyard::cxl {
namespace {

constexpr std::uint8_t kSom = 0x80, kEom = 0x40, kTagOwner = 0x08;

class MctpTcpSession final : public FmSession {
 public:
  MctpTcpSession(tcp::Fd fd, std::string describe) : fd_(std::move(fd)), describe_(std::move(describe)) {}

  Result<void> send(std::uint8_t type, std::span<const std::uint8_t> message, std::uint8_t tag, Deadline deadline) override {
    const auto packets = packetize(type, message, tag, true, sequence_);
    // cse reads a packet with one recv() and no MSG_WAITALL: send each with one send().
    for (std::size_t at = 0; at < packets.size(); at += kMctpPacketSize)
      SY_TRY(tcp::writeAll(fd_.get(), std::span(packets).subspan(at, kMctpPacketSize), deadline, describe_));
    return {};
  }

  Result<MctpMessage> receive(Deadline deadline) override {
    std::array<std::uint8_t, kMctpPacketSize> packet{};
    for (;;) {
      tcp::quickAck(fd_.get());
      SY_TRY(tcp::readExact(fd_.get(), packet, deadline, describe_));
      auto done = reader_.feed(packet);
      if (!done) return fail(done.error().wrap(describe_));
      if (*done) return std::move(**done);
    }
  }

  std::string describe() const override { return describe_; }

 private:
  tcp::Fd fd_;
  std::string describe_;
  std::uint8_t sequence_ = 0;
  MctpReassembler reader_;
};

class MctpTcpEndpoint final : public FmEndpoint {
 public:
  MctpTcpEndpoint(std::string host, std::uint16_t port) : host_(std::move(host)), port_(port) {}
  Result<std::unique_ptr<FmSession>> open(Deadline deadline) override {
    SY_ASSIGN(auto fd, tcp::connectTcp(host_, port_, deadline));
    return std::unique_ptr<FmSession>(new MctpTcpSession(std::move(fd), fmt::format("the CXL switch at {}", describe())));
  }
  std::string describe() const override { return fmt::format("{}:{}", host_, port_); }

 private:
  std::string host_;
  std::uint16_t port_;
};

}  // namespace

wire::Bytes packetize(std::uint8_t type, std::span<const std::uint8_t> body, std::uint8_t tag, bool tagOwner, std::uint8_t& sequence) {
  wire::Bytes out;
  std::size_t at = 0;
  bool first = true;
  do {
    const std::size_t room = first ? kMctpPacketPayload - 1 : kMctpPacketPayload;
    const std::size_t take = std::min(room, body.size() - at);
    const bool last = at + take == body.size();
    const std::uint8_t flags = static_cast<std::uint8_t>((first ? kSom : 0) | (last ? kEom : 0) | ((sequence & 3) << 4) |
                                                         (tagOwner ? kTagOwner : 0) | (tag & 7));
    const std::size_t start = out.size();
    out.insert(out.end(), {0x01, 0x00, 0x00, flags});
    if (first) out.push_back(type);
    out.insert(out.end(), body.begin() + static_cast<std::ptrdiff_t>(at), body.begin() + static_cast<std::ptrdiff_t>(at + take));
    out.resize(start + kMctpPacketSize, 0);
    at += take;
    sequence = static_cast<std::uint8_t>((sequence + 1) & 3);
    first = false;
  } while (at < body.size());
  return out;
}

Result<std::optional<MctpMessage>> MctpReassembler::feed(std::span<const std::uint8_t> packet) {
  if (packet.size() != kMctpPacketSize) return fail(Code::kUnavailable, fmt::format("MCTP packet of {} bytes, not {}", packet.size(), kMctpPacketSize));
  const std::uint8_t version = packet[0] & 0x0f, flags = packet[3];
  const bool som = flags & kSom, eom = flags & kEom;
  const std::uint8_t sequence = (flags >> 4) & 3, tag = flags & 7;
  const bool owner = flags & kTagOwner;
  const auto payload = packet.subspan(4);
  if (version != 1) {
    partial_.reset();
    return fail(Code::kUnavailable, fmt::format("MCTP header version {}, not 1", version));
  }
  if (som) {
    // A start while another message is open: the other's end was lost (DSP0236 drops it).
    partial_ = MctpMessage{payload[0], tag, owner, wire::Bytes(payload.begin() + 1, payload.end())};
  } else {
    if (!partial_) return fail(Code::kUnavailable, "MCTP packet continues a message that never started");
    if (sequence != nextSequence_ || tag != partial_->tag || owner != partial_->tagOwner) {
      partial_.reset();
      return fail(Code::kUnavailable, fmt::format("MCTP packet out of sequence ({} where {} was due)", sequence, nextSequence_));
    }
    if (partial_->body.size() + payload.size() > kMaxMctpMessage) {
      partial_.reset();
      return fail(Code::kUnavailable, fmt::format("MCTP message longer than {} bytes", kMaxMctpMessage));
    }
    partial_->body.insert(partial_->body.end(), payload.begin(), payload.end());
  }
  nextSequence_ = static_cast<std::uint8_t>((sequence + 1) & 3);
  if (!eom) return std::optional<MctpMessage>{};
  auto done = std::move(partial_);
  partial_.reset();
  return done;
}

Result<std::unique_ptr<FmEndpoint>> mctpTcpEndpoint(std::string_view hostPort) {
  const auto colon = hostPort.rfind(':');
  std::string host(hostPort.substr(0, colon == std::string_view::npos ? hostPort.size() : colon));
  unsigned port = 2508;
  if (colon != std::string_view::npos) {
    const auto digits = hostPort.substr(colon + 1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec != std::errc{} || p != digits.data() + digits.size() || port == 0 || port > 65535)
      return fail(Code::kInvalidArgument, fmt::format("CXL FM endpoint '{}': '{}' is not a TCP port", hostPort, digits));
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) return fail(Code::kInvalidArgument, fmt::format("CXL FM endpoint '{}': expected HOST[:PORT]", hostPort));
  return std::unique_ptr<FmEndpoint>(new MctpTcpEndpoint(std::move(host), static_cast<std::uint16_t>(port)));
}

}  // namespace switchyard::cxl

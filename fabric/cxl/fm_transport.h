// How FM-API messages reach a CXL switch. A transport opens a session (one connection: real switches and
// cse serve few fabric managers at once, so a driver holds one only for the length of a call) and exchanges
// one request for its reply at a time, each within a deadline.
//
// The transport here is MCTP carried over TCP in the framing of Jackrabbit Labs' cse: the stream is a
// sequence of fixed 68-byte packets, each a 4-byte MCTP transport header (DSP0236: version 1, destination
// and source EIDs, then SOM, EOM, a 2-bit packet sequence number, tag owner and a 3-bit message tag) and 64
// bytes of payload, zero padded. A message's first payload byte is its MCTP message type (07h FM-API, 08h
// CCI); its length is the CCI header's, so a reader reassembles packets from SOM to EOM and the CCI
// decoder ignores the padding. Linux AF_MCTP (I2C, I3C or PCIe VDM to a real switch) is another
// implementation of FmSession, with the kernel doing this framing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "composer/model/error.h"
#include "fabric/bytes.h"

namespace switchyard::cxl {

using Deadline = std::chrono::steady_clock::time_point;

inline constexpr std::size_t kMctpPacketSize = 68;
inline constexpr std::size_t kMctpPacketPayload = 64;
// The largest message a reader keeps (FM-API messages are at most 2^20 bytes; cse's at most 8 KiB).
inline constexpr std::size_t kMaxMctpMessage = 1 << 20;

struct MctpMessage {
  std::uint8_t type = 0;
  std::uint8_t tag = 0;
  bool tagOwner = false;
  wire::Bytes body;  // after the type byte; may end in padding
};

// The packets of one message, `sequence` continuing the connection's packet count (and advanced past them).
[[nodiscard]] wire::Bytes packetize(std::uint8_t type, std::span<const std::uint8_t> body, std::uint8_t tag, bool tagOwner, std::uint8_t& sequence);

// Reassembles messages from packets. A packet that breaks the framing (wrong version, a middle packet with
// no start, a sequence gap inside a message, a message past kMaxMctpMessage) is an error and drops the
// message in progress.
class MctpReassembler {
 public:
  [[nodiscard]] Result<std::optional<MctpMessage>> feed(std::span<const std::uint8_t> packet);

 private:
  std::optional<MctpMessage> partial_;
  std::uint8_t nextSequence_ = 0;
};

// One connection to a switch's FM endpoint. Requests may be pipelined: up to 8 sent (MCTP's 3-bit tag)
// before their replies are read, each reply matched to its request by tag.
class FmSession {
 public:
  virtual ~FmSession() = default;
  // Sends one request message of `type` with `tag` (the tag owner's).
  [[nodiscard]] virtual Result<void> send(std::uint8_t type, std::span<const std::uint8_t> message, std::uint8_t tag, Deadline deadline) = 0;
  // The next whole message from the switch. kDeadlineExceeded when none came in time (the switch may still
  // act on what was sent); kUnavailable when the connection broke or its framing did. After either, the
  // session is not used again.
  [[nodiscard]] virtual Result<MctpMessage> receive(Deadline deadline) = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

class FmEndpoint {
 public:
  virtual ~FmEndpoint() = default;
  [[nodiscard]] virtual Result<std::unique_ptr<FmSession>> open(Deadline deadline) = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

// "HOST:PORT" of a switch's FM endpoint served as MCTP over TCP (cse's default port is 2508).
[[nodiscard]] Result<std::unique_ptr<FmEndpoint>> mctpTcpEndpoint(std::string_view hostPort);

}  // namespace switchyard::cxl

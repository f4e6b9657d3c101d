// FM-API commands over one session, typed: each sends its request, checks that the reply answers it, and
// reads it. A return code other than success is an error naming the command and the code (kFailedPrecondition
// for "invalid input", which is how a switch refuses a bind to a vPPB or port already in use; kUnavailable
// for the rest). Commands that do not depend on each other are pipelined: up to 8 in flight (MCTP's tags),
// so N reads cost about one round trip, not N. Bind and Unbind run in the background on a switch (return
// code 0001h); startAll only starts them: the caller confirms them by reading their VCSs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "composer/model/call_options.h"
#include "fabric/cxl/fm_api.h"
#include "fabric/cxl/fm_transport.h"

namespace switchyard::cxl {

struct FmRequest {
  Opcode opcode;
  Bytes payload;
};

struct ConfigRead {
  std::uint8_t port = 0;
  std::uint16_t offset = 0;
};

class FmClient {
 public:
  // `replyTimeout` bounds the wait for each reply, within the call's deadline: a switch that loses a request
  // or its reply (cse does, now and then, under load) fails the batch in seconds, not at a long deadline.
  FmClient(FmSession& session, Dialect dialect, std::string switchName, Duration replyTimeout = kDefaultReplyTimeout)
      : session_(session), dialect_(dialect), name_(std::move(switchName)), replyTimeout_(replyTimeout) {}
  static constexpr Duration kDefaultReplyTimeout = std::chrono::seconds(5);

  [[nodiscard]] Result<SwitchIdentity> identifySwitch(Deadline deadline);
  [[nodiscard]] Result<std::vector<PortState>> physicalPortState(std::span<const std::uint8_t> ports, Deadline deadline);
  // The VCSs asked for, all of their vPPBs (in requests of at most 7 VCSs, as CXL 2.0 allows per reply).
  [[nodiscard]] Result<std::vector<VirtualSwitch>> virtualSwitches(std::span<const std::uint8_t> vcss, Deadline deadline);
  // Configuration-space dwords behind downstream ports, pipelined.
  [[nodiscard]] Result<std::vector<std::uint32_t>> readConfig(std::span<const ConfigRead> reads, Deadline deadline);
  // Sends every request, pipelined, and returns each reply's return code (a switch refusing one refuses
  // only that one). For Bind and Unbind: 0000h done, 0001h started in the background, 0006h busy.
  [[nodiscard]] Result<std::vector<std::uint16_t>> startAll(std::span<const FmRequest> requests, Deadline deadline);
  [[nodiscard]] Result<BackgroundOperation> backgroundOperation(Deadline deadline);
  [[nodiscard]] Result<LdInfo> ldInfo(std::uint8_t port, Deadline deadline);
  [[nodiscard]] Result<LdAllocations> ldAllocations(std::uint8_t port, Deadline deadline);
  [[nodiscard]] Result<void> setLdAllocations(std::uint8_t port, std::uint8_t startLd, std::span<const LdAllocation> lds, Deadline deadline);

  // Whether a reply did not come within the reply timeout (the session is not used again).
  [[nodiscard]] bool lostReply() const { return lostReply_; }
  // Commands sent through this client (what a compose's cost in round trips is counted by).
  [[nodiscard]] std::uint64_t commandsSent() const { return sent_; }
  // The error for a command the switch answered with `returnCode`.
  [[nodiscard]] Error refused(Opcode opcode, std::uint16_t returnCode) const;

 private:
  // Every request, pipelined; the replies in the requests' order, whatever their return codes.
  [[nodiscard]] Result<std::vector<CciMessage>> callAll(std::span<const FmRequest> requests, Deadline deadline);
  // The replies' payloads when every request succeeded.
  [[nodiscard]] Result<std::vector<Bytes>> succeedAll(std::span<const FmRequest> requests, Deadline deadline);
  [[nodiscard]] Result<Bytes> succeed(Opcode opcode, Bytes payload, Deadline deadline);
  [[nodiscard]] Result<Bytes> tunnel(std::uint8_t port, Opcode inner, std::span<const std::uint8_t> payload, Deadline deadline);


  FmSession& session_;
  Dialect dialect_;
  std::string name_;
  Duration replyTimeout_;
  std::uint8_t tag_ = 0;
  std::uint64_t sent_ = 0;
  bool lostReply_ = false;
};

}  // namespace switchyard::cxl

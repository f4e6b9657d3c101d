// FM-API commands over one session, typed: each sends its request, checks that the reply answers it, and
// reads it. A return code other than success is an error naming the command and the code (kFailedPrecondition
// for "invalid input", which is how a switch refuses a bind to a vPPB or port already in use; kUnavailable
// for the rest). Bind and Unbind run in the background on a switch (return code 0001h): the client polls
// Background Operation Status until the operation is done, within the deadline.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fabric/cxl/fm_api.h"
#include "fabric/cxl/fm_transport.h"

namespace switchyard::cxl {

class FmClient {
 public:
  FmClient(FmSession& session, Dialect dialect, std::string switchName) : session_(session), dialect_(dialect), name_(std::move(switchName)) {}

  [[nodiscard]] Result<SwitchIdentity> identifySwitch(Deadline deadline);
  [[nodiscard]] Result<std::vector<PortState>> physicalPortState(std::span<const std::uint8_t> ports, Deadline deadline);
  // The VCSs asked for, all of their vPPBs (in requests of at most 7 VCSs, as CXL 2.0 allows per reply).
  [[nodiscard]] Result<std::vector<VirtualSwitch>> virtualSwitches(std::span<const std::uint8_t> vcss, Deadline deadline);
  [[nodiscard]] Result<std::uint32_t> readConfig(std::uint8_t port, std::uint16_t byteOffset, Deadline deadline);
  [[nodiscard]] Result<void> bind(std::uint8_t vcs, std::uint8_t vppb, std::uint8_t port, std::uint16_t ld, Deadline deadline);
  [[nodiscard]] Result<void> unbind(std::uint8_t vcs, std::uint8_t vppb, UnbindOption option, Deadline deadline);
  [[nodiscard]] Result<LdInfo> ldInfo(std::uint8_t port, Deadline deadline);
  [[nodiscard]] Result<LdAllocations> ldAllocations(std::uint8_t port, Deadline deadline);
  [[nodiscard]] Result<void> setLdAllocations(std::uint8_t port, std::uint8_t startLd, std::span<const LdAllocation> lds, Deadline deadline);

  // Commands sent through this client (what a compose's cost in round trips is counted by).
  [[nodiscard]] std::uint64_t commandsSent() const { return sent_; }

 private:
  // One command; the reply's payload when it succeeded (or started in the background, when allowed).
  [[nodiscard]] Result<CciMessage> call(Opcode opcode, std::span<const std::uint8_t> payload, Deadline deadline);
  [[nodiscard]] Result<Bytes> succeed(Opcode opcode, std::span<const std::uint8_t> payload, Deadline deadline);
  [[nodiscard]] Result<Bytes> tunnel(std::uint8_t port, Opcode inner, std::span<const std::uint8_t> payload, Deadline deadline);
  // Runs a Bind or Unbind: waits out its background operation, and a busy switch, until the deadline.
  [[nodiscard]] Result<void> runInBackground(Opcode opcode, std::span<const std::uint8_t> payload, Deadline deadline);
  [[nodiscard]] Error refused(Opcode opcode, std::uint16_t returnCode) const;

  FmSession& session_;
  Dialect dialect_;
  std::string name_;
  std::uint8_t tag_ = 0;
  std::uint64_t sent_ = 0;
};

}  // namespace switchyard::cxl

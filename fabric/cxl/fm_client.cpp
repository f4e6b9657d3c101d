#include "fabric/cxl/fm_client.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

namespace switchyard::cxl {

Error FmClient::refused(Opcode opcode, std::uint16_t returnCode) const {
  const Code code = returnCode == rc::kInvalidInput ? Code::kFailedPrecondition : Code::kUnavailable;
  return Error{code, fmt::format("{}: {} answered {}", name_, toString(opcode), describeReturnCode(returnCode))};
}

Result<CciMessage> FmClient::call(Opcode opcode, std::span<const std::uint8_t> payload, Deadline deadline) {
  const std::uint8_t tag = tag_;
  tag_ = static_cast<std::uint8_t>((tag_ + 1) & 7);
  const auto request = encodeRequest(opcode, tag, payload);
  ++sent_;
  auto raw = session_.exchange(kMctpTypeFmApi, request, tag, deadline);
  if (!raw) return fail(raw.error().wrap(fmt::format("{}: {}", name_, toString(opcode))));
  auto reply = decodeMessage(*raw, dialect_);
  if (!reply) return fail(reply.error().wrap(fmt::format("{}: {} reply", name_, toString(opcode))));
  if (!reply->response || reply->opcode != static_cast<std::uint16_t>(opcode) || reply->tag != tag)
    return fail(Code::kUnavailable, fmt::format("{}: the reply to {} (tag {}) is {} {:04x}h with tag {}", name_, toString(opcode), tag,
                                                reply->response ? "a response to" : "a request", reply->opcode, reply->tag));
  return reply;
}

Result<Bytes> FmClient::succeed(Opcode opcode, std::span<const std::uint8_t> payload, Deadline deadline) {
  SY_ASSIGN(auto reply, call(opcode, payload, deadline));
  if (reply.returnCode != rc::kSuccess) return fail(refused(opcode, reply.returnCode));
  return std::move(reply.payload);
}

Result<SwitchIdentity> FmClient::identifySwitch(Deadline deadline) {
  SY_ASSIGN(auto payload, succeed(Opcode::kIdentifySwitchDevice, {}, deadline));
  return parseIdentifySwitch(payload);
}

Result<std::vector<PortState>> FmClient::physicalPortState(std::span<const std::uint8_t> ports, Deadline deadline) {
  SY_ASSIGN(auto payload, succeed(Opcode::kGetPhysicalPortState, getPhysicalPortStateRequest(ports), deadline));
  SY_ASSIGN(auto states, parsePhysicalPortState(payload));
  if (states.size() != ports.size())
    return fail(Code::kUnavailable, fmt::format("{}: Get Physical Port State answered {} ports of {}", name_, states.size(), ports.size()));
  return states;
}

Result<std::vector<VirtualSwitch>> FmClient::virtualSwitches(std::span<const std::uint8_t> vcss, Deadline deadline) {
  std::vector<VirtualSwitch> all;
  for (std::size_t at = 0; at < vcss.size(); at += 7) {
    const auto some = vcss.subspan(at, std::min<std::size_t>(7, vcss.size() - at));
    SY_ASSIGN(auto payload, succeed(Opcode::kGetVirtualSwitchInfo, getVirtualSwitchInfoRequest(some), deadline));
    SY_ASSIGN(auto part, parseVirtualSwitchInfo(payload));
    if (part.size() != some.size())
      return fail(Code::kUnavailable, fmt::format("{}: Get Virtual CXL Switch Info answered {} VCSs of {}", name_, part.size(), some.size()));
    for (std::size_t i = 0; i < part.size(); ++i)
      if (part[i].id != some[i])
        return fail(Code::kUnavailable, fmt::format("{}: Get Virtual CXL Switch Info answered VCS {} where {} was asked", name_, part[i].id, some[i]));
    std::move(part.begin(), part.end(), std::back_inserter(all));
  }
  return all;
}

Result<std::uint32_t> FmClient::readConfig(std::uint8_t port, std::uint16_t byteOffset, Deadline deadline) {
  SY_ASSIGN(auto payload, succeed(Opcode::kPpbConfigRequest, ppbConfigReadRequest(port, byteOffset, dialect_), deadline));
  return parsePpbConfigRead(payload);
}

Result<void> FmClient::runInBackground(Opcode opcode, std::span<const std::uint8_t> payload, Deadline deadline) {
  auto pause = std::chrono::milliseconds(1);
  auto wait = [&]() -> Result<void> {
    if (std::chrono::steady_clock::now() + pause >= deadline)
      return fail(Code::kDeadlineExceeded, fmt::format("{}: {} did not finish before the call's deadline", name_, toString(opcode)));
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
    return {};
  };
  for (;;) {
    SY_ASSIGN(auto reply, call(opcode, payload, deadline));
    if (reply.returnCode == rc::kSuccess) return {};
    if (reply.returnCode == rc::kBusy) {  // another background operation runs: wait for it, then ask again
      SY_TRY(wait());
      continue;
    }
    if (reply.returnCode != rc::kBackgroundStarted) return fail(refused(opcode, reply.returnCode));
    break;
  }
  for (;;) {
    SY_ASSIGN(auto status, succeed(Opcode::kBackgroundOperationStatus, {}, deadline));
    SY_ASSIGN(auto op, parseBackgroundOperationStatus(status));
    if (!op.running && op.percent == 100) {
      if (op.opcode != static_cast<std::uint16_t>(opcode))
        return fail(Code::kUnavailable, fmt::format("{}: {} started in the background, and the last background operation is {:04x}h", name_,
                                                    toString(opcode), op.opcode));
      if (op.returnCode != rc::kSuccess) return fail(refused(opcode, op.returnCode));
      return {};
    }
    SY_TRY(wait());
  }
}

Result<void> FmClient::bind(std::uint8_t vcs, std::uint8_t vppb, std::uint8_t port, std::uint16_t ld, Deadline deadline) {
  return runInBackground(Opcode::kBindVppb, bindVppbRequest(vcs, vppb, port, ld), deadline);
}

Result<void> FmClient::unbind(std::uint8_t vcs, std::uint8_t vppb, UnbindOption option, Deadline deadline) {
  return runInBackground(Opcode::kUnbindVppb, unbindVppbRequest(vcs, vppb, option), deadline);
}

Result<Bytes> FmClient::tunnel(std::uint8_t port, Opcode inner, std::span<const std::uint8_t> payload, Deadline deadline) {
  const auto innerRequest = encodeRequest(inner, 0, payload);
  SY_ASSIGN(auto outer, succeed(Opcode::kTunnelManagementCommand, tunnelRequest(port, innerRequest, dialect_), deadline));
  SY_ASSIGN(auto innerBytes, parseTunnelResponse(outer, dialect_));
  auto reply = decodeMessage(innerBytes, dialect_);
  if (!reply) return fail(reply.error().wrap(fmt::format("{}: port {}: {} reply", name_, port, toString(inner))));
  if (!reply->response || reply->opcode != static_cast<std::uint16_t>(inner))
    return fail(Code::kUnavailable, fmt::format("{}: port {}: the tunnelled reply answers {:04x}h, not {}", name_, port, reply->opcode, toString(inner)));
  if (reply->returnCode != rc::kSuccess) return fail(refused(inner, reply->returnCode).wrap(fmt::format("port {}", port)));
  return std::move(reply->payload);
}

Result<LdInfo> FmClient::ldInfo(std::uint8_t port, Deadline deadline) {
  SY_ASSIGN(auto payload, tunnel(port, Opcode::kGetLdInfo, {}, deadline));
  return parseLdInfo(payload);
}

Result<LdAllocations> FmClient::ldAllocations(std::uint8_t port, Deadline deadline) {
  SY_ASSIGN(auto payload, tunnel(port, Opcode::kGetLdAllocations, getLdAllocationsRequest(), deadline));
  return parseLdAllocations(payload);
}

Result<void> FmClient::setLdAllocations(std::uint8_t port, std::uint8_t startLd, std::span<const LdAllocation> lds, Deadline deadline) {
  SY_TRY(tunnel(port, Opcode::kSetLdAllocations, setLdAllocationsRequest(startLd, lds), deadline));
  return {};
}

}  // namespace switchyard::cxl

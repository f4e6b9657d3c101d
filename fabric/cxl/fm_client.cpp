#include "fabric/cxl/fm_client.h"

#include <algorithm>
#include <array>
#include <optional>

#include <fmt/format.h>

namespace switchyard::cxl {

Error FmClient::refused(Opcode opcode, std::uint16_t returnCode) const {
  const Code code = returnCode == rc::kInvalidInput ? Code::kFailedPrecondition : Code::kUnavailable;
  return Error{code, fmt::format("{}: {} answered {}", name_, toString(opcode), describeReturnCode(returnCode))};
}

Result<std::vector<CciMessage>> FmClient::callAll(std::span<const FmRequest> requests, Deadline deadline) {
  constexpr std::size_t kTags = 8;  // MCTP's 3-bit message tag: at most 8 requests in flight
  std::vector<std::optional<CciMessage>> replies(requests.size());
  std::array<std::optional<std::size_t>, kTags> inFlight{};  // tag -> request index
  std::size_t next = 0, done = 0;
  auto sendNext = [&]() -> Result<void> {
    const std::uint8_t tag = tag_;
    tag_ = static_cast<std::uint8_t>((tag_ + 1) & 7);
    const auto& r = requests[next];
    ++sent_;
    if (auto s = session_.send(kMctpTypeFmApi, encodeRequest(r.opcode, tag, r.payload), tag, deadline); !s)
      return fail(s.error().wrap(fmt::format("{}: {}", name_, toString(r.opcode))));
    inFlight[tag] = next++;
    return {};
  };
  while (next < requests.size() && next < kTags) SY_TRY(sendNext());
  while (done < requests.size()) {
    const Deadline replyBy = std::min(deadline, deadlineAfter(replyTimeout_));
    auto message = session_.receive(replyBy);
    if (!message && message.error().code == Code::kDeadlineExceeded && replyBy < deadline) {
      lostReply_ = true;
      return fail(Code::kUnavailable, fmt::format("{}: no reply to {} within {} ms ({} of {} replies missing): the switch lost a request or its reply", name_,
                                                  toString(requests.front().opcode), std::chrono::duration_cast<std::chrono::milliseconds>(replyTimeout_).count(),
                                                  requests.size() - done, requests.size()));
    }
    if (!message) return fail(message.error().wrap(fmt::format("{}: waiting for {} of {} replies ({} first)", name_, requests.size() - done, requests.size(), toString(requests.front().opcode))));
    if (message->type != kMctpTypeFmApi || message->tagOwner || !inFlight[message->tag & 7])
      return fail(Code::kUnavailable, fmt::format("{}: a message of type {:02x}h with tag {} answers no request in flight", name_, message->type, message->tag));
    const std::size_t index = *inFlight[message->tag & 7];
    const Opcode opcode = requests[index].opcode;
    auto reply = decodeMessage(message->body, dialect_);
    if (!reply) return fail(reply.error().wrap(fmt::format("{}: {} reply", name_, toString(opcode))));
    if (!reply->response || reply->opcode != static_cast<std::uint16_t>(opcode) || reply->tag != message->tag)
      return fail(Code::kUnavailable, fmt::format("{}: the reply to {} (tag {}) is {} {:04x}h with tag {}", name_, toString(opcode), message->tag,
                                                  reply->response ? "a response to" : "a request", reply->opcode, reply->tag));
    inFlight[message->tag & 7].reset();
    replies[index] = std::move(*reply);
    ++done;
    if (next < requests.size()) SY_TRY(sendNext());
  }
  std::vector<CciMessage> out;
  out.reserve(replies.size());
  for (auto& r : replies) out.push_back(std::move(*r));
  return out;
}

Result<std::vector<Bytes>> FmClient::succeedAll(std::span<const FmRequest> requests, Deadline deadline) {
  SY_ASSIGN(auto replies, callAll(requests, deadline));
  std::vector<Bytes> out;
  out.reserve(replies.size());
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (replies[i].returnCode != rc::kSuccess) return fail(refused(requests[i].opcode, replies[i].returnCode));
    out.push_back(std::move(replies[i].payload));
  }
  return out;
}

Result<Bytes> FmClient::succeed(Opcode opcode, Bytes payload, Deadline deadline) {
  const FmRequest one[] = {{opcode, std::move(payload)}};
  SY_ASSIGN(auto replies, succeedAll(one, deadline));
  return std::move(replies.front());
}

Result<SwitchIdentity> FmClient::identifySwitch(Deadline deadline) {
  SY_ASSIGN(auto payload, succeed(Opcode::kIdentifySwitchDevice, {}, deadline));
  return parseIdentifySwitch(payload);
}

Result<std::vector<PortState>> FmClient::physicalPortState(std::span<const std::uint8_t> ports, Deadline deadline) {
  // The reply is the CCI header, 4 bytes and 16 per port: for 3, 7, 11, ... ports a multiple of 64 bytes, which a
  // switch with Dialect::dropsByteOfFullPackets cuts short. There the last port is asked for on its own.
  const bool split = dialect_.dropsByteOfFullPackets && ports.size() % 4 == 3;
  std::vector<FmRequest> requests;
  const auto first = ports.first(split ? ports.size() - 1 : ports.size());
  requests.push_back({Opcode::kGetPhysicalPortState, getPhysicalPortStateRequest(first)});
  if (split) requests.push_back({Opcode::kGetPhysicalPortState, getPhysicalPortStateRequest(ports.last(1))});
  SY_ASSIGN(auto payloads, succeedAll(requests, deadline));
  std::vector<PortState> states;
  for (const auto& payload : payloads) {
    SY_ASSIGN(auto part, parsePhysicalPortState(payload));
    std::move(part.begin(), part.end(), std::back_inserter(states));
  }
  if (states.size() != ports.size())
    return fail(Code::kUnavailable, fmt::format("{}: Get Physical Port State answered {} ports of {}", name_, states.size(), ports.size()));
  return states;
}

Result<std::vector<VirtualSwitch>> FmClient::virtualSwitches(std::span<const std::uint8_t> vcss, Deadline deadline) {
  std::vector<FmRequest> requests;
  for (std::size_t at = 0; at < vcss.size(); at += 7)
    requests.push_back({Opcode::kGetVirtualSwitchInfo, getVirtualSwitchInfoRequest(vcss.subspan(at, std::min<std::size_t>(7, vcss.size() - at)))});
  SY_ASSIGN(auto payloads, succeedAll(requests, deadline));
  std::vector<VirtualSwitch> all;
  for (std::size_t r = 0; r < payloads.size(); ++r) {
    const auto some = vcss.subspan(7 * r, std::min<std::size_t>(7, vcss.size() - 7 * r));
    SY_ASSIGN(auto part, parseVirtualSwitchInfo(payloads[r]));
    if (part.size() != some.size())
      return fail(Code::kUnavailable, fmt::format("{}: Get Virtual CXL Switch Info answered {} VCSs of {}", name_, part.size(), some.size()));
    for (std::size_t i = 0; i < part.size(); ++i)
      if (part[i].id != some[i])
        return fail(Code::kUnavailable, fmt::format("{}: Get Virtual CXL Switch Info answered VCS {} where {} was asked", name_, part[i].id, some[i]));
    std::move(part.begin(), part.end(), std::back_inserter(all));
  }
  return all;
}

Result<std::vector<std::uint32_t>> FmClient::readConfig(std::span<const ConfigRead> reads, Deadline deadline) {
  std::vector<FmRequest> requests;
  for (const auto& r : reads) requests.push_back({Opcode::kPpbConfigRequest, ppbConfigReadRequest(r.port, r.offset, dialect_)});
  SY_ASSIGN(auto payloads, succeedAll(requests, deadline));
  std::vector<std::uint32_t> out;
  for (const auto& p : payloads) {
    SY_ASSIGN(auto value, parsePpbConfigRead(p));
    out.push_back(value);
  }
  return out;
}

Result<std::vector<std::uint16_t>> FmClient::startAll(std::span<const FmRequest> requests, Deadline deadline) {
  SY_ASSIGN(auto replies, callAll(requests, deadline));
  std::vector<std::uint16_t> codes;
  for (const auto& r : replies) codes.push_back(r.returnCode);
  return codes;
}

Result<BackgroundOperation> FmClient::backgroundOperation(Deadline deadline) {
  SY_ASSIGN(auto payload, succeed(Opcode::kBackgroundOperationStatus, {}, deadline));
  return parseBackgroundOperationStatus(payload);
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

#include "fabric/switchtec/gfms_client.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace switchyard::switchtec {
namespace {

Error refused(std::string_view what, std::uint32_t status) {
  const Code code = status == mrpc_error::kParamInvalid || status == mrpc_error::kSubcmdInvalid || status == mrpc_error::kCommandInvalid
                        ? Code::kInvalidArgument
                        : Code::kUnavailable;
  return Error{code, fmt::format("{}: the switch answered {}", what, describeMrpcError(status))};
}

// One MRPC call whose non-zero status is an error.
Result<Bytes> command(MrpcChannel& c, Mrpc op, std::uint8_t paxId, const Bytes& payload, std::size_t outputBytes, Deadline deadline,
                      std::string_view what) {
  SY_ASSIGN(auto reply, c.call(commandWord(op, paxId), payload, outputBytes, deadline));
  if (reply.status != 0) return fail(refused(what, reply.status));
  return std::move(reply.output);
}

// The chip's PCI device id from sysfs, for the kernel driver's device (which has no GAS reads).
Result<std::uint16_t> deviceIdFromSysfs(const std::string& devicePath) {
  const auto name = std::filesystem::path(devicePath).filename().string();
  const auto file = std::filesystem::path("/sys/class/switchtec") / name / "device" / "device";
  std::ifstream in(file);
  unsigned id = 0;
  if (!(in >> std::hex >> id)) return fail(Code::kUnavailable, fmt::format("cannot read the device id of {} from {}", devicePath, file.string()));
  return static_cast<std::uint16_t>(id);
}

// Start, get (as many chunks as the firmware wants), finish: one GFMS database dump.
Result<Bytes> dump(MrpcChannel& c, std::uint8_t paxId, GfmsDump section, std::uint8_t param, Deadline deadline) {
  const auto what = fmt::format("GFMS dump {} of PAX {}", static_cast<int>(section), paxId);
  const auto sub = static_cast<std::uint8_t>(section);
  ByteWriter start;
  start.u8(sub).u8(param).u16(0).u32(kDumpStart);
  SY_ASSIGN(auto started, command(c, Mrpc::kGfmsDbDump, paxId, start.take(), 8, deadline, what));
  ByteReader sr(started);
  const auto totalDw = sr.u32();
  if (totalDw > 1u << 20) return fail(Code::kUnavailable, fmt::format("{}: {} dwords is not a dump size", what, totalDw));
  Bytes data(static_cast<std::size_t>(totalDw) * 4);
  std::uint32_t offsetDw = 0;
  while (offsetDw < totalDw) {
    ByteWriter get;
    get.u8(sub).u8(section == GfmsDump::kEpPort ? param : 0).u16(0).u32(kDumpGet).u32(offsetDw);
    SY_ASSIGN(auto chunk, command(c, Mrpc::kGfmsDbDump, paxId, get.take(), kMrpcMaxData, deadline, what));
    ByteReader r(chunk);
    const auto at = r.u32();
    const auto sizeDw = r.u32();
    r.skip(4);
    if (sizeDw <= 3 || sizeDw > kMrpcMaxData / 4 || at != offsetDw || at + (sizeDw - 3) > totalDw)
      return fail(Code::kUnavailable, fmt::format("{}: chunk at {} of {} dwords does not fit a {}-dword dump", what, at, sizeDw, totalDw));
    auto body = r.take((sizeDw - 3) * 4);
    std::copy(body.begin(), body.end(), data.begin() + static_cast<std::ptrdiff_t>(offsetDw) * 4);
    offsetDw += sizeDw - 3;
  }
  ByteWriter finish;
  finish.u8(sub).zeros(3).u32(kDumpFinish);
  SY_TRY(command(c, Mrpc::kGfmsDbDump, paxId, finish.take(), 0, deadline, what));
  return data;
}

}  // namespace

Result<ChipIdentity> identify(MrpcChannel& c, Deadline deadline) {
  ChipIdentity id;
  auto gas = c.readGas(kGasDeviceId, 4, deadline);
  if (gas) {
    ByteReader r(*gas);
    id.deviceId = static_cast<std::uint16_t>(r.u32());
  } else if (gas.error().code == Code::kInvalidArgument) {
    SY_ASSIGN(id.deviceId, deviceIdFromSysfs(c.describe()));
  } else {
    return fail(gas.error());
  }
  id.model = paxModel(id.deviceId);
  const auto gen = paxGeneration(id.deviceId);
  if (!gen)
    return fail(Code::kInvalidArgument,
                fmt::format("{} is Switchtec device {:#06x}, not a PAX: only a PAX has the fabric manager (GFMS) Switchyard binds with",
                            c.describe(), id.deviceId));
  id.generation = *gen;
  SY_ASSIGN(auto pax, command(c, Mrpc::kGetPaxId, static_cast<std::uint8_t>(kPaxIdLocal), {}, 1, deadline, "get PAX id"));
  id.paxId = pax.at(0);
  return id;
}

Result<TopoInfo> readTopoInfo(MrpcChannel& c, std::uint8_t paxId, Generation gen, Deadline deadline) {
  const auto what = fmt::format("topology of PAX {}", paxId);
  SY_TRY(command(c, Mrpc::kTopoInfoDump, paxId, {kTopoDumpStart}, 1, deadline, what));
  std::uint32_t totalBytes = 0;
  for (int tries = 0;; ++tries) {
    SY_ASSIGN(auto s, command(c, Mrpc::kTopoInfoDump, paxId, {kTopoDumpStatus}, 4, deadline, what));
    ByteReader r(s);
    const auto status = r.u8();
    r.skip(1);
    totalBytes = static_cast<std::uint32_t>(r.u16()) * 4;
    if (status == kTopoDumpReady) break;
    if (status != 2 || tries > 1000) return fail(Code::kUnavailable, fmt::format("{}: dump status {}", what, status));
  }
  Bytes data;
  while (data.size() < totalBytes) {
    const auto want = std::min<std::size_t>(totalBytes - data.size(), kTopoDataPerReply);
    ByteWriter get;
    get.u8(gen == Generation::kGen5 ? kTopoDumpDataGen5 : kTopoDumpData).u8(0).u16(static_cast<std::uint16_t>(data.size()));
    SY_ASSIGN(auto chunk, command(c, Mrpc::kTopoInfoDump, paxId, get.take(), 4 + want, deadline, what));
    ByteReader r(chunk);
    r.skip(2);
    const std::size_t got = static_cast<std::size_t>(r.u16()) * 4;
    if (got == 0 || got > want) return fail(Code::kUnavailable, fmt::format("{}: a chunk of {} bytes where {} were left", what, got, want));
    auto body = r.take(got);
    data.insert(data.end(), body.begin(), body.end());
  }
  SY_TRY(command(c, Mrpc::kTopoInfoDump, paxId, {kTopoDumpFinish}, 1, deadline, what));
  return decodeTopoInfo(data, gen);
}

Result<FabricGeneral> readFabricGeneral(MrpcChannel& c, std::uint8_t paxId, Deadline deadline) {
  SY_ASSIGN(auto data, command(c, Mrpc::kGfmsDbDump, paxId, {static_cast<std::uint8_t>(GfmsDump::kFabric)}, 88, deadline, "GFMS fabric"));
  return decodeFabricGeneral(data);
}

Result<PaxAll> readPaxAll(MrpcChannel& c, std::uint8_t paxId, Deadline deadline) {
  SY_ASSIGN(auto data, dump(c, paxId, GfmsDump::kPaxAll, 0, deadline));
  return decodePaxAll(data);
}

Result<Hvd> readHvd(MrpcChannel& c, std::uint8_t paxId, std::uint8_t hvdIndex, Deadline deadline) {
  SY_ASSIGN(auto data, dump(c, paxId, GfmsDump::kHvd, hvdIndex, deadline));
  return decodeHvd(data);
}

Result<FabPort> readFabPort(MrpcChannel& c, std::uint8_t paxId, std::uint8_t physPort, Deadline deadline) {
  SY_ASSIGN(auto data, command(c, Mrpc::kGfmsDbDump, paxId, {static_cast<std::uint8_t>(GfmsDump::kFabPort), physPort}, 32, deadline,
                               fmt::format("GFMS fabric port {}", physPort)));
  return decodeFabPort(data);
}

Result<std::uint32_t> sendBind(MrpcChannel& c, std::uint8_t paxId, const BindRequest& request, Deadline deadline) {
  SY_ASSIGN(auto reply, c.call(commandWord(Mrpc::kGfmsBindUnbind, paxId), encodeBind(request), 4, deadline));
  return reply.status;
}

Result<std::uint32_t> sendUnbind(MrpcChannel& c, std::uint8_t paxId, const UnbindRequest& request, Deadline deadline) {
  SY_ASSIGN(auto reply, c.call(commandWord(Mrpc::kGfmsBindUnbind, paxId), encodeUnbind(request), 1, deadline));
  return reply.status;
}

Result<EventBatch> readEvents(MrpcChannel& c, std::uint8_t paxId, std::uint16_t max, Deadline deadline) {
  ByteWriter req;
  req.u8(1).u8(0).u16(max);
  SY_ASSIGN(auto data, command(c, Mrpc::kGfmsEvent, paxId, req.take(), kMrpcMaxData, deadline, "GFMS events"));
  return decodeEventBatch(data);
}

}  // namespace switchyard::switchtec

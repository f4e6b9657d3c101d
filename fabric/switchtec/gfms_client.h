// The GFMS and topology commands a fabric manager sends, each as the sequence of MRPC calls the firmware
// wants (a dump is start, one or more gets, finish, on one channel). Replies are decoded by protocol.h;
// an MRPC return code becomes an error naming it.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/switchtec/mrpc_channel.h"
#include "fabric/switchtec/protocol.h"

namespace switchyard::switchtec {

struct ChipIdentity {
  std::uint8_t paxId = 0;
  std::uint16_t deviceId = 0;
  Generation generation = Generation::kGen4;
  std::string model;  // "PAX 52XG4"
};

// Which PAX the chip behind `channel` is, and what it is. Fails for a chip that is not a PAX (a PFX or
// PSX has no fabric manager to bind with).
[[nodiscard]] Result<ChipIdentity> identify(MrpcChannel& channel, Deadline deadline);

[[nodiscard]] Result<TopoInfo> readTopoInfo(MrpcChannel& channel, std::uint8_t paxId, Generation gen, Deadline deadline);
[[nodiscard]] Result<FabricGeneral> readFabricGeneral(MrpcChannel& channel, std::uint8_t paxId, Deadline deadline);
[[nodiscard]] Result<PaxAll> readPaxAll(MrpcChannel& channel, std::uint8_t paxId, Deadline deadline);
[[nodiscard]] Result<Hvd> readHvd(MrpcChannel& channel, std::uint8_t paxId, std::uint8_t hvdIndex, Deadline deadline);
[[nodiscard]] Result<FabPort> readFabPort(MrpcChannel& channel, std::uint8_t paxId, std::uint8_t physPort, Deadline deadline);
// The firmware's answer to a bind or unbind: 0 or an MRPC return code (a refusal, not a transport error).
[[nodiscard]] Result<std::uint32_t> sendBind(MrpcChannel& channel, std::uint8_t paxId, const BindRequest& request, Deadline deadline);
[[nodiscard]] Result<std::uint32_t> sendUnbind(MrpcChannel& channel, std::uint8_t paxId, const UnbindRequest& request, Deadline deadline);
// Up to `max` queued GFMS events (oldest first); the firmware keeps the rest for the next call.
[[nodiscard]] Result<EventBatch> readEvents(MrpcChannel& channel, std::uint8_t paxId, std::uint16_t max, Deadline deadline);

}  // namespace switchyard::switchtec

// A composition reservation (Redfish's PreviewReserve): the hosts and devices a manifest's systems would
// get, held for one caller until it applies them, releases them or the reservation expires. While held,
// no other request is placed on them. Reservations live in the leader's memory only: a restart or a
// failover drops them (a client that applies a lost reservation is told it does not exist).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/caller.h"
#include "composer/model/clock.h"
#include "composer/packing/packing.h"

namespace switchyard {

struct HeldSystem {
  std::string name;
  PlacementRequest request;  // as asked (a count, or named devices)
  Placement placement;       // what is held: the host and its devices
  std::map<std::string, std::string> labels;
};

struct Reservation {
  std::string id;  // "rsv-000001"
  Caller reservedBy;
  std::string tenant;
  Timestamp createdAt = 0;
  Timestamp expiresAt = 0;
  std::vector<HeldSystem> systems;  // in the manifest's order
};

// Reservation ids and operation ids share DeviceAssignment::owner for held devices.
[[nodiscard]] inline bool isReservationId(std::string_view owner) { return owner.rfind("rsv-", 0) == 0; }

}  // namespace switchyard

// Redfish resources for composition reservations and the active and free pools:
// /redfish/v1/CompositionService/CompositionReservations[/ID], /ActivePool, /FreePool.
#include <fmt/format.h>

#include "bmc/redfish_json.h"

namespace switchyard::bmc {

using namespace redfish_json;

namespace {

std::string reservationUri(const std::string& id) { return fmt::format("{}/CompositionService/CompositionReservations/{}", kRoot, id); }

json blockCollection(const std::string& name, const std::string& title, const std::vector<std::string>& ids) {
  std::vector<std::string> uris;
  for (const auto& id : ids) uris.push_back(blockUri(id));
  return collection(fmt::format("{}/CompositionService/{}", kRoot, name), "ResourceBlockCollection", title, uris);
}

}  // namespace

std::string isoDuration(std::chrono::seconds d) { return fmt::format("PT{}S", d.count()); }

std::optional<std::chrono::seconds> parseIsoDuration(const std::string& text) {
  // PnDTnHnMnS with whole numbers (what ReservationDuration and SessionTimeout need); at least one part.
  if (text.size() < 3 || text[0] != 'P') return std::nullopt;
  long long total = 0;
  bool inTime = false, any = false;
  std::size_t i = 1;
  while (i < text.size()) {
    if (text[i] == 'T') {
      if (inTime) return std::nullopt;
      inTime = true;
      ++i;
      continue;
    }
    std::size_t digits = i;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    if (digits == i || digits == text.size() || digits - i > 9) return std::nullopt;
    const long long n = std::stoll(text.substr(i, digits - i));
    const char unit = text[digits];
    if (!inTime && unit == 'D') total += n * 86400;
    else if (inTime && unit == 'H') total += n * 3600;
    else if (inTime && unit == 'M') total += n * 60;
    else if (inTime && unit == 'S') total += n;
    else return std::nullopt;
    any = true;
    i = digits + 1;
  }
  if (!any) return std::nullopt;
  return std::chrono::seconds(total);
}

json reservationsCollection(const std::vector<Reservation>& reservations) {
  std::vector<std::string> uris;
  for (const auto& r : reservations) uris.push_back(reservationUri(r.id));
  return collection(fmt::format("{}/CompositionService/CompositionReservations", kRoot), "CompositionReservationCollection",
                    "Composition Reservations", uris);
}

json reservationManifest(const Reservation& r) {
  json stanzas = json::array();
  for (const auto& s : r.systems) {
    json blocks = json::array({odataRef(blockUri(s.placement.hostId))});
    for (const auto& d : s.placement.devices) blocks.push_back(odataRef(blockUri(d.deviceId)));
    stanzas.push_back({{"StanzaType", "ComposeSystem"},
                       {"StanzaId", s.name},
                       {"Request", {{"Name", s.name}, {"Links", {{"ResourceBlocks", blocks}}}}},
                       {"Response", {{"Name", s.name}, {"SystemType", "Composed"}, {"Description", s.placement.explanation},
                                     {"Links", {{"ResourceBlocks", blocks}}}}}});
  }
  return {{"Description", fmt::format("the systems {} holds", r.id)}, {"Timestamp", formatTimestamp(r.createdAt)}, {"Expand", "None"},
          {"Stanzas", stanzas}};
}

json compositionReservation(const Reservation& r) {
  json blocks = json::array();
  for (const auto& s : r.systems) {
    blocks.push_back(odataRef(blockUri(s.placement.hostId)));
    for (const auto& d : s.placement.devices) blocks.push_back(odataRef(blockUri(d.deviceId)));
  }
  return {{"@odata.id", reservationUri(r.id)},
          {"@odata.type", "#CompositionReservation.v1_0_2.CompositionReservation"},
          {"Id", r.id},
          {"Name", fmt::format("Composition reservation {}", r.id)},
          {"Description", fmt::format("held until {}: apply it with the Compose action (RequestType Apply, ReservationId {}) or DELETE it",
                                      formatTimestamp(r.expiresAt), r.id)},
          {"ReservationTime", formatTimestamp(r.createdAt)},
          {"Client", r.reservedBy.identity},
          {"ReservedResourceBlocks", blocks},
          {"Manifest", reservationManifest(r)}};
}

json poolCollection(const PoolView& view, bool active) {
  std::vector<std::string> ids;
  for (const auto& h : view.hosts)
    if (h.systemId.empty() != active) ids.push_back(h.host.id);
  for (const auto& d : view.devices) {
    const bool inUse = d.assignment.allocation == DeviceAllocation::kAllocated ||
                       (d.assignment.allocation == DeviceAllocation::kReserved && !isReservationId(d.assignment.owner));
    const bool free = d.assignment.allocation == DeviceAllocation::kFree || isReservationId(d.assignment.owner);
    if (active ? inUse : free) ids.push_back(d.device.id);
  }
  return active ? blockCollection("ActivePool", "Active pool: blocks in composed systems", ids)
                : blockCollection("FreePool", "Free pool: blocks in no composed system", ids);
}

}  // namespace switchyard::bmc

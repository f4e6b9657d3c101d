// Domain -> Redfish JSON: the one place that knows both the engine's types and the Redfish schemas
// (ServiceRoot, ComputerSystem, CompositionService, ResourceBlock, Zone, Task, Session, Message).
#pragma once

#include <nlohmann/json.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bmc/accounts.h"
#include "composer/engine/engine_client.h"

namespace switchyard::bmc {

using nlohmann::json;

inline constexpr const char* kRoot = "/redfish/v1";
inline constexpr std::string_view kServiceUuid = "5b1e6a3c-0c1d-4a4e-9a57-737769746368";

// Everything a read needs, read from the engine's published view.
struct PoolView {
  Topology topology;  // only when a fabric resource asked for it
  std::vector<HostView> hosts;
  std::vector<System> systems;  // live ones (not decomposed)
  std::vector<DeviceView> devices;
  // The engine's published view the reads came from: a composed system's MemorySummary adds its pooled memory
  // (PoolView::pooledMemoryGiB) to its host's own.
  std::shared_ptr<const switchyard::PoolView> published;
};

[[nodiscard]] json serviceRoot();
[[nodiscard]] json odataServiceDocument();
[[nodiscard]] std::string metadataXml();

[[nodiscard]] json systemsCollection(const PoolView& view);
// A physical host or a composed system by id; null when neither. With Boot (no override) and Actions, and
// ComputerSystem.Reset where its host has a BMC (the bmc-reset policy).
[[nodiscard]] json computerSystem(const PoolView& view, const std::string& id);
// /Systems/Capabilities: what a constrained composition may say, with the machine templates it may name
// (Oem.Switchyard.Template@Redfish.AllowableValues) as composition hints.
[[nodiscard]] json compositionCapabilities(const std::vector<std::string>& templates);
[[nodiscard]] json computerSystemWithoutPower(const PoolView& view, const std::string& id);
// The ResetTypes offered; the host's BMC decides which it accepts.
extern const std::vector<std::string> kResetTypes;

// ReservationDuration: how long a PreviewReserve holds its blocks.
[[nodiscard]] json compositionService(std::chrono::seconds reservationDuration);
// redfish_reservations.cpp: composition reservations, and the blocks in and out of composed systems.
[[nodiscard]] json reservationsCollection(const std::vector<Reservation>& reservations);
[[nodiscard]] json compositionReservation(const Reservation& r);
// A reservation's systems as a manifest (each stanza naming exactly the blocks held for it).
[[nodiscard]] json reservationManifest(const Reservation& r);
[[nodiscard]] json poolCollection(const PoolView& view, bool active);
// ISO 8601 durations as Redfish writes them ("PT300S"); parsing takes whole days, hours, minutes, seconds.
[[nodiscard]] std::string isoDuration(std::chrono::seconds d);
[[nodiscard]] std::optional<std::chrono::seconds> parseIsoDuration(const std::string& text);
[[nodiscard]] json resourceBlocksCollection(const PoolView& view);
// A device's block, or a host's compute block (ResourceBlockType ComputerSystem); null when neither.
[[nodiscard]] json resourceBlock(const PoolView& view, const std::string& id);
// What a device's block holds, as the resource of its kind (DSP0268 ResourceBlock: Processors, Drives, Memory):
// /CompositionService/ResourceBlocks/ID/Processors/ID for a GPU, .../Drives/ID for a drive, .../Memory/ID for a
// pooled memory device (a CXL logical device, with its CapacityMiB); null when the block holds no such part.
[[nodiscard]] json resourceBlockPart(const DeviceView& device, const std::string& collection, const std::string& part);
[[nodiscard]] json resourceZonesCollection();
[[nodiscard]] json resourceZone(const PoolView& view, const std::string& id);

// `now`: the service's time (DateTime), which clients compare task times with.
[[nodiscard]] json taskService(Timestamp now);
[[nodiscard]] json tasksCollection(const std::vector<Operation>& operations);
[[nodiscard]] json task(const Operation& op);
[[nodiscard]] std::string taskMonitorUri(const std::string& operationId);

[[nodiscard]] json sessionService(std::chrono::seconds timeout);
[[nodiscard]] json sessionsCollection(const std::vector<Session>& sessions);
[[nodiscard]] json session(const Session& s);

// redfish_inventory_resources.cpp: accounts (an administrator sees all, anyone else their own; null for
// another's), roles, and chassis (an enclosure per switch with its PCIeDevices, a chassis per host).
[[nodiscard]] json accountService(const Accounts& accounts);
[[nodiscard]] json accountsCollection(const Accounts& accounts, const Caller& caller);
[[nodiscard]] json account(const Accounts& accounts, const Caller& caller, const std::string& name);
[[nodiscard]] json rolesCollection();
[[nodiscard]] json role(const std::string& id);
// The Manager that is yardd itself (ManagerType Service): its version, time and the service it provides.
inline constexpr const char* kManagerId = "yardd";
[[nodiscard]] json managersCollection();
[[nodiscard]] json manager(Timestamp now);
[[nodiscard]] json chassisCollection(const PoolView& view);
// /redfish/v1/Chassis/<parts...>: a chassis, its PCIeDevices collection or one of them; null when none.
[[nodiscard]] json chassisResource(const PoolView& view, const std::vector<std::string>& parts);

// Fabrics: one per group of switches joined by inter-switch links ("PCIe-1", "CXL-2", ...), with its
// switches, ports, endpoints (a host's initiator, a device's target) and one zone per composed system
// holding the bindings yardd recorded (reconcile keeps them true to the switch).
[[nodiscard]] json fabricsCollection(const PoolView& view);
// Any resource under /redfish/v1/Fabrics/<parts...>; null when there is none.
[[nodiscard]] json fabricResource(const PoolView& view, const std::vector<std::string>& parts);

// Switchyard's OEM schemas (bmc/schemas/), served as files under /redfish/v1/Schemas/ without
// authentication, like $metadata: "/SwitchyardEvent_v1.xml" (CSDL), "/SwitchyardEvent.v1_0_0.json".
struct SchemaFile {
  std::string_view contentType;
  std::string_view body;
};
[[nodiscard]] const SchemaFile* oemSchema(std::string_view path);
// /redfish/v1/JsonSchemas: a JsonSchemaFile per OEM JSON Schema, pointing at the served file.
[[nodiscard]] json jsonSchemasCollection();
[[nodiscard]] json jsonSchemaFile(const std::string& id);

[[nodiscard]] json eventService();
// One engine event as a Redfish Event (ResourceEvent registry message ids), and as its JSON text (SSE data).
[[nodiscard]] json redfishEvent(const Event& e);
[[nodiscard]] std::string redfishEventText(const Event& e);

// JSON text that never throws: request bytes that are not UTF-8 (a path, a name) are replaced (U+FFFD),
// not thrown as nlohmann's type_error 316 (the fuzzer's first find: one request crashed yardd).
[[nodiscard]] std::string text(const json& value);

// {"error": {...}} with one Base (or Composition) registry message.
[[nodiscard]] json errorBody(const std::string& messageId, const std::string& message);

}  // namespace switchyard::bmc

// CoHDI's fabric-manager API names tenants, machines, devices, fabrics and node groups by UUID (fabrics and
// machines by number too); Switchyard names them by their ids. Each UUID here is derived from the Switchyard name
// (RFC 9562 version 5: SHA-1 of a namespace of Switchyard's own and the name), so it is the same after a restart,
// on a standby and in another yardd that manages the same pool, with nothing to store or lose (ADR 0030).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard::cohdi {

// The version-5 UUID of `name` in Switchyard's namespace, lower-case, 8-4-4-4-12.
[[nodiscard]] std::string uuidOf(std::string_view name);

[[nodiscard]] inline std::string tenantUuid(std::string_view tenant) { return uuidOf("tenant:" + std::string(tenant)); }
[[nodiscard]] inline std::string machineUuid(std::string_view host) { return uuidOf("host:" + std::string(host)); }
[[nodiscard]] inline std::string deviceUuid(std::string_view device) { return uuidOf("device:" + std::string(device)); }
[[nodiscard]] inline std::string nodeGroupUuid(std::string_view domain) { return uuidOf("domain:" + std::string(domain)); }
[[nodiscard]] inline std::string fabricUuid(int fabricId) { return uuidOf("fabric:" + std::to_string(fabricId)); }
// A cluster-manager resource spec: one GPU model a machine can take.
[[nodiscard]] inline std::string specUuid(std::string_view host, std::string_view model) {
  return uuidOf("spec:" + std::string(host) + "/" + std::string(model));
}

// A number for what CoHDI also counts (mach_id): the UUID's first 31 bits. Informational; UUIDs identify.
[[nodiscard]] int numberOf(std::string_view uuid);

}  // namespace switchyard::cohdi

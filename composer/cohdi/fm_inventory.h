// The pool as CoHDI's fabric-manager API shows it, read from one published view: hosts as machines (found by
// their UUID or their id), the system on each, and which fabric (switches joined by inter-switch links, numbered
// from 1) each host and device is in; and the JSON of a machine and its devices in the shapes CoHDI's clients
// decode (composable-resource-operator internal/cdi/fti/fm/api/get.go, composable-dra-driver pkg/client/types.go).
#pragma once

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "composer/engine/pool_view.h"
#include "composer/model/caller.h"
#include "composer/model/error.h"

namespace switchyard::cohdi {

// What depends on the discovered topology alone, worked out once per topology (it changes only with a new
// inventory), not per request: each switch's fabric number, each machine UUID's host (a SHA-1 per host), and the
// GPU models each fabric holds.
struct ShapeFacts {
  std::unordered_map<SwitchId, int> fabricOfSwitch;
  std::unordered_map<std::string, std::size_t> hostOfUuid;  // machine UUID -> index in topology.hosts
  std::map<int, std::set<std::string>> gpuModelsOfFabric;
};

class ShapeFactsCache {
 public:
  [[nodiscard]] std::shared_ptr<const ShapeFacts> of(const std::shared_ptr<const PoolShape>& shape);

 private:
  std::mutex mutex_;
  std::weak_ptr<const PoolShape> shape_;
  std::shared_ptr<const ShapeFacts> facts_;
};

class Inventory {
 public:
  Inventory(std::shared_ptr<const PoolView> view, ShapeFactsCache& facts);

  [[nodiscard]] const PoolView& view() const { return *view_; }
  // A host by its machine UUID (or, for people, its id).
  [[nodiscard]] const Host* machine(std::string_view uuidOrId) const;
  [[nodiscard]] const std::vector<Host>& hosts() const { return view_->shape->topology.hosts; }
  // The live system on a host, or null.
  [[nodiscard]] std::shared_ptr<const System> systemOn(const HostId& host) const;
  // Whom a host belongs to: its system's tenant; empty when it is free.
  [[nodiscard]] std::string ownerOf(const HostId& host) const;
  // The fabric of a host's first upstream port; nothing for a host with none.
  [[nodiscard]] std::optional<int> fabricOf(const Host& host) const;
  [[nodiscard]] int fabricOfSwitch(const SwitchId& id) const;
  // The fabrics of all of a host's upstream ports, each once.
  [[nodiscard]] std::vector<int> fabricsOf(const Host& host) const;
  // The GPU models a fabric holds (free or not).
  [[nodiscard]] const std::set<std::string>& gpuModelsOf(int fabric) const;

 private:
  std::shared_ptr<const PoolView> view_;
  std::shared_ptr<const ShapeFacts> facts_;
};

// Whether `tenant` may see a host: free hosts and its own (ADR 0030).
[[nodiscard]] bool offeredTo(const Inventory& inventory, const Host& host, const std::string& tenant);
// The machine `uuid` names, when `tenant` is offered it. Another tenant's is not found, as a machine that does not
// exist is, so that a tenant cannot tell them apart.
[[nodiscard]] Result<const Host*> offeredMachine(const Inventory& inventory, const std::string& uuid, const std::string& tenant);

// "gpu", "nvme", "nic", "cxl-memory" or another class ("fpga"): a device's res_type.
[[nodiscard]] std::string resourceType(const Device& device);
// A device in a machine: res_uuid, res_name, res_type, res_status, res_op_status, res_serial_num, res_spec.
// `system` (may be null) gives the identity its host verified (the GPU's UUID as nvidia-smi prints it).
[[nodiscard]] nlohmann::json resourceJson(const DeviceView& device, const System* system, bool changing);
// A machine: fabric_uuid, fabric_id, mach_uuid, mach_id, mach_name, tenant_uuid, mach_status(_detail) and its
// resources (all of its system's devices, or only `only` when given).
[[nodiscard]] nlohmann::json machineJson(const Inventory& inventory, const Host& host, const std::string& tenant,
                                         const std::vector<DeviceId>* only = nullptr);
// CoHDI's condition list on a model: [{"column": "model", "operator": "eq", "value": MODEL}].
[[nodiscard]] nlohmann::json modelCondition(const std::string& model);

}  // namespace switchyard::cohdi

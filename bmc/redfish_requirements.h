// Constrained composition by kind (issue 62): what a ComputerSystem create body asks for, in the shapes of DMTF's
// constrained-composition capabilities, read into the placement request's demands:
//   "Processors": {"Members": [{"@Redfish.RequestedCount": 4, "ProcessorType": "GPU", "Model": "H100-SXM5-80GB"},
//                              {"@Redfish.RequestedCount": 1, "ProcessorType": "FPGA"}]}
//                                              GPUs (one requirement), and FPGA, DSP or Accelerator as the device
//                                              classes fpga, dsp and accelerator
//   "Storage": {"Members": [{"Drives": [{"@Redfish.RequestedCount": 2, "CapacityBytes": 1099511627776, "Model": "PM1743"}]}]}
//                                              NVMe drives: count, smallest size, model
//   "NetworkInterfaces": {"Members": [{"@Redfish.RequestedCount": 2, "Model": "ConnectX-7"}]}
//                                              NICs: count, model
//   "Memory": {"Members": [{"@Redfish.RequestedCount": 4, "CapacityMiB": 65536}]}
//                                              pooled (CXL) memory: count x size, in whole GiB
// Each is optional; a drive or NIC sits under the GPUs' switches where one is free, else anywhere the host reaches
// (affinity domain; Oem.Switchyard.Affinity: {"nic": "switch"} asks for the GPUs' switches only).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "bmc/http_vocabulary.h"
#include "composer/engine/engine_requests.h"

namespace switchyard::bmc {

// Reads Processors, Storage, NetworkInterfaces and Memory of `body` into `request.placement`; the Redfish error to answer
// (400, naming the property) when one is malformed, nothing when all are well formed or absent.
[[nodiscard]] std::optional<HttpResponse> readKindRequirements(const nlohmann::json& body, ComposeRequest& request);

// Oem.Switchyard.Endpoints ({"dpu": 1}): devices of other classes by name, for those Redfish has no processor type for.
[[nodiscard]] std::optional<HttpResponse> readEndpoints(const nlohmann::json& endpoints, ComposeRequest& request);

// Oem.Switchyard.Affinity ({"nic": "switch", "nvme": "domain", "fpga": "switch"}) onto the request's endpoint demands.
[[nodiscard]] std::optional<HttpResponse> readAffinity(const nlohmann::json& affinity, ComposeRequest& request);

}  // namespace switchyard::bmc

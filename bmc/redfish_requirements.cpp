#include "bmc/redfish_requirements.h"

#include <fmt/format.h>

#include <variant>

#include "bmc/redfish_json.h"
#include "bmc/redfish_protocol.h"

namespace switchyard::bmc {

using namespace redfish_protocol;
using nlohmann::json;

namespace {

HttpResponse bad(const std::string& id, const std::string& message) { return error(http::status::bad_request, std::string(kBase) + id, message); }

std::string shown(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// A whole number in [lo, hi] read at full width (get<int>() would cut 4294967298 to 2), or the error naming `what`.
std::variant<long long, HttpResponse> wholeNumber(const json& v, long long lo, long long hi, const std::string& what) {
  if (!v.is_number_integer()) return bad("PropertyValueTypeError", fmt::format("{} must be a whole number", what));
  const long long n = redfish_json::wholeNumberUpTo(v, hi);
  if (n < lo || n > hi) return bad("PropertyValueOutOfRange", fmt::format("{} {} is out of range ({} to {})", what, shown(v), lo, hi));
  return n;
}

// `collection`.Members as an array of one requirement object each, or the error.
std::variant<const json*, HttpResponse> members(const json& body, const std::string& collection, const std::string& shape) {
  const json& c = body[collection];
  if (!c.is_object() || !c.contains("Members") || !c["Members"].is_array() || c["Members"].empty())
    return bad("PropertyValueTypeError", fmt::format("{}.Members must be an array of requirements {}", collection, shape));
  for (const auto& [key, value] : c.items())
    if (key != "Members" && key.rfind("@", 0) != 0) return bad("PropertyUnknown", fmt::format("{}.{} is unknown", collection, key));
  for (const auto& m : c["Members"])
    if (!m.is_object()) return bad("PropertyValueTypeError", fmt::format("each of {}.Members must be an object {}", collection, shape));
  return &c["Members"];
}

// The keys a requirement may carry; an unknown one is refused rather than ignored (it would be a constraint dropped).
std::optional<HttpResponse> onlyKeys(const json& requirement, std::initializer_list<std::string_view> allowed, const std::string& where) {
  for (const auto& [key, value] : requirement.items()) {
    bool ok = key.rfind("@odata.", 0) == 0;
    for (auto a : allowed) ok = ok || key == a;
    if (!ok) return bad("PropertyUnknown", fmt::format("{}.{} cannot be asked for here (this service reads {})", where, key, fmt::join(allowed, ", ")));
  }
  return std::nullopt;
}

// A requirement's @Redfish.RequestedCount (1 when absent) and Model into `demand`; the error naming `where` else.
std::optional<HttpResponse> readCountAndModel(const json& requirement, EndpointDemand& demand, const std::string& where) {
  if (requirement.contains("@Redfish.RequestedCount")) {
    auto n = wholeNumber(requirement["@Redfish.RequestedCount"], 1, kMaxEndpointsPerDemand, where + ".@Redfish.RequestedCount");
    if (auto* e = std::get_if<HttpResponse>(&n)) return std::move(*e);
    demand.count = static_cast<int>(std::get<long long>(n));
  }
  if (requirement.contains("Model")) {
    if (!requirement["Model"].is_string()) return bad("PropertyValueTypeError", where + ".Model must be a string");
    demand.model = requirement["Model"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<HttpResponse> addDemand(ComposeRequest& request, EndpointDemand demand, const std::string& where) {
  for (auto& d : request.placement.endpoints)
    if (sameKind(d, demand)) {
      if (d.model != demand.model || d.minCapacityGiB != demand.minCapacityGiB || d.minSpeedGbps != demand.minSpeedGbps)
        return bad("PropertyValueConflict", fmt::format("{}: one request asks for one model and size of each kind", where));
      d.count += demand.count;
      if (d.count > kMaxEndpointsPerDemand)
        return bad("PropertyValueOutOfRange", fmt::format("{}: at most {} of a kind", where, kMaxEndpointsPerDemand));
      return std::nullopt;
    }
  request.placement.endpoints.push_back(std::move(demand));
  return std::nullopt;
}

std::optional<HttpResponse> readDrives(const json& body, ComposeRequest& request) {
  const std::string shape = R"({"Drives": [{"@Redfish.RequestedCount": N, "CapacityBytes": B}]})";
  auto list = members(body, "Storage", shape);
  if (auto* e = std::get_if<HttpResponse>(&list)) return std::move(*e);
  for (const json& storage : *std::get<const json*>(list)) {
    if (auto e = onlyKeys(storage, {"Drives", "@Redfish.RequestedCount"}, "Storage.Members[]")) return e;
    if (storage.contains("@Redfish.RequestedCount") && storage["@Redfish.RequestedCount"] != 1)
      return bad("PropertyValueOutOfRange", "Storage.Members[].@Redfish.RequestedCount: drives are composed one storage (the host's) at a time: 1 or leave it out");
    if (!storage.contains("Drives") || !storage["Drives"].is_array() || storage["Drives"].empty())
      return bad("PropertyMissing", fmt::format("Storage.Members[].Drives is required: {}", shape));
    for (const json& drive : storage["Drives"]) {
      if (!drive.is_object()) return bad("PropertyValueTypeError", "each of Storage.Members[].Drives must be an object");
      if (auto e = onlyKeys(drive, {"@Redfish.RequestedCount", "CapacityBytes", "Model"}, "Storage.Members[].Drives[]")) return e;
      EndpointDemand demand{DeviceKind::kNvme, 1, "", 0, Affinity::kDomain};
      if (auto e = readCountAndModel(drive, demand, "Drives[]")) return e;
      if (drive.contains("CapacityBytes")) {  // in whole GiB, rounded up: a drive of at least that many bytes
        auto bytes = wholeNumber(drive["CapacityBytes"], 1, 1LL << 50, "Drives[].CapacityBytes");
        if (auto* e = std::get_if<HttpResponse>(&bytes)) return std::move(*e);
        demand.minCapacityGiB = static_cast<int>((std::get<long long>(bytes) + (1LL << 30) - 1) >> 30);
      }
      if (auto e = addDemand(request, std::move(demand), "Storage")) return e;
    }
  }
  return std::nullopt;
}

std::optional<HttpResponse> readNics(const json& body, ComposeRequest& request) {
  auto list = members(body, "NetworkInterfaces", R"({"@Redfish.RequestedCount": N, "Model": "..."})");
  if (auto* e = std::get_if<HttpResponse>(&list)) return std::move(*e);
  for (const json& nic : *std::get<const json*>(list)) {
    if (auto e = onlyKeys(nic, {"@Redfish.RequestedCount", "Model"}, "NetworkInterfaces.Members[]")) return e;
    EndpointDemand demand{DeviceKind::kNic, 1, "", 0, Affinity::kDomain};
    if (auto e = readCountAndModel(nic, demand, "NetworkInterfaces.Members[]")) return e;
    if (auto e = addDemand(request, std::move(demand), "NetworkInterfaces")) return e;
  }
  return std::nullopt;
}

std::optional<HttpResponse> readMemory(const json& body, ComposeRequest& request) {
  auto list = members(body, "Memory", R"({"@Redfish.RequestedCount": N, "CapacityMiB": M})");
  if (auto* e = std::get_if<HttpResponse>(&list)) return std::move(*e);
  long long mib = 0;
  for (const json& memory : *std::get<const json*>(list)) {
    if (auto e = onlyKeys(memory, {"@Redfish.RequestedCount", "CapacityMiB", "MemoryType"}, "Memory.Members[]")) return e;
    if (memory.contains("MemoryType") && memory["MemoryType"] != "DRAM")
      return bad("PropertyValueNotInList", "Memory.Members[].MemoryType: pooled memory is DRAM behind CXL switches");
    if (!memory.contains("CapacityMiB")) return bad("PropertyMissing", "Memory.Members[].CapacityMiB is required");
    auto size = wholeNumber(memory["CapacityMiB"], 1, 1LL << 32, "Memory.Members[].CapacityMiB");
    if (auto* e = std::get_if<HttpResponse>(&size)) return std::move(*e);
    long long count = 1;
    if (memory.contains("@Redfish.RequestedCount")) {
      auto n = wholeNumber(memory["@Redfish.RequestedCount"], 1, 4096, "Memory.Members[].@Redfish.RequestedCount");
      if (auto* e = std::get_if<HttpResponse>(&n)) return std::move(*e);
      count = std::get<long long>(n);
    }
    mib += count * std::get<long long>(size);
  }
  const long long gib = (mib + 1023) / 1024;
  if (gib > 1LL << 24) return bad("PropertyValueOutOfRange", fmt::format("Memory: {} GiB in all is more than any pool holds", gib));
  request.placement.pooledMemoryGiB += static_cast<int>(gib);
  return std::nullopt;
}

// Redfish's processor types that are devices of another class here (a topology's "kind": "fpga"), by that class.
std::optional<std::string> classOfProcessorType(std::string_view type) {
  if (type == "FPGA") return "fpga";
  if (type == "DSP") return "dsp";
  if (type == "Accelerator") return "accelerator";
  return std::nullopt;
}

std::optional<HttpResponse> readProcessors(const json& body, ComposeRequest& request) {
  auto list = members(body, "Processors", R"({"@Redfish.RequestedCount": N, "ProcessorType": "GPU", "Model": "..."})");
  if (auto* e = std::get_if<HttpResponse>(&list)) return std::move(*e);
  bool gpus = false;
  for (const json& processor : *std::get<const json*>(list)) {
    if (auto e = onlyKeys(processor, {"@Redfish.RequestedCount", "ProcessorType", "Model"}, "Processors.Members[]")) return e;
    const json type = processor.value("ProcessorType", json("GPU"));
    if (!type.is_string()) return bad("PropertyValueTypeError", "Processors.Members[].ProcessorType must be a string");
    if (type == "GPU") {
      if (gpus) return bad("PropertyValueConflict", "Processors: one requirement of ProcessorType GPU (one model and count)");
      gpus = true;
      if (!processor.contains("@Redfish.RequestedCount")) return bad("PropertyMissing", "Processors.Members[].@Redfish.RequestedCount is required for GPUs");
      auto n = wholeNumber(processor["@Redfish.RequestedCount"], 1, 4096, "Processors.Members[].@Redfish.RequestedCount");
      if (auto* e = std::get_if<HttpResponse>(&n)) return std::move(*e);
      request.placement.gpuCount = static_cast<int>(std::get<long long>(n));
      if (processor.contains("Model")) {
        if (!processor["Model"].is_string()) return bad("PropertyValueTypeError", "Processors.Members[].Model must be a string");
        request.placement.model = processor["Model"].get<std::string>();
      }
      continue;
    }
    const auto deviceClass = classOfProcessorType(type.get<std::string>());
    if (!deviceClass)
      return bad("PropertyValueNotInList", fmt::format("Processors.Members[].ProcessorType {}: this service composes GPU, FPGA, DSP and Accelerator "
                                                       "(other classes: Oem.Switchyard.Endpoints)",
                                                       shown(type)));
    EndpointDemand demand{DeviceKind::kOther, 1, "", 0, Affinity::kDomain, 0, *deviceClass};
    if (auto e = readCountAndModel(processor, demand, "Processors.Members[]")) return e;
    if (auto e = addDemand(request, std::move(demand), "Processors")) return e;
  }
  return std::nullopt;
}

}  // namespace

std::optional<HttpResponse> readKindRequirements(const json& body, ComposeRequest& request) {
  if (body.contains("Processors"))
    if (auto e = readProcessors(body, request)) return e;
  if (body.contains("Storage"))
    if (auto e = readDrives(body, request)) return e;
  if (body.contains("NetworkInterfaces"))
    if (auto e = readNics(body, request)) return e;
  if (body.contains("Memory"))
    if (auto e = readMemory(body, request)) return e;
  return std::nullopt;
}

std::optional<HttpResponse> readEndpoints(const json& endpoints, ComposeRequest& request) {
  if (!endpoints.is_object() || endpoints.empty())
    return bad("PropertyValueTypeError", R"(Oem.Switchyard.Endpoints must be an object of counts by device class, such as {"dpu": 1})");
  for (const auto& [deviceClass, count] : endpoints.items()) {
    if (!isClassName(deviceClass))
      return bad("PropertyValueNotInList", fmt::format("Oem.Switchyard.Endpoints.{}: not another device class ({}; GPUs, drives, NICs and memory are "
                                                       "Processors, Storage, NetworkInterfaces and Memory)",
                                                       deviceClass, kKindNameRule));
    auto n = wholeNumber(count, 1, kMaxEndpointsPerDemand, "Oem.Switchyard.Endpoints." + deviceClass);
    if (auto* e = std::get_if<HttpResponse>(&n)) return std::move(*e);
    if (auto e = addDemand(request, EndpointDemand{DeviceKind::kOther, static_cast<int>(std::get<long long>(n)), "", 0, Affinity::kDomain, 0, deviceClass},
                           "Oem.Switchyard.Endpoints"))
      return e;
  }
  return std::nullopt;
}

std::optional<HttpResponse> readAffinity(const json& affinity, ComposeRequest& request) {
  if (!affinity.is_object()) return bad("PropertyValueTypeError", R"(Oem.Switchyard.Affinity must be an object such as {"nic": "switch"})");
  for (const auto& [kind, value] : affinity.items()) {
    const auto parsedKind = parseKindName(kind);
    const auto parsed = value.is_string() ? parseAffinity(value.get<std::string>()) : std::nullopt;
    if (!parsedKind || !isEndpointKind(parsedKind->kind) || !parsed)
      return bad("PropertyValueNotInList",
                 fmt::format("Oem.Switchyard.Affinity.{}: {} (expected nic, nvme or another class's name, each switch or domain)", kind, shown(value)));
    bool asked = false;
    for (auto& d : request.placement.endpoints)
      if (d.kind == parsedKind->kind && d.deviceClass == parsedKind->deviceClass) {
        d.affinity = *parsed;
        asked = true;
      }
    if (!asked) return bad("PropertyValueConflict", fmt::format("Oem.Switchyard.Affinity.{}: the request asks for no {}", kind, kind));
  }
  return std::nullopt;
}

}  // namespace switchyard::bmc

#include "fabric/qemu/qemu_topology.h"

#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace switchyard::qemu {

namespace {

using Json = nlohmann::json;

// QEMU's rule for ids (and ours for what becomes one): a letter, then letters, digits, '-', '.', '_'.
bool qemuIdSafe(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (const char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') return false;
  return true;
}

Result<std::string> text(const Json& o, const char* key, const std::string& where, bool required) {
  if (!o.contains(key)) {
    if (required) return fail(Code::kInvalidArgument, fmt::format("{}: \"{}\" is missing", where, key));
    return std::string();
  }
  if (!o[key].is_string()) return fail(Code::kInvalidArgument, fmt::format("{}: \"{}\" must be a string", where, key));
  return o[key].get<std::string>();
}

Result<int> count(const Json& o, const char* key, const std::string& where) {
  if (!o.contains(key)) return 0;
  if (!o[key].is_number_integer() || o[key].get<long long>() < 0 || o[key].get<long long>() > 1'000'000)
    return fail(Code::kInvalidArgument, fmt::format("{}: \"{}\" must be a whole number from 0", where, key));
  return o[key].get<int>();
}

Result<void> onlyKeys(const Json& o, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [key, value] : o.items())
    if (!allowed.contains(key)) return fail(Code::kInvalidArgument, fmt::format("{}: unknown key \"{}\"", where, key));
  return {};
}

Result<VmHost> parseHost(const Json& h, const std::string& where) {
  if (!h.is_object()) return fail(Code::kInvalidArgument, fmt::format("{}: must be an object", where));
  SY_TRY(onlyKeys(h, {"name", "qmp", "slots", "cpu_cores", "memory_gib"}, where));
  VmHost host;
  SY_ASSIGN(host.name, text(h, "name", where, true));
  if (!qemuIdSafe(host.name)) return fail(Code::kInvalidArgument, fmt::format("{}: name '{}' must start with a letter and hold only letters, digits, '-', '.', '_'", where, host.name));
  SY_ASSIGN(host.qmp, text(h, "qmp", where, true));
  if (!h.contains("slots") || !h["slots"].is_array() || h["slots"].empty())
    return fail(Code::kInvalidArgument, fmt::format("{} ({}): \"slots\" must list the ids of its hot-plug ports the pool may use", where, host.name));
  std::set<std::string> seen;
  for (const auto& s : h["slots"]) {
    if (!s.is_string() || !qemuIdSafe(s.get<std::string>())) return fail(Code::kInvalidArgument, fmt::format("{} ({}): slot {} is not a QEMU device id", where, host.name, s.dump(-1, ' ', false, Json::error_handler_t::replace)));
    if (!seen.insert(s.get<std::string>()).second) return fail(Code::kInvalidArgument, fmt::format("{} ({}): slot '{}' listed twice", where, host.name, s.get<std::string>()));
    host.slots.push_back(s.get<std::string>());
  }
  SY_ASSIGN(host.cpuCores, count(h, "cpu_cores", where));
  SY_ASSIGN(host.memoryGiB, count(h, "memory_gib", where));
  return host;
}

Result<PoolDevice> parseDevice(const Json& d, const std::string& where) {
  if (!d.is_object()) return fail(Code::kInvalidArgument, fmt::format("{}: must be an object", where));
  SY_TRY(onlyKeys(d, {"id", "kind", "model", "serial", "qemu", "backing_mib"}, where));
  PoolDevice device;
  SY_ASSIGN(device.id, text(d, "id", where, true));
  if (!qemuIdSafe(device.id)) return fail(Code::kInvalidArgument, fmt::format("{}: id '{}' must start with a letter and hold only letters, digits, '-', '.', '_'", where, device.id));
  SY_ASSIGN(auto kind, text(d, "kind", where, true));
  const auto parsed = parseDeviceKind(kind);
  if (!parsed || *parsed == DeviceKind::kCxlMemory)
    return fail(Code::kInvalidArgument, fmt::format("{} ({}): kind '{}' is not gpu, nvme or nic", where, device.id, kind));
  device.kind = *parsed;
  if (!d.contains("qemu") || !d["qemu"].is_object() || !d["qemu"].contains("driver") || !d["qemu"]["driver"].is_string())
    return fail(Code::kInvalidArgument, fmt::format("{} ({}): \"qemu\" must be device_add's properties, with \"driver\"", where, device.id));
  device.properties = d["qemu"];
  for (const char* ours : {"id", "bus"})
    if (device.properties.contains(ours))
      return fail(Code::kInvalidArgument, fmt::format("{} ({}): \"qemu\" must not set \"{}\": the driver chooses it", where, device.id, ours));
  const std::string driver = device.properties["driver"];
  SY_ASSIGN(device.model, text(d, "model", where, false));
  if (device.model.empty()) device.model = driver == "vfio-pci" ? "passthrough " + device.properties.value("host", std::string("?")) : "QEMU " + driver;
  SY_ASSIGN(device.serial, text(d, "serial", where, false));
  if (device.serial.empty()) device.serial = device.properties.value("serial", device.properties.value("mac", std::string()));
  SY_ASSIGN(int backing, count(d, "backing_mib", where));
  if (driver == "nvme" && !device.properties.contains("drive")) device.backingMiB = backing > 0 ? backing : 1024;
  else if (backing > 0) return fail(Code::kInvalidArgument, fmt::format("{} ({}): \"backing_mib\" is for nvme devices without a \"drive\"", where, device.id));
  return device;
}

}  // namespace

Result<QemuPool> parseQemuPool(const std::string& content, const std::string& source) {
  const Json j = Json::parse(content, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail(Code::kInvalidArgument, fmt::format("{}: not a JSON object", source));
  SY_TRY(onlyKeys(j, {"hosts", "devices"}, source));
  if (!j.contains("hosts") || !j["hosts"].is_array() || j["hosts"].empty()) return fail(Code::kInvalidArgument, fmt::format("{}: \"hosts\" must list at least one VM", source));
  if (!j.contains("devices") || !j["devices"].is_array()) return fail(Code::kInvalidArgument, fmt::format("{}: \"devices\" must be a list", source));
  QemuPool pool;
  std::set<std::string> names, qmps, ids;
  for (std::size_t i = 0; i < j["hosts"].size(); ++i) {
    SY_ASSIGN(auto host, parseHost(j["hosts"][i], fmt::format("{}: hosts[{}]", source, i)));
    if (!names.insert(host.name).second) return fail(Code::kInvalidArgument, fmt::format("{}: host '{}' listed twice", source, host.name));
    if (!qmps.insert(host.qmp).second) return fail(Code::kInvalidArgument, fmt::format("{}: two hosts share the QMP socket {}", source, host.qmp));
    pool.hosts.push_back(std::move(host));
  }
  for (std::size_t i = 0; i < j["devices"].size(); ++i) {
    SY_ASSIGN(auto device, parseDevice(j["devices"][i], fmt::format("{}: devices[{}]", source, i)));
    if (!ids.insert(device.id).second) return fail(Code::kInvalidArgument, fmt::format("{}: device '{}' listed twice", source, device.id));
    pool.devices.push_back(std::move(device));
  }
  return pool;
}

Result<QemuPool> loadQemuPool(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(Code::kNotFound, fmt::format("cannot read the QEMU pool file {}", path));
  std::stringstream s;
  s << in.rdbuf();
  return parseQemuPool(s.str(), path);
}

}  // namespace switchyard::qemu

#include "fabric/qemu/qemu_fabric.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "fabric/qemu/qmp_client.h"

namespace switchyard {

namespace {

using qemu::Json;
using qemu::QmpSession;
using Deadline = std::chrono::steady_clock::time_point;

constexpr const char* kPeripherals = "/machine/peripheral";

// The ids of the devices created with an id (-device ...,id= or device_add), from the QOM tree.
Result<std::vector<std::string>> peripherals(QmpSession& s, Deadline deadline) {
  SY_ASSIGN(auto children, s.execute("qom-list", {{"path", kPeripherals}}, deadline));
  std::vector<std::string> out;
  for (const auto& c : children)
    if (c.value("type", std::string()).starts_with("child<")) out.push_back(c.value("name", std::string()));
  return out;
}

// The hot-plug ports taken by any device (ours or not): a device's parent bus is named after its port.
Result<std::set<std::string>> occupiedSlots(QmpSession& s, Deadline deadline) {
  SY_ASSIGN(auto ids, peripherals(s, deadline));
  std::set<std::string> taken;
  for (const auto& id : ids) {
    auto bus = s.execute("qom-get", {{"path", fmt::format("{}/{}", kPeripherals, id)}, {"property", "parent_bus"}}, deadline);
    if (!bus || !bus->is_string()) continue;  // not a bus device (an object without a parent bus)
    const std::string path = bus->get<std::string>();
    taken.insert(path.substr(path.rfind('/') + 1));
  }
  return taken;
}

// Changes made before a failure mean the outcome is partial: never report those as "changed nothing".
Error partial(Error e, bool appliedSome) {
  if (appliedSome && changedNothing(e.code)) e.code = Code::kUnavailable;
  return e;
}

}  // namespace

QemuFabric::QemuFabric(QemuOptions options) : options_(std::move(options)), switchId_(options_.prefix + "qemu0") {
  for (const auto& h : options_.pool.hosts) {
    auto vm = std::make_unique<Vm>();
    vm->host = h;
    vm->port = fmt::format("{}-{}", switchId_, h.name);
    vmOfPort_[vm->port] = vms_.size();
    vms_.push_back(std::move(vm));
  }
  for (const auto& d : options_.pool.devices) {
    devices_[d.id] = &d;
    deviceOfQemuId_[d.qemuId()] = d.id;
  }
  reachable_.assign(vms_.size(), true);  // so that the first poll reports a VM that is down
}

Result<std::unique_ptr<QemuFabric>> QemuFabric::open(QemuOptions options) {
  if (options.pool.hosts.empty()) return fail(Code::kInvalidArgument, "the QEMU pool names no VM");
  return std::unique_ptr<QemuFabric>(new QemuFabric(std::move(options)));
}

Result<Topology> QemuFabric::discover() {
  Topology t;
  t.switches.push_back({.id = switchId_, .kind = SwitchKind::kPcie, .model = "QEMU PCIe hot-plug (QMP)"});
  for (const auto& vm : vms_) {
    t.ports.push_back({.id = vm->port, .switchId = switchId_, .kind = PortKind::kUpstream});
    t.hosts.push_back({.id = vm->host.name,
                       .upstreamPorts = {{.portId = vm->port}},
                       .cpuCores = vm->host.cpuCores,
                       .memoryGiB = vm->host.memoryGiB,
                       .maxDevices = static_cast<int>(vm->host.slots.size())});
  }
  for (const auto& d : options_.pool.devices) {
    const PortId port = fmt::format("{}-pool-{}", switchId_, d.id);
    t.ports.push_back({.id = port, .switchId = switchId_, .kind = PortKind::kDownstream});
    t.devices.push_back({.id = d.id, .kind = d.kind, .portId = port, .model = d.model, .serial = d.serial});
  }
  return t;
}

Result<void> QemuFabric::checkNames(std::span<const Binding> bindings) const {
  std::set<DeviceId> seen;
  for (const auto& b : bindings) {
    if (!devices_.contains(b.deviceId)) return fail(Code::kNotFound, fmt::format("no device '{}' in the QEMU pool", b.deviceId));
    if (!vmOfPort_.contains(b.upstreamPortId)) return fail(Code::kNotFound, fmt::format("'{}' is not a VM's upstream port in the QEMU pool", b.upstreamPortId));
    if (!seen.insert(b.deviceId).second) return fail(Code::kInvalidArgument, fmt::format("device '{}' named twice in one call", b.deviceId));
  }
  return {};
}

Result<std::map<DeviceId, std::size_t>> QemuFabric::locate(std::span<const std::size_t> vms, Deadline deadline) {
  std::map<DeviceId, std::size_t> where;
  for (const std::size_t i : vms) {
    std::lock_guard lock(vms_[i]->mutex);
    auto s = QmpSession::connect(vms_[i]->host.qmp, deadline);
    if (!s) return fail(s.error().wrap(fmt::format("VM {}", vms_[i]->host.name)));
    SY_ASSIGN(auto ids, peripherals(*s, deadline));
    for (const auto& id : ids)
      if (auto d = deviceOfQemuId_.find(id); d != deviceOfQemuId_.end()) where[d->second] = i;
  }
  return where;
}

Result<std::vector<Binding>> QemuFabric::read(std::span<const std::size_t> vms, const CallOptions& options) {
  SY_ASSIGN(auto where, locate(vms, deadlineAfter(options.timeout)));
  std::vector<Binding> out;
  for (const auto& [device, vm] : where) out.push_back({device, vms_[vm]->port});
  return out;
}

std::vector<std::size_t> QemuFabric::allVms() const {
  std::vector<std::size_t> all(vms_.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

Result<std::vector<Binding>> QemuFabric::readBindings(const CallOptions& options) { return read(allVms(), options); }

Result<std::vector<Binding>> QemuFabric::readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options) {
  std::set<std::size_t> vms;
  for (const auto& p : upstreamPorts)
    if (auto it = vmOfPort_.find(p); it != vmOfPort_.end()) vms.insert(it->second);
  const std::vector<std::size_t> list(vms.begin(), vms.end());
  return read(list, options);
}

Result<void> QemuFabric::perVm(const std::map<std::size_t, std::vector<const qemu::PoolDevice*>>& work,
                               const std::function<Result<void>(std::size_t, const std::vector<const qemu::PoolDevice*>&)>& apply) {
  bool appliedSome = false;
  for (const auto& [vm, devices] : work) {
    if (auto r = apply(vm, devices); !r) return fail(partial(r.error(), appliedSome));
    appliedSome = true;
  }
  return {};
}

Result<void> QemuFabric::bindAll(std::span<const Binding> bindings, const CallOptions& options) {
  if (bindings.empty()) return {};
  SY_TRY(checkNames(bindings));
  const Deadline deadline = deadlineAfter(options.timeout);
  SY_ASSIGN(auto where, locate(allVms(), deadline));
  std::map<std::size_t, std::vector<const qemu::PoolDevice*>> adds;  // by VM, in index order
  for (const auto& b : bindings) {
    const std::size_t vm = vmOfPort_.at(b.upstreamPortId);
    if (auto at = where.find(b.deviceId); at != where.end()) {
      if (at->second == vm) {
        std::lock_guard lock(vms_[vm]->mutex);
        if (vms_[vm]->unplugPending.contains(devices_.at(b.deviceId)->qemuId()))
          return fail(Code::kUnavailable, fmt::format("{} is leaving VM {}: its unplug was asked and QEMU cannot cancel it; it goes once the guest lets go",
                                                      b.deviceId, vms_[vm]->host.name));
        continue;  // already there: idempotent
      }
      return fail(Code::kFailedPrecondition, fmt::format("{} is bound to VM {}; unbind it first", b.deviceId, vms_[at->second]->host.name));
    }
    adds[vm].push_back(devices_.at(b.deviceId));
  }
  return perVm(adds, [&](std::size_t vm, const auto& devices) { return bindOn(vm, devices, deadline); });
}

Result<void> QemuFabric::bindOn(std::size_t vm, const std::vector<const qemu::PoolDevice*>& devices, Deadline deadline) {
  auto& v = *vms_[vm];
  std::lock_guard lock(v.mutex);
  SY_ASSIGN(auto s, QmpSession::connect(v.host.qmp, deadline));
  SY_ASSIGN(auto taken, occupiedSlots(s, deadline));
  std::vector<std::string> free;
  for (const auto& slot : v.host.slots)
    if (!taken.contains(slot)) free.push_back(slot);
  if (free.size() < devices.size())
    return fail(Code::kFailedPrecondition, fmt::format("VM {} has {} free hot-plug slot(s) of {} for {} device(s)", v.host.name, free.size(), v.host.slots.size(), devices.size()));
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto& d = *devices[i];
    Json add = d.properties;
    add["id"] = d.qemuId();
    add["bus"] = free[i];
    bool madeBacking = false;
    if (d.backingMiB > 0) {
      auto made = s.execute("blockdev-add", {{"driver", "null-co"}, {"node-name", d.blockNode()}, {"size", d.backingMiB << 20}, {"read-zeroes", true}}, deadline);
      if (!made && s.lastError().description.find("Duplicate") == std::string::npos) return fail(partial(made.error().wrap(d.id), i > 0));
      madeBacking = made.has_value();
      add["drive"] = d.blockNode();
    }
    if (auto added = s.execute("device_add", add, deadline); !added) {
      if (madeBacking) (void)s.execute("blockdev-del", {{"node-name", d.blockNode()}}, deadline);
      return fail(partial(added.error().wrap(fmt::format("{} onto slot {} of VM {}", d.id, free[i], v.host.name)), i > 0));
    }
  }
  return {};
}

Result<void> QemuFabric::unbindAll(std::span<const Binding> bindings, const CallOptions& options) {
  if (bindings.empty()) return {};
  SY_TRY(checkNames(bindings));
  const Deadline deadline = deadlineAfter(options.timeout);
  SY_ASSIGN(auto where, locate(allVms(), deadline));
  std::map<std::size_t, std::vector<const qemu::PoolDevice*>> removals;
  for (const auto& b : bindings) {
    auto at = where.find(b.deviceId);
    if (at == where.end()) continue;  // not bound: idempotent
    const std::size_t vm = vmOfPort_.at(b.upstreamPortId);
    if (at->second != vm) return fail(Code::kFailedPrecondition, fmt::format("{} is bound to VM {}, not {}", b.deviceId, vms_[at->second]->host.name, vms_[vm]->host.name));
    removals[vm].push_back(devices_.at(b.deviceId));
  }
  return perVm(removals, [&](std::size_t vm, const auto& devices) { return unbindOn(vm, devices, deadline); });
}

Result<void> QemuFabric::unbindOn(std::size_t vm, const std::vector<const qemu::PoolDevice*>& devices, Deadline deadline) {
  auto& v = *vms_[vm];
  std::lock_guard lock(v.mutex);
  SY_ASSIGN(auto s, QmpSession::connect(v.host.qmp, deadline));
  std::set<std::string> waiting;
  for (const auto* d : devices) {
    auto del = s.execute("device_del", {{"id", d->qemuId()}}, deadline);
    if (del) {
      waiting.insert(d->qemuId());
      continue;
    }
    if (del.error().code == Code::kNotFound) continue;  // gone meanwhile
    if (s.lastError().description.find("already in the process of unplug") != std::string::npos) {
      waiting.insert(d->qemuId());  // asked before (a call that gave up): wait for the guest again
      continue;
    }
    return fail(partial(del.error().wrap(fmt::format("{} on VM {}", d->id, v.host.name)), !waiting.empty()));
  }
  // The guest finishes each unplug (pciehp), then QEMU says DEVICE_DELETED. The QOM tree is read now and then
  // too: an event sent while no session was open (a call that gave up) is not sent again.
  while (!waiting.empty()) {
    const Deadline slice = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(250));
    auto event = s.waitEvent([&](const Json& e) { return e.value("event", "") == "DEVICE_DELETED" && waiting.contains(e["data"].value("device", "")); }, slice);
    if (event) {
      waiting.erase((*event)["data"].value("device", ""));
      continue;
    }
    if (event.error().code != Code::kDeadlineExceeded) return fail(event.error().wrap(fmt::format("waiting for VM {} to release its devices", v.host.name)));
    // The last look may run a moment past the deadline: it decides between "released" and "not released".
    SY_ASSIGN(auto present, peripherals(s, std::max(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(1))));
    std::erase_if(waiting, [&](const std::string& id) { return std::find(present.begin(), present.end(), id) == present.end(); });
    if (!waiting.empty() && std::chrono::steady_clock::now() >= deadline) {
      v.unplugPending.insert(waiting.begin(), waiting.end());
      std::vector<std::string> names;
      for (const auto& id : waiting) names.push_back(deviceOfQemuId_.at(id));
      return fail(Code::kDeadlineExceeded, fmt::format("the guest of VM {} has not released {} (device_del asked; QEMU waits for the guest's hot-plug driver to let go)",
                                                       v.host.name, fmt::join(names, ", ")));
    }
  }
  for (const auto* d : devices) {
    v.unplugPending.erase(d->qemuId());
    if (d->backingMiB > 0) (void)s.execute("blockdev-del", {{"node-name", d->blockNode()}}, deadline);
  }
  return {};
}

Result<std::vector<FabricEvent>> QemuFabric::pollEvents() {
  std::vector<FabricEvent> events;
  std::lock_guard events_lock(eventsMutex_);
  for (std::size_t i = 0; i < vms_.size(); ++i) {
    auto& v = *vms_[i];
    std::unique_lock lock(v.mutex, std::try_to_lock);
    if (!lock.owns_lock()) continue;  // a call is talking to it: it answers
    const Deadline deadline = deadlineAfter(options_.probeTimeout);
    auto s = QmpSession::connect(v.host.qmp, deadline);
    std::string why;
    if (!s) why = s.error().message;
    else if (auto status = s->execute("query-status", deadline); !status) why = status.error().message;
    else if (status->value("status", "") == "shutdown" || status->value("status", "") == "guest-panicked")
      why = fmt::format("VM {} is {}", v.host.name, status->value("status", ""));
    const bool up = why.empty();
    if (up == reachable_[i]) continue;
    reachable_[i] = up;
    events.push_back({.type = up ? "link.up" : "link.down", .subject = v.port,
                      .message = up ? fmt::format("VM {} answers on QMP again", v.host.name) : fmt::format("VM {}: {}", v.host.name, why)});
  }
  return events;
}

}  // namespace switchyard

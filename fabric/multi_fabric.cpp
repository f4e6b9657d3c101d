#include "fabric/multi_fabric.h"

#include <fmt/format.h>

#include <set>

namespace switchyard {

namespace {

// Names the first id two domains both report, for one kind of record.
template <typename T>
Result<void> requireDisjoint(const std::vector<T>& merged, const std::vector<std::string>& domainOfItem, std::string_view what) {
  std::unordered_map<std::string_view, std::size_t> seen;
  for (std::size_t i = 0; i < merged.size(); ++i) {
    auto [it, fresh] = seen.emplace(merged[i].id, i);
    if (!fresh)
      return fail(Code::kInvalidArgument,
                  fmt::format("{} '{}' is reported by domain '{}' and by domain '{}'; ids must be unique across the pool's "
                              "domains (name them apart in each switch manager)",
                              what, merged[i].id, domainOfItem[it->second], domainOfItem[i]));
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<MultiFabric>> MultiFabric::create(std::vector<FabricDomain> domains) {
  if (domains.empty()) return fail(Code::kInvalidArgument, "a pool needs at least one fabric domain");
  std::set<std::string> names;
  for (const auto& d : domains) {
    if (d.name.empty()) return fail(Code::kInvalidArgument, "a fabric domain needs a name");
    if (!d.driver) return fail(Code::kInvalidArgument, fmt::format("fabric domain '{}' has no driver", d.name));
    if (!names.insert(d.name).second) return fail(Code::kInvalidArgument, fmt::format("fabric domain '{}' is named twice", d.name));
  }
  return std::unique_ptr<MultiFabric>(new MultiFabric(std::move(domains)));
}

MultiFabric::MultiFabric(std::vector<FabricDomain> domains) : domains_(std::move(domains)) {
  name_ = "domains(";
  for (std::size_t i = 0; i < domains_.size(); ++i)
    name_ += fmt::format("{}{}:{}", i ? "," : "", domains_[i].name, domains_[i].driver->name());
  name_ += ")";
}

Result<Topology> MultiFabric::discover() {
  Topology merged;
  std::vector<std::string> switchDomain, portDomain, hostDomain, deviceDomain;
  auto routes = std::make_shared<Routes>();
  for (std::size_t i = 0; i < domains_.size(); ++i) {
    const std::string& name = domains_[i].name;
    auto found = domains_[i].driver->discover();
    if (!found) return fail(found.error().code, fmt::format("domain '{}': {}", name, found.error().message));
    for (auto& s : found->switches) {
      s.domain = name;
      merged.switches.push_back(std::move(s));
      switchDomain.push_back(name);
    }
    for (auto& p : found->ports) {
      if (p.kind == PortKind::kUpstream) routes->port.emplace(p.id, i);
      merged.ports.push_back(std::move(p));
      portDomain.push_back(name);
    }
    for (auto& h : found->hosts) {
      merged.hosts.push_back(std::move(h));
      hostDomain.push_back(name);
    }
    for (auto& d : found->devices) {
      routes->device.emplace(d.id, i);
      merged.devices.push_back(std::move(d));
      deviceDomain.push_back(name);
    }
  }
  SY_TRY(requireDisjoint(merged.switches, switchDomain, "switch"));
  SY_TRY(requireDisjoint(merged.ports, portDomain, "port"));
  SY_TRY(requireDisjoint(merged.hosts, hostDomain, "host"));
  SY_TRY(requireDisjoint(merged.devices, deviceDomain, "device"));
  std::lock_guard lock(mutex_);
  routes_ = std::move(routes);
  return merged;
}

Result<std::shared_ptr<const MultiFabric::Routes>> MultiFabric::routes() {
  {
    std::lock_guard lock(mutex_);
    if (routes_) return routes_;
  }
  SY_TRY(discover());
  std::lock_guard lock(mutex_);
  return routes_;
}

Result<std::vector<std::pair<std::size_t, std::vector<Binding>>>> MultiFabric::split(std::span<const Binding> set) {
  SY_ASSIGN(auto routes, this->routes());
  std::vector<std::vector<Binding>> byDomain(domains_.size());
  for (const auto& b : set) {
    auto device = routes->device.find(b.deviceId);
    if (device == routes->device.end()) return fail(Code::kNotFound, fmt::format("no domain has a device '{}'", b.deviceId));
    auto port = routes->port.find(b.upstreamPortId);
    if (port == routes->port.end())
      return fail(Code::kNotFound, fmt::format("no domain has a host upstream port '{}'", b.upstreamPortId));
    if (device->second != port->second)
      return fail(Code::kInvalidArgument,
                  fmt::format("device {} is in domain '{}' and upstream port {} in domain '{}': no switch routes across domains",
                              b.deviceId, domains_[device->second].name, b.upstreamPortId, domains_[port->second].name));
    byDomain[device->second].push_back(b);
  }
  std::vector<std::pair<std::size_t, std::vector<Binding>>> parts;
  for (std::size_t i = 0; i < byDomain.size(); ++i)
    if (!byDomain[i].empty()) parts.emplace_back(i, std::move(byDomain[i]));
  return parts;
}

Result<void> MultiFabric::change(std::span<const Binding> set, bool binding, const CallOptions& options) {
  SY_ASSIGN(auto parts, split(set));
  bool someApplied = false;
  for (const auto& [domain, part] : parts) {
    FabricDriver& driver = *domains_[domain].driver;
    auto done = binding ? driver.bindAll(part, options) : driver.unbindAll(part, options);
    if (done) {
      someApplied = true;
      continue;
    }
    const std::string why = fmt::format("domain '{}': {}", domains_[domain].name, done.error().message);
    if (!someApplied) return fail(done.error().code, why);
    return fail(Code::kUnavailable, fmt::format("{} (the set's part in other domains was applied; repeat the call to converge)", why));
  }
  return {};
}

Result<void> MultiFabric::bindAll(std::span<const Binding> bindings, const CallOptions& options) { return change(bindings, true, options); }

Result<void> MultiFabric::unbindAll(std::span<const Binding> bindings, const CallOptions& options) {
  return change(bindings, false, options);
}

Result<std::vector<Binding>> MultiFabric::readBindings(const CallOptions& options) {
  std::vector<Binding> all;
  for (const auto& d : domains_) {
    auto table = d.driver->readBindings(options);
    if (!table) return fail(table.error().code, fmt::format("domain '{}': {}", d.name, table.error().message));
    all.insert(all.end(), table->begin(), table->end());
  }
  return all;
}

Result<std::vector<Binding>> MultiFabric::readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options) {
  SY_ASSIGN(auto r, routes());
  std::vector<std::vector<PortId>> byDomain(domains_.size());
  for (const auto& port : upstreamPorts) {
    auto it = r->port.find(port);
    if (it == r->port.end()) return fail(Code::kNotFound, fmt::format("no domain has upstream port {}", port));
    byDomain[it->second].push_back(port);
  }
  std::vector<Binding> all;
  for (std::size_t i = 0; i < domains_.size(); ++i) {
    if (byDomain[i].empty()) continue;
    auto table = domains_[i].driver->readBindingsOf(byDomain[i], options);
    if (!table) return fail(table.error().code, fmt::format("domain '{}': {}", domains_[i].name, table.error().message));
    all.insert(all.end(), table->begin(), table->end());
  }
  return all;
}

Result<std::vector<FabricEvent>> MultiFabric::pollEvents() {
  std::lock_guard lock(mutex_);
  std::optional<Error> failed;
  for (const auto& d : domains_) {
    auto events = d.driver->pollEvents();
    if (!events) {
      if (!failed) failed = Error{events.error().code, fmt::format("domain '{}': {}", d.name, events.error().message)};
      continue;
    }
    pendingEvents_.insert(pendingEvents_.end(), std::make_move_iterator(events->begin()), std::make_move_iterator(events->end()));
  }
  if (failed) return fail(failed->code, failed->message);
  return std::exchange(pendingEvents_, {});
}

}  // namespace switchyard

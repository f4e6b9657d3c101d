#include "fabric/redfish/redfish_fabric.h"

#include "fabric/redfish/redfish_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

namespace switchyard {

using nlohmann::json;
using namespace redfish;  // the resource readers of redfish_json.h

namespace {

// Errors from a call that had already changed part of the table: its outcome is partial, never "nothing".
Error partial(const Error& e, std::size_t applied) {
  if (applied == 0) return e;
  return Error{changedNothing(e.code) ? Code::kUnavailable : e.code,
               fmt::format("{} (after {} zone change(s) of this call were applied)", e.message, applied)};
}

}  // namespace

// Holds a change's hosts (their zones) and devices until it is done: a change waits only for one in
// flight on one of them.
class RedfishFabric::Claim {
 public:
  Claim(RedfishFabric& fabric, std::set<DeviceId> devices, std::set<std::string> initiators)
      : fabric_(fabric), devices_(std::move(devices)), initiators_(std::move(initiators)) {
    std::unique_lock lock(fabric_.mutex_);
    fabric_.claimsFreed_.wait(lock, [&] {
      return std::none_of(devices_.begin(), devices_.end(), [&](const auto& d) { return fabric_.claimedDevices_.contains(d); }) &&
             std::none_of(initiators_.begin(), initiators_.end(), [&](const auto& i) { return fabric_.claimedInitiators_.contains(i); });
    });
    fabric_.claimedDevices_.insert(devices_.begin(), devices_.end());
    fabric_.claimedInitiators_.insert(initiators_.begin(), initiators_.end());
  }
  ~Claim() {
    {
      std::lock_guard lock(fabric_.mutex_);
      for (const auto& d : devices_) fabric_.claimedDevices_.erase(d);
      for (const auto& i : initiators_) fabric_.claimedInitiators_.erase(i);
    }
    fabric_.claimsFreed_.notify_all();
  }
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;
  [[nodiscard]] const std::set<std::string>& initiators() const { return initiators_; }

 private:
  RedfishFabric& fabric_;
  std::set<DeviceId> devices_;
  std::set<std::string> initiators_;
};

void RedfishFabric::ZoneTable::put(const Inventory& inventory, const std::string& initiator, Zone zone) {
  erase(initiator);
  for (const auto& e : zone.endpoints)
    if (auto device = inventory.deviceOfTarget.find(e); device != inventory.deviceOfTarget.end())
      if (auto port = portFor(inventory, initiator, device->second)) boundTo[device->second] = {initiator, *port};
  zones[initiator] = std::move(zone);
}

void RedfishFabric::ZoneTable::erase(const std::string& initiator) {
  std::erase_if(boundTo, [&](const auto& entry) { return entry.second.first == initiator; });
  zones.erase(initiator);
}

Result<std::unique_ptr<RedfishFabric>> RedfishFabric::connect(const RedfishFabricOptions& options) {
  SY_ASSIGN(redfish::Endpoint endpoint, redfish::parseUrl(options.url));
  endpoint.user = options.user;
  endpoint.password = options.password;
  endpoint.caFile = options.caFile;
  std::unique_ptr<RedfishFabric> fabric(new RedfishFabric(options, endpoint));
  const auto deadline = deadlineAfter(options.discoveryTimeout);
  // What the service offers: $expand of subordinate resources (ProtocolFeaturesSupported.ExpandQuery.NoLinks).
  // A property of the wrong type reads as absent (json::value() would throw: redfish_fabric_fuzz found it).
  if (auto root = fabric->client_.get("/redfish/v1", deadline); root && root->body.is_object()) {
    auto member = [](const json& j, const char* key) -> const json* { return j.is_object() && j.contains(key) ? &j[key] : nullptr; };
    auto yes = [&](const json* j, const char* key) {
      const json* v = j ? member(*j, key) : nullptr;
      return v && v->is_boolean() && v->get<bool>();
    };
    const json* features = member(root->body, "ProtocolFeaturesSupported");
    const json* expand = features ? member(*features, "ExpandQuery") : nullptr;
    if (yes(expand, "NoLinks")) fabric->expandQuery_ = yes(expand, "Levels") ? "?$expand=.($levels=1)" : "?$expand=.";
  }
  // A session when the service offers one: one credential check, then a token on every request.
  auto login = fabric->client_.post("/redfish/v1/SessionService/Sessions", json{{"UserName", options.user}, {"Password", options.password}}, deadline);
  if (login && !login->authToken.empty()) {
    fabric->client_.useToken(login->authToken);
    fabric->pollClient_.useToken(login->authToken);
    fabric->sessionUri_ = login->location;
  } else if (!login && login.error().code != Code::kNotFound && login.error().code != Code::kInternal) {
    return fail(login.error().wrap(fmt::format("Redfish service {}: logging in", options.url)));
  }  // no SessionService (404, 405): Basic credentials on every request
  SY_ASSIGN(Inventory inventory, fabric->readInventory(deadline));
  fabric->inventory_ = std::make_shared<const Inventory>(std::move(inventory));
  for (const auto& d : fabric->inventory_->topology.devices) fabric->lastHealth_[d.id] = d.health;
  // The zones as they are now: the first bind needs no read. A failure here is not fatal: the first
  // change reads them.
  (void)fabric->refreshZones(fabric->inventory_, {}, deadline);
  fabric->readByConnect_ = true;
  return fabric;
}

RedfishFabric::~RedfishFabric() {
  if (sessionUri_.empty()) return;
  (void)client_.del(sessionUri_, {}, deadlineAfter(std::chrono::seconds(2)));  // best effort: the session expires anyway
}

RedfishFabric::RedfishFabric(RedfishFabricOptions options, const redfish::Endpoint& endpoint)
    : options_(std::move(options)), client_(endpoint), pollClient_(endpoint, {.maxConnections = 8}), fabricUri_("/redfish/v1/Fabrics/" + options_.fabric) {}

RedfishFabric::InventoryPtr RedfishFabric::inventory() const {
  std::lock_guard lock(mutex_);
  return inventory_;
}

Result<Topology> RedfishFabric::discover() {
  {  // the engine's start discovers right after connect() read everything: not twice
    std::lock_guard lock(mutex_);
    if (readByConnect_) {
      readByConnect_ = false;
      return inventory_->topology;
    }
  }
  const auto deadline = deadlineAfter(options_.discoveryTimeout);
  SY_ASSIGN(Inventory inventory, readInventory(deadline));
  auto fresh = std::make_shared<const Inventory>(std::move(inventory));
  {
    std::lock_guard lock(mutex_);
    inventory_ = fresh;
    zonesKnown_ = false;  // read against the new inventory: now, or else by the next change
  }
  (void)refreshZones(fresh, {}, deadline);
  return fresh->topology;
}

Result<std::vector<std::vector<json>>> RedfishFabric::readCollections(const redfish::Client& client, const std::vector<std::string>& uris,
                                                                      redfish::Deadline deadline) const {
  std::vector<std::string> asked;
  for (const auto& uri : uris) asked.push_back(uri + expandQuery_);
  SY_ASSIGN(auto collections, client.getAll(asked, deadline));
  std::vector<std::vector<json>> out(uris.size());
  std::vector<std::string> missing;  // members not expanded: read at once, in a second round
  std::vector<std::pair<std::size_t, std::size_t>> slotOf;
  for (std::size_t i = 0; i < collections.size(); ++i) {
    const json& body = collections[i].body;
    if (!body.is_object() || !body.contains("Members") || !body["Members"].is_array()) continue;
    for (const auto& m : body["Members"]) {
      if (!m.is_object() || !m.contains("@odata.id") || !m["@odata.id"].is_string()) continue;
      if (m.size() > 1) {
        out[i].push_back(m);
      } else {
        slotOf.emplace_back(i, out[i].size());
        missing.push_back(m["@odata.id"].get<std::string>());
        out[i].push_back(m);
      }
    }
  }
  if (missing.empty()) return out;
  SY_ASSIGN(auto members, client.getAll(missing, deadline));
  for (std::size_t k = 0; k < members.size(); ++k) {
    json body = std::move(members[k].body);
    if (body.is_object()) body["@odata.id"] = missing[k];
    out[slotOf[k].first][slotOf[k].second] = std::move(body);
  }
  return out;
}

std::optional<PortId> RedfishFabric::portFor(const Inventory& inventory, const std::string& initiator, const DeviceId& device) {
  auto ports = inventory.portsOfInitiator.find(initiator);
  auto d = inventory.deviceIndex.find(device);
  if (ports == inventory.portsOfInitiator.end() || d == inventory.deviceIndex.end()) return std::nullopt;
  const int fabric = inventory.fabricOfSwitch.at(inventory.switchOfPort.at(inventory.topology.devices[d->second].portId));
  for (const auto& port : ports->second)
    if (inventory.fabricOfSwitch.at(inventory.switchOfPort.at(port)) == fabric) return port;
  return std::nullopt;
}

Result<RedfishFabric::ZoneTable> RedfishFabric::readZones(const Inventory& inventory, redfish::Deadline deadline) const {
  // Not expanded: each zone's ETag (If-Match of the next change) comes with its own GET.
  SY_ASSIGN(auto collection, client_.get(fabricUri_ + "/Zones", deadline));
  const std::vector<std::string> uris = members(collection.body);
  SY_ASSIGN(auto bodies, client_.getAll(uris, deadline));
  ZoneTable table;
  for (std::size_t i = 0; i < uris.size(); ++i) {
    Zone zone{uris[i], bodies[i].etag, links(bodies[i].body, "Endpoints")};
    std::string initiator;
    for (const auto& e : zone.endpoints)
      if (inventory.portsOfInitiator.contains(e)) initiator = e;
    if (!initiator.empty()) table.put(inventory, initiator, std::move(zone));
  }
  return table;
}

Result<RedfishFabric::ZoneTable> RedfishFabric::refreshZones(const InventoryPtr& inventory, const std::set<std::string>& mine,
                                                             redfish::Deadline deadline) {
  SY_ASSIGN(ZoneTable table, readZones(*inventory, deadline));
  std::lock_guard lock(mutex_);
  if (inventory != inventory_) return table;  // rediscovered meanwhile: the next change reads again
  // Another call's zone may be changing under it: its entry is that call's to update.
  auto othersHold = [&](const std::string& initiator) { return claimedInitiators_.contains(initiator) && !mine.contains(initiator); };
  ZoneTable kept;
  for (const auto& [initiator, zone] : zones_.zones)
    if (othersHold(initiator)) kept.put(*inventory, initiator, zone);
  for (const auto& [initiator, zone] : table.zones)
    if (!othersHold(initiator)) kept.put(*inventory, initiator, zone);
  zones_ = std::move(kept);
  zonesKnown_ = true;
  return table;
}

Result<std::vector<Binding>> RedfishFabric::readVcsBindings(const Inventory& inventory, const std::vector<const Inventory::Vcs*>& vcss,
                                                            redfish::Deadline deadline) const {
  static const std::set<std::string> kBound{"BoundPhysicalPort", "BoundLD", "BoundPID"};
  std::vector<std::string> collections;
  for (const auto* vcs : vcss) collections.push_back(vcs->vppbs);
  SY_ASSIGN(auto lists, readCollections(client_, collections, deadline));
  std::map<DeviceId, PortId> bound;
  for (std::size_t i = 0; i < lists.size(); ++i)
    for (const auto& vppb : lists[i]) {
      if (!vppb.is_object() || !kBound.contains(text(vppb, "BindingStatus"))) continue;
      const json& vl = vppb.contains("Links") && vppb["Links"].is_object() ? vppb["Links"] : json::object();
      const std::string downstream = vl.contains("Port") && vl["Port"].is_object() ? text(vl["Port"], "@odata.id") : "";
      auto device = inventory.deviceAtPort.find(portIdOf(downstream));
      if (downstream.empty() || device == inventory.deviceAtPort.end()) continue;  // a port we offer no device behind
      if (auto port = portFor(inventory, vcss[i]->initiator, device->second)) bound.emplace(device->second, *port);
    }
  std::vector<Binding> out;
  for (const auto& [device, port] : bound) out.push_back({device, port});
  return out;
}

Result<std::vector<Binding>> RedfishFabric::readBindings(const CallOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  const InventoryPtr inv = inventory();
  // A CXL switch says what it has bound in its VCSs' vPPBs: that, not the zones (what was asked for), is
  // what reconcile compares with the store.
  if (!inv->vcss.empty()) {
    std::vector<const Inventory::Vcs*> all;
    for (const auto& vcs : inv->vcss) all.push_back(&vcs);
    return readVcsBindings(*inv, all, deadline);
  }
  SY_ASSIGN(ZoneTable table, refreshZones(inv, {}, deadline));
  std::vector<Binding> out;
  for (const auto& [device, where] : table.boundTo) out.push_back({device, where.second});
  std::sort(out.begin(), out.end(), [](const Binding& a, const Binding& b) { return a.deviceId < b.deviceId; });
  return out;
}

Result<std::vector<Binding>> RedfishFabric::readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  const InventoryPtr inv = inventory();
  std::set<std::string> initiators;
  for (const auto& port : upstreamPorts)
    if (auto it = inv->initiatorOfPort.find(port); it != inv->initiatorOfPort.end()) initiators.insert(it->second);
  auto asked = [&](const Binding& b) { return std::find(upstreamPorts.begin(), upstreamPorts.end(), b.upstreamPortId) != upstreamPorts.end(); };
  std::vector<Binding> out;
  if (!inv->vcss.empty()) {
    // Only the VCSs of these hosts: their vPPBs, read at once.
    std::vector<const Inventory::Vcs*> theirs;
    for (const auto& vcs : inv->vcss)
      if (initiators.contains(vcs.initiator)) theirs.push_back(&vcs);
    SY_ASSIGN(auto bound, readVcsBindings(*inv, theirs, deadline));
    std::copy_if(bound.begin(), bound.end(), std::back_inserter(out), asked);
    return out;
  }
  // A fabric whose zones are its bindings: these hosts' zones, read at once. A host with no zone known
  // here may have had one made by someone else: then the whole table is read.
  std::vector<std::string> uris;
  {
    std::lock_guard lock(mutex_);
    for (const auto& initiator : initiators)
      if (auto z = zones_.zones.find(initiator); zonesKnown_ && z != zones_.zones.end()) uris.push_back(z->second.uri);
  }
  if (uris.size() != initiators.size()) {
    SY_ASSIGN(auto all, readBindings(options));
    std::copy_if(all.begin(), all.end(), std::back_inserter(out), asked);
    return out;
  }
  SY_ASSIGN(auto zones, client_.getAll(uris, deadline));
  ZoneTable table;
  for (std::size_t i = 0; i < zones.size(); ++i) {
    std::string initiator;
    const auto endpoints = links(zones[i].body, "Endpoints");
    for (const auto& e : endpoints)
      if (initiators.contains(e)) initiator = e;
    if (!initiator.empty()) table.put(*inv, initiator, Zone{uris[i], zones[i].etag, endpoints});
  }
  for (const auto& [device, where] : table.boundTo)
    if (asked(Binding{device, where.second})) out.push_back({device, where.second});
  std::sort(out.begin(), out.end(), [](const Binding& a, const Binding& b) { return a.deviceId < b.deviceId; });
  return out;
}

Result<void> RedfishFabric::checkSet(const Inventory& inventory, std::span<const Binding> set, bool binding) {
  std::unordered_set<std::string_view> seen;
  for (const auto& [device, port] : set) {
    if (!seen.insert(device).second) return fail(Code::kInvalidArgument, fmt::format("device '{}' appears twice in one call", device));
    if (!inventory.targetUri.contains(device)) return fail(Code::kNotFound, fmt::format("the fabric has no device '{}'", device));
    auto initiator = inventory.initiatorOfPort.find(port);
    if (initiator == inventory.initiatorOfPort.end())
      return fail(Code::kNotFound, fmt::format("the fabric has no host upstream port '{}'", port));
    if (binding && portFor(inventory, initiator->second, device) != port)
      return fail(Code::kInvalidArgument, fmt::format("device '{}' and upstream port '{}' are in different fabrics", device, port));
  }
  return {};
}

Result<void> RedfishFabric::bindAll(std::span<const Binding> set, const CallOptions& options) { return changeSet(set, true, options); }

Result<void> RedfishFabric::unbindAll(std::span<const Binding> set, const CallOptions& options) {
  return changeSet(set, false, options);
}

Result<void> RedfishFabric::changeSet(std::span<const Binding> set, bool binding, const CallOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  const InventoryPtr inv = inventory();
  SY_TRY(checkSet(*inv, set, binding));
  std::set<DeviceId> devices;
  std::set<std::string> initiators;
  for (const auto& [device, port] : set) {
    devices.insert(device);
    initiators.insert(inv->initiatorOfPort.at(port));
  }
  // An unbind changes the zone that holds the device, which is its port's host's zone when it is bound to that port.
  const Claim claim(*this, std::move(devices), std::move(initiators));
  std::size_t applied = 0;
  for (int attempt = 0;; ++attempt) {
    bool known = false;
    {
      std::lock_guard lock(mutex_);
      known = zonesKnown_ && inventory_ == inv;
    }
    if (!known) SY_TRY(refreshZones(inv, claim.initiators(), deadline));
    // The new endpoint list of each host's zone, checked whole before anything is sent.
    std::map<std::string, std::vector<std::string>> wanted;  // initiator -> endpoints after this call
    std::map<std::string, Zone> before;                       // initiator -> its zone now (none: no entry)
    {
      std::lock_guard lock(mutex_);
      auto current = [&](const std::string& initiator) -> std::vector<std::string>& {
        if (auto it = wanted.find(initiator); it != wanted.end()) return it->second;
        if (auto z = zones_.zones.find(initiator); z != zones_.zones.end()) {
          before[initiator] = z->second;
          return wanted[initiator] = z->second.endpoints;
        }
        return wanted[initiator] = {initiator};
      };
      for (const auto& [device, port] : set) {
        const std::string& target = inv->targetUri.at(device);
        auto bound = zones_.boundTo.find(device);
        if (binding) {
          if (bound != zones_.boundTo.end()) {
            if (bound->second.second == port) continue;  // idempotent
            return fail(partial(Error{Code::kFailedPrecondition, fmt::format("device '{}' is bound to upstream port '{}'", device, bound->second.second)},
                                applied));
          }
          current(inv->initiatorOfPort.at(port)).push_back(target);
        } else {
          if (bound == zones_.boundTo.end()) continue;  // idempotent
          if (bound->second.second != port)
            return fail(partial(Error{Code::kFailedPrecondition, fmt::format("device '{}' is bound to '{}', not '{}'", device, bound->second.second, port)},
                                applied));
          std::erase(current(bound->second.first), target);
        }
      }
    }
    // One request per host, all sent at once.
    std::vector<std::string> order;
    std::vector<redfish::Request> requests;
    for (const auto& [initiator, endpoints] : wanted) {
      json list = json::array();
      for (const auto& e : endpoints) list.push_back({{"@odata.id", e}});
      auto zone = before.find(initiator);
      if (zone == before.end()) {
        if (endpoints.size() <= 1) continue;  // nothing to bind and no zone: nothing to do
        requests.push_back({"POST", fabricUri_ + "/Zones",
                            json{{"Name", fmt::format("switchyard {}", lastSegment(initiator))}, {"ZoneType", "ZoneOfEndpoints"}, {"Links", {{"Endpoints", list}}}},
                            {}});
      } else if (endpoints == zone->second.endpoints) {
        continue;
      } else if (endpoints.size() <= 1) {
        requests.push_back({"DELETE", zone->second.uri, std::nullopt, zone->second.etag});  // the host's last device left: the zone goes
      } else {
        requests.push_back({"PATCH", zone->second.uri, json{{"Links", {{"Endpoints", list}}}}, zone->second.etag});
      }
      order.push_back(initiator);
    }
    if (requests.empty()) return {};
    auto results = client_.exchangeAll(requests, deadline);
    std::optional<Error> failed;
    bool stale = false;  // a zone moved since we read it (412): read them again and retry once
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < results.size(); ++i) {
        const std::string& initiator = order[i];
        if (results[i] && results[i]->status == 412) stale = true;
        if (results[i]) results[i] = redfish::Client::accepted(std::move(*results[i]), requests[i]);
        if (!results[i]) {
          if (!failed) failed = results[i].error().wrap(fmt::format("{} {}", binding ? "bind" : "unbind", lastSegment(initiator)));
          continue;
        }
        ++applied;
        ++zoneUpdates_;
        if (inventory_ != inv) continue;
        if (requests[i].method == "DELETE") {
          zones_.erase(initiator);
        } else {
          const redfish::Response& r = *results[i];
          std::string uri = requests[i].method == "POST" ? r.location : requests[i].path;
          if (uri.empty()) uri = text(r.body, "@odata.id");
          zones_.put(*inv, initiator, Zone{uri, r.etag, wanted[initiator]});
        }
      }
      if (failed) zonesKnown_ = false;  // what failed may have been applied: read before the next change
    }
    if (!failed) return {};
    if (!stale || attempt > 0) return fail(partial(*failed, applied));
  }
}

Result<std::vector<FabricEvent>> RedfishFabric::pollEvents() {
  const auto deadline = deadlineAfter(std::chrono::seconds(10));
  const InventoryPtr inv = inventory();
  // Health is read from each target endpoint's Status, all at once (the Endpoints collection expanded,
  // where the service offers it, and the targets it leaves out); a change since the last poll is an event.
  // (An SSE subscription to the service's EventService would push these instead; not built yet.)
  std::unordered_map<std::string, DeviceHealth> healthOfUri;
  if (!expandQuery_.empty()) {
    auto listed = readCollections(pollClient_, {fabricUri_ + "/Endpoints"}, deadline);
    if (!listed) return fail(listed.error().wrap("cannot read the fabric's endpoint health"));
    for (const auto& e : listed->front())
      if (e.is_object()) healthOfUri[text(e, "@odata.id")] = healthOf(e);
  }
  std::vector<std::string> unread;
  for (const auto& d : inv->topology.devices)
    if (!healthOfUri.contains(inv->targetUri.at(d.id))) unread.push_back(inv->targetUri.at(d.id));
  auto read = pollClient_.getAll(unread, deadline);
  if (!read) return fail(read.error().wrap("cannot read the fabric's endpoint health"));
  for (std::size_t i = 0; i < unread.size(); ++i) healthOfUri[unread[i]] = healthOf((*read)[i].body);
  std::vector<FabricEvent> events;
  std::lock_guard lock(mutex_);
  for (const auto& d : inv->topology.devices) {
    const DeviceHealth health = healthOfUri.at(inv->targetUri.at(d.id));
    DeviceHealth& last = lastHealth_[d.id];
    if (health == last) continue;
    last = health;
    events.push_back({"device.health", d.id, fmt::format("device {} health is now {}", d.id, toString(health)), health});
  }
  return events;
}

std::uint64_t RedfishFabric::zoneUpdates() const {
  std::lock_guard lock(mutex_);
  return zoneUpdates_;
}

}  // namespace switchyard

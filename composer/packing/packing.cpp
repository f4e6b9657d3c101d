#include "composer/packing/packing.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <variant>

namespace switchyard {

std::string_view toString(PeerToPeer v) {
  switch (v) {
    case PeerToPeer::kRequired: return "required";
    case PeerToPeer::kPreferred: return "preferred";
    case PeerToPeer::kNone: return "none";
  }
  return "?";
}

std::optional<PeerToPeer> parsePeerToPeer(std::string_view s) {
  if (s == "required") return PeerToPeer::kRequired;
  if (s == "preferred" || s.empty()) return PeerToPeer::kPreferred;
  if (s == "none") return PeerToPeer::kNone;
  return std::nullopt;
}

namespace {

bool eligible(const PoolDevice& d, const PlacementRequest& r) {
  return d.free && d.kind == DeviceKind::kGpu && d.health != DeviceHealth::kCritical &&
         (r.model.empty() || d.model == r.model) && d.memoryGiB >= r.minMemoryGiB;
}

// Eligible free devices per switch, computed once per decision (filters do not depend on the host).
std::vector<std::vector<int>> eligibleBySwitch(const Pool& pool, const PlacementRequest& r) {
  std::vector<std::vector<int>> out(pool.switches().size());
  for (std::size_t s = 0; s < pool.switches().size(); ++s)
    for (int d : pool.switches()[s].freeDevices)
      if (eligible(pool.devices()[static_cast<std::size_t>(d)], r)) out[s].push_back(d);
  return out;
}

// Lexicographic: fewer switches, fewer devices across an inter-switch link, tighter fit, then host order.
using Score = std::tuple<int, int, int, int>;

struct Candidate {
  Score score;
  int hostIndex;
  std::vector<PlacedDevice> devices;
  std::string summary;
};

const PoolHostPort* portInto(const PoolHost& host, int switchIndex) {
  for (const auto& p : host.ports)
    if (p.switchIndex == switchIndex) return &p;
  return nullptr;
}

// The host port used for a device on another switch of the same fabric (traffic crosses the ISL).
const PoolHostPort* portIntoFabric(const Pool& pool, const PoolHost& host, int fabric) {
  for (const auto& p : host.ports)
    if (p.switchIndex >= 0 && pool.switches()[static_cast<std::size_t>(p.switchIndex)].fabric == fabric) return &p;
  return nullptr;
}

std::string countsBySwitch(const Pool& pool, const std::vector<std::pair<int, std::size_t>>& counts) {
  std::string out;
  for (const auto& [s, n] : counts)
    out += fmt::format("{}{} has {}", out.empty() ? "" : ", ", pool.switches()[static_cast<std::size_t>(s)].id, n);
  return out.empty() ? "no switch reachable" : out;
}

void addDevices(const Pool& pool, const std::vector<int>& from, std::size_t n, const PoolHostPort& port,
                std::vector<PlacedDevice>& out) {
  for (std::size_t i = 0; i < n && i < from.size(); ++i) {
    const auto& d = pool.devices()[static_cast<std::size_t>(from[i])];
    out.push_back({d.id, pool.switches()[static_cast<std::size_t>(d.switchIndex)].id, port.portId});
  }
}

// Tries one host; returns a candidate or the reason it cannot serve the request.
std::variant<Candidate, std::string> tryHost(const Pool& pool, int hostIndex, const PlacementRequest& r,
                                             const std::vector<std::vector<int>>& eligibleSw) {
  const PoolHost& host = pool.hosts()[static_cast<std::size_t>(hostIndex)];
  const auto n = static_cast<std::size_t>(r.gpuCount);
  if (host.inSystem && !r.hostMayHaveSystem) return std::string("already serves a composed system (use attach to grow it)");
  const int room = host.maxDevices - host.attachedDevices;
  if (room < r.gpuCount)
    return fmt::format("device limit: {} of {} attached, needs room for {}", host.attachedDevices, host.maxDevices, r.gpuCount);

  // Switches the host has an upstream port into, in port order, without repeats.
  std::vector<std::pair<int, std::size_t>> direct;
  for (const auto& p : host.ports)
    if (p.switchIndex >= 0 && std::none_of(direct.begin(), direct.end(), [&](auto& e) { return e.first == p.switchIndex; }))
      direct.emplace_back(p.switchIndex, eligibleSw[static_cast<std::size_t>(p.switchIndex)].size());
  if (direct.empty()) return std::string("has no upstream port into any switch");

  // 1. All under one directly cabled switch: tightest fit.
  const std::pair<int, std::size_t>* best = nullptr;
  for (const auto& e : direct)
    if (e.second >= n && (!best || e.second < best->second)) best = &e;
  if (best) {
    Candidate c{{1, 0, static_cast<int>(best->second - n), hostIndex}, hostIndex, {}, {}};
    const PoolHostPort& port = *portInto(host, best->first);
    addDevices(pool, eligibleSw[static_cast<std::size_t>(best->first)], n, port, c.devices);
    c.summary = fmt::format("{} GPU(s) under {} via {} (NUMA {}); {} eligible free there, {} left", n,
                            pool.switches()[static_cast<std::size_t>(best->first)].id, port.portId, port.numaNode,
                            best->second, best->second - n);
    return c;
  }
  if (r.peerToPeer == PeerToPeer::kRequired)
    return fmt::format("peer-to-peer required: no directly cabled switch has {} eligible free GPUs ({})", n,
                       countsBySwitch(pool, direct));

  // 2. Span switches: direct ones first (most free first), then others in the same fabric over an ISL.
  std::vector<std::tuple<int, int, std::size_t>> order;  // (crossesIsl, switch, count)
  for (const auto& [s, count] : direct)
    if (count > 0) order.emplace_back(0, s, count);
  for (std::size_t s = 0; s < pool.switches().size(); ++s) {
    const int si = static_cast<int>(s);
    if (eligibleSw[s].empty() || portInto(host, si)) continue;
    if (portIntoFabric(pool, host, pool.switches()[s].fabric)) order.emplace_back(1, si, eligibleSw[s].size());
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b) : std::get<2>(a) > std::get<2>(b);
  });
  Candidate c{{0, 0, 0, hostIndex}, hostIndex, {}, {}};
  std::size_t taken = 0;
  std::string parts;
  for (const auto& [crosses, s, count] : order) {
    if (taken == n) break;
    const std::size_t take = std::min(count, n - taken);
    const PoolHostPort* port = crosses ? portIntoFabric(pool, host, pool.switches()[static_cast<std::size_t>(s)].fabric)
                                       : portInto(host, s);
    addDevices(pool, eligibleSw[static_cast<std::size_t>(s)], take, *port, c.devices);
    parts += fmt::format("{}{} from {}{}", parts.empty() ? "" : ", ", take, pool.switches()[static_cast<std::size_t>(s)].id,
                         crosses ? " (over an inter-switch link)" : "");
    taken += take;
    std::get<0>(c.score) += 1;
    std::get<1>(c.score) += crosses ? static_cast<int>(take) : 0;
    std::get<2>(c.score) += static_cast<int>(count - take);
  }
  if (taken < n) {
    return fmt::format("only {} eligible free GPU(s) reachable, needs {}", taken, n);
  }
  c.summary = fmt::format("{} GPU(s) across {} switches: {}", n, std::get<0>(c.score), parts);
  return c;
}

PlacementDecision placeExplicit(const Pool& pool, const PlacementRequest& r) {
  PlacementDecision out;
  const int hi = pool.hostIndex(*r.host);
  const PoolHost& host = pool.hosts()[static_cast<std::size_t>(hi)];
  if (host.inSystem && !r.hostMayHaveSystem) {
    out.error = Error{Code::kFailedPrecondition, fmt::format("host '{}' already serves a composed system (use attach to grow it)", host.id)};
    return out;
  }
  if (host.maxDevices - host.attachedDevices < static_cast<int>(r.devices.size())) {
    out.error = Error{Code::kResourceExhausted, fmt::format("host '{}' device limit: {} of {} attached, needs room for {}", host.id,
                                                            host.attachedDevices, host.maxDevices, r.devices.size())};
    return out;
  }
  Placement p{host.id, {}, {}};
  for (const auto& id : r.devices) {
    const PoolDevice& d = pool.devices()[static_cast<std::size_t>(pool.deviceIndex(id))];
    if (!d.free) {
      out.error = Error{Code::kFailedPrecondition, fmt::format("device '{}' is busy (in a system or being changed)", id)};
      return out;
    }
    const PoolHostPort* port = portInto(host, d.switchIndex);
    if (!port) port = portIntoFabric(pool, host, pool.switches()[static_cast<std::size_t>(d.switchIndex)].fabric);
    if (!port) {
      out.error = Error{Code::kFailedPrecondition, fmt::format("device '{}' is in a fabric host '{}' is not cabled to", id, host.id)};
      return out;
    }
    p.devices.push_back({d.id, pool.switches()[static_cast<std::size_t>(d.switchIndex)].id, port->portId});
  }
  p.explanation = fmt::format("{}: {} device(s) chosen by the caller", host.id, p.devices.size());
  out.candidates.push_back({host.id, true, p.explanation});
  out.placement = std::move(p);
  return out;
}

}  // namespace

Result<void> validatePlacementRequest(const Pool& pool, const PlacementRequest& r) {
  if (r.devices.empty()) {
    if (r.gpuCount <= 0) return fail(Code::kInvalidArgument, fmt::format("gpu count must be at least 1 (got {})", r.gpuCount));
    if (r.gpuCount > static_cast<int>(pool.devices().size()))
      return fail(Code::kResourceExhausted,
                  fmt::format("asked for {} GPUs but the whole pool has {}", r.gpuCount, pool.devices().size()));
  } else {
    if (!r.host) return fail(Code::kInvalidArgument, "explicit devices need a host");
    for (std::size_t i = 0; i < r.devices.size(); ++i) {
      if (pool.deviceIndex(r.devices[i]) < 0) return fail(Code::kNotFound, fmt::format("no device '{}'", r.devices[i]));
      for (std::size_t j = 0; j < i; ++j)
        if (r.devices[i] == r.devices[j]) return fail(Code::kInvalidArgument, fmt::format("device '{}' is listed twice", r.devices[i]));
    }
  }
  if (r.minMemoryGiB < 0) return fail(Code::kInvalidArgument, "minimum memory must be >= 0");
  if (r.host && pool.hostIndex(*r.host) < 0) return fail(Code::kNotFound, fmt::format("no host '{}'", *r.host));
  return {};
}

PlacementDecision place(const Pool& pool, const PlacementRequest& r) {
  PlacementDecision out;
  if (auto v = validatePlacementRequest(pool, r); !v) {
    out.error = v.error();
    return out;
  }
  if (!r.devices.empty()) return placeExplicit(pool, r);

  const auto eligibleSw = eligibleBySwitch(pool, r);
  std::optional<Candidate> best;
  auto consider = [&](int hi) {
    auto result = tryHost(pool, hi, r, eligibleSw);
    const HostId& id = pool.hosts()[static_cast<std::size_t>(hi)].id;
    if (auto* reason = std::get_if<std::string>(&result)) {
      out.candidates.push_back({id, false, std::move(*reason)});
      return;
    }
    auto& c = std::get<Candidate>(result);
    out.candidates.push_back({id, true, c.summary});
    if (!best || c.score < best->score) best = std::move(c);
  };
  if (r.host) {
    consider(pool.hostIndex(*r.host));
  } else {
    for (std::size_t hi = 0; hi < pool.hosts().size(); ++hi) consider(static_cast<int>(hi));
  }

  if (!best) {
    std::string why = fmt::format("no host can take {} GPU(s){}{}{}:", r.gpuCount,
                                  r.model.empty() ? "" : fmt::format(" of model {}", r.model),
                                  r.minMemoryGiB ? fmt::format(" with >= {} GiB", r.minMemoryGiB) : "",
                                  r.peerToPeer == PeerToPeer::kRequired ? " under one switch" : "");
    for (const auto& c : out.candidates) why += fmt::format("\n  {}: {}", c.hostId, c.reason);
    out.error = Error{Code::kResourceExhausted, std::move(why)};
    return out;
  }
  const auto feasible = std::count_if(out.candidates.begin(), out.candidates.end(), [](auto& c) { return c.feasible; });
  const HostId& hostId = pool.hosts()[static_cast<std::size_t>(best->hostIndex)].id;
  out.placement = Placement{hostId, std::move(best->devices),
                            fmt::format("{}: {}; best of {} feasible host(s)", hostId, best->summary, feasible)};
  return out;
}

}  // namespace switchyard

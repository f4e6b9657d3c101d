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

// Part of a candidate: `take` devices from one switch, through one host port.
struct Part {
  int switchIndex;
  std::size_t take;
  std::size_t eligible;
  const PoolHostPort* port;
  bool crossesIsl;
};

// A feasible host, kept as indices; strings are made only for the winner (or when explaining).
struct Candidate {
  Score score;
  int hostIndex;
  std::vector<Part> parts;
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

const std::string& switchName(const Pool& pool, int s) { return pool.switches()[static_cast<std::size_t>(s)].id; }

std::string countsBySwitch(const Pool& pool, const std::vector<std::pair<int, std::size_t>>& counts) {
  std::string out;
  for (const auto& [s, n] : counts) out += fmt::format("{}{} has {}", out.empty() ? "" : ", ", switchName(pool, s), n);
  return out.empty() ? "no switch reachable" : out;
}

std::string summarize(const Pool& pool, const Candidate& c, std::size_t n) {
  if (c.parts.size() == 1 && !c.parts[0].crossesIsl) {
    const Part& p = c.parts[0];
    return fmt::format("{} GPU(s) under {} via {} (NUMA {}); {} eligible free there, {} left", n, switchName(pool, p.switchIndex),
                       p.port->portId, p.port->numaNode, p.eligible, p.eligible - n);
  }
  std::string parts;
  for (const auto& p : c.parts)
    parts += fmt::format("{}{} from {}{}", parts.empty() ? "" : ", ", p.take, switchName(pool, p.switchIndex),
                         p.crossesIsl ? " (over an inter-switch link)" : "");
  return fmt::format("{} GPU(s) across {} switches: {}", n, c.parts.size(), parts);
}

std::vector<PlacedDevice> materialize(const Pool& pool, const Candidate& c, const std::vector<std::vector<int>>& eligibleSw) {
  std::vector<PlacedDevice> out;
  for (const auto& p : c.parts) {
    const auto& from = eligibleSw[static_cast<std::size_t>(p.switchIndex)];
    for (std::size_t i = 0; i < p.take; ++i)
      out.push_back({pool.devices()[static_cast<std::size_t>(from[i])].id, switchName(pool, p.switchIndex), p.port->portId});
  }
  return out;
}

// Tries one host: a candidate, or nullopt with the reason in `why` (only when explaining).
std::optional<Candidate> tryHost(const Pool& pool, int hostIndex, const PlacementRequest& r,
                                 const std::vector<std::vector<int>>& eligibleSw, bool explain, std::string& why) {
  const PoolHost& host = pool.hosts()[static_cast<std::size_t>(hostIndex)];
  const auto n = static_cast<std::size_t>(r.gpuCount);
  if (host.inSystem && !r.hostMayHaveSystem) {
    if (explain) why = "already serves a composed system (use attach to grow it)";
    return std::nullopt;
  }
  const int room = host.maxDevices - host.attachedDevices;
  if (room < r.gpuCount) {
    if (explain) why = fmt::format("device limit: {} of {} attached, needs room for {}", host.attachedDevices, host.maxDevices, r.gpuCount);
    return std::nullopt;
  }

  // 1. All under one directly cabled switch: tightest fit.
  const PoolHostPort* bestPort = nullptr;
  std::size_t bestCount = 0;
  for (const auto& p : host.ports) {
    if (p.switchIndex < 0) continue;
    const std::size_t count = eligibleSw[static_cast<std::size_t>(p.switchIndex)].size();
    if (count >= n && (!bestPort || count < bestCount)) {
      bestPort = &p;
      bestCount = count;
    }
  }
  if (bestPort)
    return Candidate{{1, 0, static_cast<int>(bestCount - n), hostIndex}, hostIndex, {{bestPort->switchIndex, n, bestCount, bestPort, false}}};

  // Switches the host has an upstream port into, in port order, without repeats.
  std::vector<std::pair<int, std::size_t>> direct;
  for (const auto& p : host.ports)
    if (p.switchIndex >= 0 && std::none_of(direct.begin(), direct.end(), [&](auto& e) { return e.first == p.switchIndex; }))
      direct.emplace_back(p.switchIndex, eligibleSw[static_cast<std::size_t>(p.switchIndex)].size());
  if (direct.empty()) {
    if (explain) why = "has no upstream port into any switch";
    return std::nullopt;
  }
  if (r.peerToPeer == PeerToPeer::kRequired) {
    if (explain)
      why = fmt::format("peer-to-peer required: no directly cabled switch has {} eligible free GPUs ({})", n, countsBySwitch(pool, direct));
    return std::nullopt;
  }

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
  Candidate c{{0, 0, 0, hostIndex}, hostIndex, {}};
  std::size_t taken = 0;
  for (const auto& [crosses, s, count] : order) {
    if (taken == n) break;
    const std::size_t take = std::min(count, n - taken);
    const PoolHostPort* port = crosses ? portIntoFabric(pool, host, pool.switches()[static_cast<std::size_t>(s)].fabric) : portInto(host, s);
    c.parts.push_back({s, take, count, port, crosses != 0});
    taken += take;
    std::get<0>(c.score) += 1;
    std::get<1>(c.score) += crosses ? static_cast<int>(take) : 0;
    std::get<2>(c.score) += static_cast<int>(count - take);
  }
  if (taken < n) {
    if (explain) why = fmt::format("only {} eligible free GPU(s) reachable, needs {}", taken, n);
    return std::nullopt;
  }
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
  const auto n = static_cast<std::size_t>(r.gpuCount);
  auto decide = [&](bool explain) {
    out.candidates.clear();
    std::optional<Candidate> best;
    std::string why;
    auto consider = [&](int hi) {
      auto c = tryHost(pool, hi, r, eligibleSw, explain, why);
      if (explain) {
        const HostId& id = pool.hosts()[static_cast<std::size_t>(hi)].id;
        out.candidates.push_back(c ? CandidateVerdict{id, true, summarize(pool, *c, n)} : CandidateVerdict{id, false, std::move(why)});
      }
      if (c && (!best || c->score < best->score)) best = std::move(c);
    };
    if (r.host) {
      consider(pool.hostIndex(*r.host));
    } else {
      for (std::size_t hi = 0; hi < pool.hosts().size(); ++hi) consider(static_cast<int>(hi));
    }
    return best;
  };

  std::optional<Candidate> best = decide(r.explain);
  if (!best) {
    if (!r.explain) decide(true);  // failures always say why, host by host
    std::string why = fmt::format("no host can take {} GPU(s){}{}{}:", r.gpuCount,
                                  r.model.empty() ? "" : fmt::format(" of model {}", r.model),
                                  r.minMemoryGiB ? fmt::format(" with >= {} GiB", r.minMemoryGiB) : "",
                                  r.peerToPeer == PeerToPeer::kRequired ? " under one switch" : "");
    for (const auto& c : out.candidates) why += fmt::format("\n  {}: {}", c.hostId, c.reason);
    out.error = Error{Code::kResourceExhausted, std::move(why)};
    return out;
  }
  const HostId& hostId = pool.hosts()[static_cast<std::size_t>(best->hostIndex)].id;
  std::string explanation = fmt::format("{}: {}", hostId, summarize(pool, *best, n));
  if (r.explain) {
    const auto feasible = std::count_if(out.candidates.begin(), out.candidates.end(), [](auto& c) { return c.feasible; });
    explanation += fmt::format("; best of {} feasible host(s)", feasible);
  }
  out.placement = Placement{hostId, materialize(pool, *best, eligibleSw), std::move(explanation)};
  return out;
}

}  // namespace switchyard

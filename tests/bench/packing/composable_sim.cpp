#include "tests/bench/packing/composable_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace switchyard::bench {

using sharing::kMilliPerGpu;

std::string ComposableShape::describe() const {
  if (mirrorServers) return "mirror (K=8, U=1, P=1: one enclosure per server)";
  const std::string gpus = gpuPercent == 100 ? "" : fmt::format(", {} % of the GPUs", gpuPercent);
  return fmt::format("K={} U={} P={} L={}{}", slots, enclosurePorts, hostPorts, deviceLimit, gpus);
}

ComposablePool::ComposablePool(const sharing::ShareCluster& servers, const ComposableShape& shape) : shape_(shape) {
  if (shape.gpuPercent < 1 || shape.gpuPercent > 100 || (shape.mirrorServers && shape.gpuPercent != 100))
    throw std::invalid_argument(fmt::format("a pool holds 1-100 % of its servers' GPUs (a mirror pool all), not {} %", shape.gpuPercent));
  for (const auto& n : servers.nodes())
    hosts_.push_back({n.name, n.cpuCapacity, n.cpuCapacity, n.memoryCapacity, n.memoryCapacity, n.model, 0, {}, {}});
  cable(servers, shape);
  std::vector<sharing::ShareNode> nodes;
  for (const auto& l : links_) nodes.push_back(view(l));
  views_ = sharing::ShareCluster(std::move(nodes), servers.models());
  totalGpuMilli_ = static_cast<int64_t>(gpuLeft_.size()) * kMilliPerGpu;
}

void ComposablePool::cable(const sharing::ShareCluster& servers, const ComposableShape& shape) {
  auto addGpus = [&](Enclosure& e, int n) {
    for (int g = 0; g < n; ++g) {
      e.gpus.push_back(gpuLeft_.size());
      gpuLeft_.push_back(kMilliPerGpu);
      gpuMigTaken_.push_back(0);
      gpuHost_.push_back(-1);
    }
    e.free = n;
  };
  auto link = [&](size_t h, size_t e) {
    hosts_[h].links.push_back(links_.size());
    enclosures_[e].links.push_back(links_.size());
    links_.push_back({h, static_cast<long>(e), {}});
  };
  if (shape.mirrorServers) {
    for (size_t h = 0; h < servers.size(); ++h) {
      const auto& n = servers.node(h);
      if (n.gpuCount() == 0) continue;
      enclosures_.push_back({n.model, {}, 0, {}});
      addGpus(enclosures_.back(), n.gpuCount());
      link(h, enclosures_.size() - 1);
      // The server's GPUs are its own from the start: bound once, never moved.
      Enclosure& e = enclosures_.back();
      for (size_t g : e.gpus) {
        gpuHost_[g] = static_cast<long>(h);
        links_.back().attached.push_back(g);
      }
      hosts_[h].attached = e.free;
      e.free = 0;
    }
  } else {
    // Per model: its GPUs packed into enclosures of K slots, then each host's P ports spread round-robin
    // over that model's enclosures, skipping enclosures whose U ports are taken or already linked to it.
    std::map<uint8_t, std::vector<size_t>> hostsByModel;
    std::map<uint8_t, int> gpusByModel;
    for (size_t h = 0; h < servers.size(); ++h) {
      const auto& n = servers.node(h);
      if (n.gpuCount() == 0) continue;
      hostsByModel[n.model].push_back(h);
      gpusByModel[n.model] += n.gpuCount();
    }
    for (auto& [model, gpus] : gpusByModel) gpus = static_cast<int>(std::lround(gpus * shape.gpuPercent / 100.0));
    for (const auto& [model, hosts] : hostsByModel) {
      const size_t first = enclosures_.size();
      for (int left = gpusByModel[model]; left > 0; left -= shape.slots) {
        enclosures_.push_back({model, {}, 0, {}});
        addGpus(enclosures_.back(), std::min(left, shape.slots));
      }
      const size_t count = enclosures_.size() - first;
      for (int p = 0; p < shape.hostPorts; ++p)
        for (size_t i = 0; i < hosts.size(); ++i) {
          const size_t h = hosts[i];
          for (size_t step = 0; step < count; ++step) {
            const size_t e = first + (i * static_cast<size_t>(shape.hostPorts) + static_cast<size_t>(p) + step) % count;
            const bool full = static_cast<int>(enclosures_[e].links.size()) >= shape.enclosurePorts;
            const bool already = std::any_of(hosts_[h].links.begin(), hosts_[h].links.end(),
                                             [&](size_t l) { return links_[l].enclosure == static_cast<long>(e); });
            if (full || already) continue;
            link(h, e);
            break;
          }
        }
    }
  }
  // Hosts without a GPU link still serve CPU-only requests.
  for (size_t h = 0; h < hosts_.size(); ++h)
    if (hosts_[h].links.empty()) {
      hosts_[h].links.push_back(links_.size());
      links_.push_back({h, -1, {}});
    }
  // Views follow host order, so a tie between hosts goes to the same host as in static mode.
  std::vector<size_t> order(links_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return links_[a].host < links_[b].host; });
  std::vector<size_t> newIndex(links_.size());
  std::vector<Link> sorted;
  for (size_t i = 0; i < order.size(); ++i) {
    newIndex[order[i]] = i;
    sorted.push_back(links_[order[i]]);
  }
  links_ = std::move(sorted);
  for (auto& l : links_) l.name = l.enclosure < 0 ? hosts_[l.host].name : fmt::format("{}/enc{}", hosts_[l.host].name, l.enclosure);
  for (auto& h : hosts_)
    for (auto& l : h.links) l = newIndex[l];
  for (auto& e : enclosures_)
    for (auto& l : e.links) l = newIndex[l];
}

int64_t ComposablePool::milliLeftOnAttachedGpus() const {
  int64_t left = 0;
  for (size_t g = 0; g < gpuLeft_.size(); ++g)
    if (gpuHost_[g] >= 0) left += gpuLeft_[g];
  return left;
}

size_t ComposablePool::hostsWithCpuButNoFreeGpu(int32_t cpuMilli) const {
  size_t n = 0;
  for (const auto& h : hosts_) {
    if (h.cpuLeft < cpuMilli) continue;
    const bool reaches = h.attached < shape_.deviceLimit && std::any_of(h.links.begin(), h.links.end(), [&](size_t l) {
      return links_[l].enclosure >= 0 && enclosures_[static_cast<size_t>(links_[l].enclosure)].free > 0;
    });
    if (!reaches) ++n;
  }
  return n;
}

std::optional<std::string> ComposablePool::violation() const {
  std::vector<int> attachedTo(hosts_.size(), 0);
  std::vector<int> holders(gpuLeft_.size(), 0);
  for (size_t li = 0; li < links_.size(); ++li) {
    const Link& l = links_[li];
    for (size_t g : l.attached) {
      if (gpuHost_[g] != static_cast<long>(l.host)) return fmt::format("GPU {} is on link {} but held by host {}", g, li, gpuHost_[g]);
      if (std::find(enclosures_[static_cast<size_t>(l.enclosure)].gpus.begin(), enclosures_[static_cast<size_t>(l.enclosure)].gpus.end(), g) ==
          enclosures_[static_cast<size_t>(l.enclosure)].gpus.end())
        return fmt::format("GPU {} reached through a link to an enclosure it is not in", g);
      ++holders[g];
      ++attachedTo[l.host];
    }
  }
  for (size_t g = 0; g < gpuLeft_.size(); ++g) {
    if (gpuLeft_[g] < 0 || gpuLeft_[g] > kMilliPerGpu) return fmt::format("GPU {} has {} milli left", g, gpuLeft_[g]);
    if (holders[g] > 1) return fmt::format("GPU {} is attached to {} hosts", g, holders[g]);
    if ((gpuHost_[g] >= 0) != (holders[g] == 1)) return fmt::format("GPU {} holder record disagrees with the links", g);
    if (gpuHost_[g] < 0 && gpuLeft_[g] != kMilliPerGpu) return fmt::format("free GPU {} is partly used", g);
    if (gpuMigTaken_[g] != 0 && gpuLeft_[g] == kMilliPerGpu) return fmt::format("idle GPU {} still carries MIG instances", g);
  }
  for (size_t h = 0; h < hosts_.size(); ++h) {
    const Host& host = hosts_[h];
    if (host.cpuLeft < 0 || host.memoryLeft < 0) return fmt::format("host {} is over its CPU or memory", host.name);
    if (host.attached != attachedTo[h] || host.attached > shape_.deviceLimit)
      return fmt::format("host {} has {} GPUs attached (limit {})", host.name, attachedTo[h], shape_.deviceLimit);
    const auto gpuLinks = std::count_if(host.links.begin(), host.links.end(), [&](size_t l) { return links_[l].enclosure >= 0; });
    if (!shape_.mirrorServers && gpuLinks > shape_.hostPorts) return fmt::format("host {} has {} links", host.name, gpuLinks);
  }
  for (const auto& e : enclosures_) {
    const int free = static_cast<int>(std::count_if(e.gpus.begin(), e.gpus.end(), [&](size_t g) { return gpuHost_[g] < 0; }));
    if (free != e.free) return "an enclosure's free count is stale";
    if (!shape_.mirrorServers && (static_cast<int>(e.links.size()) > shape_.enclosurePorts || static_cast<int>(e.gpus.size()) > shape_.slots))
      return "an enclosure has more ports or GPUs than its shape";
  }
  return std::nullopt;
}

ComposablePool::Wiring ComposablePool::wiring() const {
  if (allocatedGpuMilli_ != 0 || attaches_ != 0) throw std::logic_error("the wiring is only described before anything is placed");
  Wiring w;
  w.deviceLimit = shape_.deviceLimit;
  for (const auto& h : hosts_) w.hosts.push_back({h.cpuCapacity, h.memoryCapacity});
  for (const auto& e : enclosures_) {
    long bound = -1;
    if (shape_.mirrorServers) bound = gpuHost_[e.gpus.front()];
    w.enclosures.push_back({e.model, static_cast<int>(e.gpus.size()), bound});
  }
  for (const auto& l : links_)
    if (l.enclosure >= 0) w.links.emplace_back(l.host, static_cast<size_t>(l.enclosure));
  return w;
}

sharing::ShareNode ComposablePool::view(const Link& l) const {
  const Host& h = hosts_[l.host];
  sharing::ShareNode n;
  n.name = l.name;
  n.cpuCapacity = h.cpuCapacity;
  n.cpuLeft = h.cpuLeft;
  n.memoryCapacity = h.memoryCapacity;
  n.memoryLeft = h.memoryLeft;
  n.affinity = h.affinity;
  if (l.enclosure < 0) return n;
  const Enclosure& e = enclosures_[static_cast<size_t>(l.enclosure)];
  n.model = e.model;
  for (size_t g : l.attached) {
    n.gpuLeft.push_back(gpuLeft_[g]);
    if (gpuMigTaken_[g] != 0) {
      n.migTaken.resize(n.gpuLeft.size(), 0);
      n.migTaken.back() = gpuMigTaken_[g];
    }
  }
  const int attachable = std::min(shape_.deviceLimit - h.attached, e.free);
  for (int i = 0; i < attachable && n.gpuCount() < sharing::kMaxGpusPerNode; ++i) n.gpuLeft.push_back(kMilliPerGpu);
  return n;
}

ComposablePool::Taken ComposablePool::apply(const sharing::SharePlacement& p, const sharing::ShareRequest& r) {
  const sharing::ShareNode& v = views_.node(p.node);
  if (!sharing::valid(v, r, p.gpus))
    throw std::logic_error(fmt::format("invalid placement of a {}x{}m request on view {}", r.gpuCount, r.gpuMilli, v.name));
  Link& l = links_[p.node];
  Host& h = hosts_[l.host];
  h.cpuLeft -= r.cpuMilli;
  h.memoryLeft -= r.memoryMib;
  if (r.gpuCount > 0) ++h.affinity[r.sharesGpu() ? 0 : static_cast<size_t>(r.gpuCount)];
  const size_t attachedBefore = l.attached.size();
  Taken taken;
  std::vector<size_t>& used = taken.gpus;
  if (r.isMig()) {
    const int i = p.gpus.index[0];
    taken.migStart = p.gpus.migStart >= 0 ? p.gpus.migStart : bestStart(v.migTakenOn(i), r.migProfile()).value();
  }
  for (int a = 0; a < p.gpus.count; ++a) {
    const auto i = static_cast<size_t>(p.gpus.index[static_cast<size_t>(a)]);
    if (i < attachedBefore) {
      gpuLeft_[l.attached[i]] -= r.gpuMilli;
      if (r.isMig()) gpuMigTaken_[l.attached[i]] |= memoryMask(r.migProfile(), taken.migStart);
      used.push_back(l.attached[i]);
      continue;
    }
    Enclosure& e = enclosures_[static_cast<size_t>(l.enclosure)];
    auto free = std::find_if(e.gpus.begin(), e.gpus.end(), [&](size_t g) { return gpuHost_[g] < 0; });
    if (free == e.gpus.end()) throw std::logic_error("enclosure has no free GPU left");
    gpuHost_[*free] = static_cast<long>(l.host);
    gpuLeft_[*free] = kMilliPerGpu - r.gpuMilli;
    if (r.isMig()) gpuMigTaken_[*free] = memoryMask(r.migProfile(), taken.migStart);
    l.attached.push_back(*free);
    used.push_back(*free);
    --e.free;
    ++h.attached;
    ++attaches_;
  }
  allocatedGpuMilli_ += r.totalGpuMilli();
  rebuildAround(p.node);
  return taken;
}

void ComposablePool::release(size_t link, const Taken& taken, const sharing::ShareRequest& r) {
  const std::vector<size_t>& gpus = taken.gpus;
  Link& l = links_.at(link);
  Host& h = hosts_[l.host];
  h.cpuLeft += r.cpuMilli;
  h.memoryLeft += r.memoryMib;
  if (r.gpuCount > 0) --h.affinity[r.sharesGpu() ? 0 : static_cast<size_t>(r.gpuCount)];
  for (size_t g : gpus) {
    if (gpuHost_.at(g) != static_cast<long>(l.host)) throw std::logic_error("released a GPU the host does not hold");
    gpuLeft_[g] += r.gpuMilli;
    if (gpuLeft_[g] > kMilliPerGpu) throw std::logic_error("released more milli-GPU than the GPU has");
    if (r.isMig()) {
      const uint8_t mask = taken.migStart < 0 ? 0 : memoryMask(r.migProfile(), taken.migStart);
      if (mask == 0 || (gpuMigTaken_[g] & mask) != mask) throw std::logic_error("released a MIG instance the GPU does not hold");
      gpuMigTaken_[g] &= static_cast<uint8_t>(~mask);
    }
    if (gpuLeft_[g] < kMilliPerGpu || shape_.mirrorServers) continue;
    // Idle now: hot-unplug it back into the enclosure.
    gpuHost_[g] = -1;
    std::erase(l.attached, g);
    ++enclosures_[static_cast<size_t>(l.enclosure)].free;
    --h.attached;
    ++detaches_;
  }
  allocatedGpuMilli_ -= r.totalGpuMilli();
  rebuildAround(link);
}

// Rebuilds every view a change on `link` touched: the host's links (CPU, memory, device limit) and the
// enclosure's links (free GPUs).
void ComposablePool::rebuildAround(size_t link) {
  const Link& l = links_[link];
  std::vector<size_t> touched = hosts_[l.host].links;
  if (l.enclosure >= 0)
    for (size_t other : enclosures_[static_cast<size_t>(l.enclosure)].links) touched.push_back(other);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (size_t t : touched) views_.replaceNode(t, view(links_[t]));
}

namespace {

ComposableResult runOn(ComposablePool& pool, const std::vector<sharing::ShareRequest>& requests, sharing::SharePolicy& policy) {
  ComposableResult result;
  static_cast<ArrivalRun&>(result) = runArrivals(
      pool.views(), pool.totalGpuMilli(), requests, policy, [&](const auto& p, const auto& r) { (void)pool.apply(p, r); },
      [&] { return pool.allocatedGpuMilli(); }, [](int64_t) {});
  const double capacity = static_cast<double>(pool.totalGpuMilli());
  result.attaches = pool.attaches();
  result.attachedLeftPercent = 100.0 * static_cast<double>(pool.milliLeftOnAttachedGpus()) / capacity;
  result.hostsWithCpuButNoFreeGpu = pool.hostsWithCpuButNoFreeGpu(8000);
  return result;
}

}  // namespace

ComposableResult runComposable(ComposablePool pool, const std::vector<sharing::ShareRequest>& requests, sharing::SharePolicy& policy) {
  return runOn(pool, requests, policy);
}

ComposableResult runComposable(ComposablePool pool, const std::vector<sharing::ShareRequest>& requests,
                               const std::function<std::unique_ptr<sharing::SharePolicy>(const ComposablePool&)>& makePolicy) {
  auto policy = makePolicy(pool);
  if (!policy) throw std::invalid_argument("no policy for this pool");
  return runOn(pool, requests, *policy);
}

}  // namespace switchyard::bench

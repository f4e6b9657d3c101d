// Composable mode of the packing benchmark: the static cluster's hosts (CPU, memory) and GPUs, but the GPUs
// sit in switch enclosures of K slots. Each enclosure has U host ports, each host P upstream ports, and a
// host may have at most L GPUs attached. A request lands on one host and takes all its GPUs from ONE
// enclosure the host is cabled to (peer-to-peer under one switch): GPUs already attached to that host there
// (shared or idle) or free GPUs it attaches on the spot.
//
// The policies see one node ("view") per (host, enclosure) link: the host's CPU and memory left, the GPUs
// attached to it from that enclosure, and as many free GPUs of the enclosure as the host's device limit
// still allows. Placing a request changes the views of every link of that host and of that enclosure;
// they are rebuilt and their versions bumped, so the policies' caches stay correct. Unchanged policies
// therefore run on a composable pool, and on the degenerate pool (one enclosure per server holding its
// GPUs, cabled to it alone and bound to it from the start: K=8, U=1) every view is exactly the server,
// so static results reproduce.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"
#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/arrival_run.h"

namespace switchyard::bench {

struct ComposableShape {
  int slots = 16;           // K: GPU slots per enclosure (one switch)
  int enclosurePorts = 8;   // U: host ports per enclosure
  int hostPorts = 2;        // P: upstream ports per host
  int deviceLimit = 16;     // L: GPUs attached to one host at most
  bool mirrorServers = false;  // the degenerate pool: one enclosure per server, cabled to that server only
  // The share of the servers' GPUs the enclosures hold, per model (rounded; fewer enclosures, so fewer ports):
  // a pool that keeps every host and buys fewer GPUs. Not with mirrorServers.
  int gpuPercent = 100;

  [[nodiscard]] std::string describe() const;
};

class ComposablePool {
 public:
  // Hosts and GPUs from `servers` (in that order; the views follow it). Enclosures hold GPUs of one model;
  // a host is cabled only to enclosures of its server's model.
  ComposablePool(const sharing::ShareCluster& servers, const ComposableShape& shape);

  [[nodiscard]] const sharing::ShareCluster& views() const { return views_; }
  // The structure behind the views, for policies that weigh a placement's effect beyond its own view
  // (pool_aware_policy.h): which host and enclosure a view links, and how many of its GPUs are attached
  // (they come first in the view; the rest are free GPUs the host could attach).
  struct ViewLink {
    size_t host = 0;
    long enclosure = -1;  // -1: a host with no GPU link
    int attached = 0;
  };
  [[nodiscard]] ViewLink viewLink(size_t view) const {
    const Link& l = links_[view];
    return {l.host, l.enclosure, static_cast<int>(l.attached.size())};
  }
  [[nodiscard]] const std::vector<size_t>& viewsOfHost(size_t host) const { return hosts_[host].links; }
  [[nodiscard]] const std::vector<size_t>& viewsOfEnclosure(size_t e) const { return enclosures_[e].links; }
  [[nodiscard]] size_t enclosureCount() const { return enclosures_.size(); }
  [[nodiscard]] int enclosureFree(size_t e) const { return enclosures_[e].free; }
  [[nodiscard]] int hostRoom(size_t host) const { return shape_.deviceLimit - hosts_[host].attached; }  // GPUs it may still attach
  [[nodiscard]] bool mirror() const { return shape_.mirrorServers; }
  // What a placement took: the pool's GPUs, and the first memory slice of a MIG instance (-1: none).
  struct Taken {
    std::vector<size_t> gpus;
    int migStart = -1;
  };
  // Takes the resources of a placement on a view, attaching free GPUs as needed (a MIG instance is carved
  // at the placement's start, or at bestStart, composer/model/mig.h). Throws std::logic_error if the placement is not
  // valid on that view.
  Taken apply(const sharing::SharePlacement& p, const sharing::ShareRequest& r);
  // Gives back what apply took on view `link`; a GPU left idle is detached back to its enclosure (except
  // on the mirror pool, whose GPUs belong to their server).
  void release(size_t link, const Taken& taken, const sharing::ShareRequest& r);
  [[nodiscard]] size_t detaches() const { return detaches_; }

  [[nodiscard]] int64_t totalGpuMilli() const { return totalGpuMilli_; }
  [[nodiscard]] int64_t allocatedGpuMilli() const { return allocatedGpuMilli_; }
  [[nodiscard]] size_t attaches() const { return attaches_; }
  // Where capacity is stranded: milli-GPU left on GPUs attached to some host (only that host can use it),
  // and hosts with at least `cpuMilli` CPU left that reach no free GPU.
  [[nodiscard]] int64_t milliLeftOnAttachedGpus() const;
  [[nodiscard]] size_t hostsWithCpuButNoFreeGpu(int32_t cpuMilli) const;
  // Checks every invariant of the pool (CPU, memory and milli-GPU never below zero, a GPU attached to at
  // most one host and only through a link, device limits, port counts); a description of the first
  // broken one, or nothing.
  [[nodiscard]] std::optional<std::string> violation() const;

  // The pool as cabled, for an exact model of it (the ILP reference). Throws std::logic_error once
  // anything has been placed.
  struct Wiring {
    struct Host {
      int32_t cpuMilli = 0;
      int64_t memoryMib = 0;
    };
    struct Enclosure {
      uint8_t model = 0;
      int gpus = 0;
      long boundTo = -1;  // the mirror pool: every GPU belongs to this host from the start
    };
    std::vector<Host> hosts;
    std::vector<Enclosure> enclosures;
    std::vector<std::pair<size_t, size_t>> links;  // (host, enclosure)
    int deviceLimit = 0;                           // GPUs attached to one host at most (not counting bound ones)
  };
  [[nodiscard]] Wiring wiring() const;

 private:
  struct Host {
    std::string name;
    int32_t cpuCapacity = 0, cpuLeft = 0;
    int64_t memoryCapacity = 0, memoryLeft = 0;
    uint8_t model = 0;
    int attached = 0;
    std::array<int32_t, sharing::kMaxGpusPerNode + 1> affinity{};
    std::vector<size_t> links;
  };
  struct Enclosure {
    uint8_t model = 0;
    std::vector<size_t> gpus;  // indexes into gpuLeft_/gpuHost_
    int free = 0;
    std::vector<size_t> links;
  };
  struct Link {
    size_t host = 0;
    long enclosure = -1;             // -1: a host with no GPU link (CPU-only view)
    std::vector<size_t> attached;    // GPUs of the enclosure attached to the host, in attach order
    std::string name;                // of the view: "host/encN", or the host's name
  };
  [[nodiscard]] sharing::ShareNode view(const Link& l) const;
  void cable(const sharing::ShareCluster& servers, const ComposableShape& shape);

  ComposableShape shape_;
  std::vector<Host> hosts_;
  std::vector<Enclosure> enclosures_;
  std::vector<Link> links_;
  std::vector<int32_t> gpuLeft_;
  std::vector<uint8_t> gpuMigTaken_;  // memory slices taken by MIG instances
  std::vector<long> gpuHost_;  // -1: free
  sharing::ShareCluster views_;
  int64_t totalGpuMilli_ = 0;
  int64_t allocatedGpuMilli_ = 0;
  size_t attaches_ = 0;
  size_t detaches_ = 0;
  void rebuildAround(size_t link);
};

struct ComposableResult : ArrivalRun {
  size_t attaches = 0;  // GPUs hot-plugged to a host
  double attachedLeftPercent = 0;  // at the end: milli-GPU left on attached GPUs, % of capacity
  size_t hostsWithCpuButNoFreeGpu = 0;  // at the end: hosts with >= 8 cores left that reach no free GPU
};

// The static protocol (arrival only, a failure is skipped) on a composable pool.
[[nodiscard]] ComposableResult runComposable(ComposablePool pool, const std::vector<sharing::ShareRequest>& requests,
                                             sharing::SharePolicy& policy);
// The same with a policy made for that pool (policies that read the pool's structure); throws
// std::invalid_argument when `makePolicy` makes none.
[[nodiscard]] ComposableResult runComposable(ComposablePool pool, const std::vector<sharing::ShareRequest>& requests,
                                             const std::function<std::unique_ptr<sharing::SharePolicy>(const ComposablePool&)>& makePolicy);

}  // namespace switchyard::bench

// An immutable, versioned picture of the pool that readers use on their own threads (ADR 0016).
//
// The control thread publishes a new PoolView after every task that changed the pool, before anything
// the task did becomes observable (a completion, a waiter, an event): a client that saw its compose
// accepted, or its operation end, reads a view that has it. Views share structure: a change copies the
// chunk of 64 devices or hosts it touched, the bucket of systems it touched, and the spines of chunk
// pointers, never the pool, so publishing costs microseconds at 100,000 GPUs and an old view stays valid
// for as long as a reader holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "composer/engine/idle_tracker.h"
#include "composer/model/composition.h"
#include "composer/model/topology.h"
#include "composer/packing/pool.h"

namespace switchyard {

struct DeviceView {
  Device device;
  SwitchId switchId;
  DeviceAssignment assignment;
  SystemId systemId;     // when in a system
  HostId hostId;         // when reserved or in a system
  PortId upstreamPortId; // when in a system
};

// A fixed-length array whose elements live in shared chunks: with() copies only the chunks it changes.
template <typename T, std::size_t kChunk = 64>
class ChunkedArray {
 public:
  ChunkedArray() = default;
  explicit ChunkedArray(std::vector<T> items) : size_(items.size()) {
    for (std::size_t begin = 0; begin < items.size(); begin += kChunk) {
      const std::size_t end = std::min(items.size(), begin + kChunk);
      chunks_.push_back(std::make_shared<const std::vector<T>>(std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(begin)),
                                                               std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(end))));
    }
  }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] const T& operator[](std::size_t i) const { return (*chunks_[i / kChunk])[i % kChunk]; }
  // A copy with each (index, value) of `changes` in place; chunks no change touches are shared.
  [[nodiscard]] ChunkedArray with(std::vector<std::pair<std::size_t, T>> changes) const {
    ChunkedArray out = *this;
    std::sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < changes.size();) {
      const std::size_t chunk = changes[i].first / kChunk;
      auto copy = std::make_shared<std::vector<T>>(*chunks_[chunk]);
      for (; i < changes.size() && changes[i].first / kChunk == chunk; ++i) (*copy)[changes[i].first % kChunk] = std::move(changes[i].second);
      out.chunks_[chunk] = std::move(copy);
    }
    return out;
  }
  template <typename F>
  void forEach(F&& f) const {
    for (const auto& chunk : chunks_)
      for (const T& item : *chunk) f(item);
  }
  // The chunks themselves: one that no change touched is the same object in the next view (caches key on it).
  [[nodiscard]] const std::vector<std::shared_ptr<const std::vector<T>>>& chunks() const { return chunks_; }

 private:
  std::vector<std::shared_ptr<const std::vector<T>>> chunks_;
  std::size_t size_ = 0;
};

// Live systems by id, in hash buckets that views share, and by name in a second set of buckets: with()
// copies only the buckets it changes, and a lookup by either costs one bucket. The buckets sit in groups that
// views share too: a change copies its bucket, that bucket's group (kBucketsPerGroup references) and the array of
// groups (kGroups), not one reference per bucket; a table made empty, or copied, or given no change, costs one
// reference count (a view is published several times a compose, most often with no system changed).
class SystemTable {
 public:
  static constexpr std::size_t kGroups = 16;
  static constexpr std::size_t kBucketsPerGroup = 16;
  static constexpr std::size_t kBuckets = kGroups * kBucketsPerGroup;
  SystemTable();
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::shared_ptr<const System> find(std::string_view id) const;
  // By id, else by name (names are unique among live systems).
  [[nodiscard]] std::shared_ptr<const System> findByIdOrName(std::string_view idOrName) const;
  // A copy where each id in `changes` maps to its system, or is gone when that is null.
  [[nodiscard]] SystemTable with(const std::vector<std::pair<SystemId, std::shared_ptr<const System>>>& changes) const;
  // Every system, in no particular order.
  template <typename F>
  void forEach(F&& f) const {
    for (const auto& group : *byId_)
      for (const auto& bucket : *group)
        for (const auto& s : *bucket) f(*s);
  }
  // Every system, ordered by id.
  [[nodiscard]] std::vector<std::shared_ptr<const System>> sorted() const;

 private:
  using Bucket = std::vector<std::shared_ptr<const System>>;
  using Group = std::array<std::shared_ptr<const Bucket>, kBucketsPerGroup>;
  using Buckets = std::array<std::shared_ptr<const Group>, kGroups>;
  [[nodiscard]] static std::size_t bucketOf(std::string_view key) { return std::hash<std::string_view>{}(key) % kBuckets; }
  [[nodiscard]] static const Bucket& bucket(const Buckets& buckets, std::size_t b) {
    return *(*buckets[b / kBucketsPerGroup])[b % kBucketsPerGroup];
  }
  // `old` with the buckets in `made` (by number) in place of its own; the groups no bucket of `made` is in are shared.
  [[nodiscard]] static std::shared_ptr<const Buckets> rebuilt(const Buckets& old, std::map<std::size_t, Bucket>& made);
  std::shared_ptr<const Buckets> byId_;
  std::shared_ptr<const Buckets> byName_;  // the same systems, by name
  std::size_t size_ = 0;
};

// A host as the view keeps it; policy and host-side status are asked of the host side when read.
struct HostSlot {
  SystemId systemId;
  int attachedDevices = 0;
  std::string reservationId;  // when a composition reservation holds it
};

// What never changes between two inventories: the topology as discovered, and how to find things in it.
struct PoolShape {
  Topology topology;  // device health as discovered: a view's devices carry the current health
  std::vector<std::size_t> deviceOrder;  // a view's device positions (by id) in topology.devices order
  std::vector<std::size_t> topologyIndex;  // the inverse: each view position's index in topology.devices
  std::unordered_map<DeviceId, std::size_t> devicePosition;  // by id, into PoolView::devices
  std::unordered_map<HostId, std::size_t> hostPosition;      // into topology.hosts and PoolView::hosts
  std::unordered_map<SwitchId, std::vector<std::size_t>> devicesOfSwitch;  // device positions, ascending
  std::vector<std::vector<SwitchId>> upstreamSwitches;  // per host: the switch of each upstream port
  Pool emptyPool;  // the packing core's pool with every device free and no host taken
  std::vector<int> poolDevice;  // per view device position: its index in emptyPool.devices()
  explicit PoolShape(Topology t);
};

// A request waiting in yardd's queue (engine_queue.cpp), in admission order.
struct QueueEntry {
  OperationId operationId;
  SystemId systemId;
  std::string name;
  std::string tenant;
  std::string requestedBy;
  QueuedRequest request;
  std::size_t position = 0;   // 1: admitted first when capacity frees
  std::string waitingFor;     // why it is not admitted yet, as of the last admission pass
};

struct PoolView {
  std::uint64_t version = 0;  // grows by one with each published change
  std::shared_ptr<const PoolShape> shape;
  ChunkedArray<DeviceView> devices;  // ordered by device id
  ChunkedArray<HostSlot> hosts;      // in topology.hosts order
  SystemTable systems;               // live systems, each with its progress as of this version
  std::map<std::string, int> runningOperations;  // accepted and not finished, by kind
  std::shared_ptr<const DemandMix> demand;       // the request shapes the pool has learned (null: none yet)
  std::shared_ptr<const std::vector<QueueEntry>> queue;  // waiting requests in admission order (never null once published)
  std::shared_ptr<const std::vector<IdleGpu>> activity;  // attached GPUs as last sampled, by device id (never null once published)

  [[nodiscard]] const DeviceView* device(const DeviceId& id) const;
  [[nodiscard]] const HostSlot* host(const HostId& id) const;
  // A system's pooled memory: the GiB of the cxl-memory devices (LDs) bound to it.
  [[nodiscard]] int pooledMemoryGiB(const System& system) const;
  // The topology with every device's current health.
  [[nodiscard]] Topology topology() const;
};

// The packing core's pool as this view has it: what capacity and plans are computed on, off the control
// thread. O(devices + hosts); the view is unchanged.
[[nodiscard]] Pool poolOf(const PoolView& view);

// Which devices a listing keeps; every field set must match.
struct DeviceFilter {
  bool freeOnly = false;  // free and not critical: what a compose could take
  std::string model;
  SwitchId switchId;
  HostId hostId;
  std::string system;  // id or name
  std::optional<KindName> kind;  // gpu, nvme, nic, cxl-memory or another class
};

// One page of the view's devices in id order, after `pageToken` (the last id of the page before), that
// pass `filter` and `keep`; `next` is set when more may follow. Costs the page plus what the filter skips
// (a switch, host or system filter looks only at its own devices).
[[nodiscard]] std::vector<const DeviceView*> pageOfDevices(const PoolView& view, const DeviceFilter& filter,
                                                           const std::function<bool(const DeviceView&)>& keep, std::size_t pageSize,
                                                           const std::string& pageToken, std::string& next);

}  // namespace switchyard

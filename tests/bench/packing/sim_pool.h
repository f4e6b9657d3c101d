// One interface over the two pools the time-driven simulations run on (dynamic_sim.h, loop_sim.h): a static
// cluster (the servers themselves) or a composable pool of switch enclosures. Place, remove, what is
// allocated, and where a view sits (its host and enclosure), for rules that must keep off a promised place.
#pragma once

#include <optional>

#include "composer/packing/sharing/share_cluster.h"
#include "tests/bench/packing/composable_sim.h"

namespace switchyard::bench {

class SimPool {
 public:
  struct Holding {
    sharing::SharePlacement placement;  // as applied (a MIG instance's start included)
    ComposablePool::Taken taken;        // composable: what the pool took
  };
  // Where a view sits: a static node is its own host (enclosure -2); a composable view links a host to an
  // enclosure (-1: the host's CPU-only view).
  struct Site {
    size_t host = 0;
    long enclosure = -2;
  };

  SimPool(const sharing::ShareCluster& servers, const ComposableShape* shape) {
    if (shape) composable_.emplace(servers, *shape);
    else cluster_ = servers;
  }
  [[nodiscard]] const sharing::ShareCluster& view() const { return composable_ ? composable_->views() : cluster_; }
  [[nodiscard]] const ComposablePool* composable() const { return composable_ ? &*composable_ : nullptr; }
  Holding place(const sharing::SharePlacement& p, const sharing::ShareRequest& r) {
    if (composable_) return {p, composable_->apply(p, r)};
    return {cluster_.apply(p, r), {}};
  }
  void remove(const Holding& h, const sharing::ShareRequest& r) {
    if (composable_) composable_->release(h.placement.node, h.taken, r);
    else cluster_.release(h.placement, r);
  }
  [[nodiscard]] int64_t allocated() const { return composable_ ? composable_->allocatedGpuMilli() : cluster_.allocatedGpuMilli(); }
  [[nodiscard]] int64_t capacity() const { return composable_ ? composable_->totalGpuMilli() : cluster_.totalGpuMilli(); }
  [[nodiscard]] size_t attaches() const { return composable_ ? composable_->attaches() : 0; }
  [[nodiscard]] size_t detaches() const { return composable_ ? composable_->detaches() : 0; }

  [[nodiscard]] Site site(size_t view) const {
    if (!composable_) return {view, -2};
    const auto link = composable_->viewLink(view);
    return {link.host, link.enclosure};
  }
  // Two views share a host or an enclosure: what one takes may be what the other needs.
  [[nodiscard]] bool overlaps(size_t a, size_t b) const {
    const Site x = site(a), y = site(b);
    return x.host == y.host || (x.enclosure >= 0 && x.enclosure == y.enclosure);
  }
  // Calls f(view) for every view whose resources change when a holding on `view` is placed or removed.
  template <typename F>
  void forEachViewAround(size_t view, F&& f) const {
    if (!composable_) {
      f(view);
      return;
    }
    const Site s = site(view);
    for (size_t v : composable_->viewsOfHost(s.host)) f(v);
    if (s.enclosure >= 0)
      for (size_t v : composable_->viewsOfEnclosure(static_cast<size_t>(s.enclosure))) f(v);
  }

 private:
  sharing::ShareCluster cluster_;
  std::optional<ComposablePool> composable_;
};

}  // namespace switchyard::bench

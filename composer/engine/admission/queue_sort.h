// Admission's queue sort (issue 59, ADR 0032): the extension point that orders the waiting composes before an
// admission pass looks at them. A chain of plugins: each says which of two requests goes first or leaves it to the
// next; the first that tells them apart decides. Pure (no engine state), so that yardd's admission pass and the
// trace loop (tests/bench/packing/loop_sim.cpp) order through the same plugins and the loop measures the rule
// yardd runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/error.h"

namespace switchyard::admission {

using TenantIndex = std::size_t;  // a tenant, as one pass numbers them

// A waiting request as the queue-sort plugins see it.
struct Waiting {
  TenantIndex tenant = 0;
  int priority = 0;             // its priority class's value: higher goes first
  std::int64_t enqueuedAt = 0;  // older goes first (the caller's unit)
  double gpus = 0;              // the GPUs it asks for (a share or MIG instances as a part of one)
};

// The tenants' fair share at one pass: what each holds now plus what it held recently (decayed), per unit of its
// share (the identities file's `share`, its weight).
class ShareBook {
 public:
  virtual ~ShareBook() = default;
  [[nodiscard]] virtual double charge(TenantIndex tenant) const = 0;
  // The charge once `gpus` more are held (negative: given back).
  [[nodiscard]] virtual double chargeWith(TenantIndex tenant, double gpus) const = 0;
  // Charged less than an even split of everyone's use by weight would charge it.
  [[nodiscard]] virtual bool belowFairLine(TenantIndex tenant) const = 0;
};

class QueueSortPlugin {
 public:
  virtual ~QueueSortPlugin() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Negative: `a` goes first; positive: `b` does; 0: this plugin does not tell them apart.
  [[nodiscard]] virtual int compare(const Waiting& a, const Waiting& b, const ShareBook& shares) const = 0;
};

// The queue-sort plugins there are, by name (the one table: a new rule is a row here):
//   priority-class  the higher class value first (yardd's classes are strict)
//   fair-share      across tenants, the lower charge first
//   share-first     across tenants, one under the fair line first, then the lower charge with the request admitted
//                   (issue 59's rule; class and age then decide inside a tenant)
//   age             the older request first
struct QueueSortEntry {
  std::string_view name;
  std::string_view what;
  std::shared_ptr<const QueueSortPlugin> (*make)();
};
[[nodiscard]] std::span<const QueueSortEntry> queueSortPlugins();

// An ordered chain of queue-sort plugins.
class QueueSort {
 public:
  // Refuses a name no row has, or one named twice.
  [[nodiscard]] static Result<QueueSort> of(std::span<const std::string> names);

  [[nodiscard]] int compare(const Waiting& a, const Waiting& b, const ShareBook& shares) const {
    for (const auto& p : plugins_)
      if (const int c = p->compare(a, b, shares); c != 0) return c;
    return 0;
  }
  [[nodiscard]] bool before(const Waiting& a, const Waiting& b, const ShareBook& shares) const { return compare(a, b, shares) < 0; }
  // Whether the order depends on a request's size (it cannot be kept per tenant and class).
  [[nodiscard]] bool readsSize() const { return readsSize_; }
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  std::vector<std::shared_ptr<const QueueSortPlugin>> plugins_;
  bool readsSize_ = false;
};

}  // namespace switchyard::admission

#include "composer/engine/admission/queue_sort.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

namespace switchyard::admission {

namespace {

int order(bool aFirst, bool bFirst) { return aFirst ? -1 : bFirst ? 1 : 0; }

class PriorityClassOrder final : public QueueSortPlugin {
 public:
  std::string_view name() const override { return "priority-class"; }
  int compare(const Waiting& a, const Waiting& b, const ShareBook&) const override { return order(a.priority > b.priority, b.priority > a.priority); }
};

class FairShareOrder final : public QueueSortPlugin {
 public:
  std::string_view name() const override { return "fair-share"; }
  int compare(const Waiting& a, const Waiting& b, const ShareBook& shares) const override {
    if (a.tenant == b.tenant) return 0;
    const double ca = shares.charge(a.tenant), cb = shares.charge(b.tenant);
    return order(ca < cb, cb < ca);
  }
};

class ShareFirstOrder final : public QueueSortPlugin {
 public:
  std::string_view name() const override { return "share-first"; }
  int compare(const Waiting& a, const Waiting& b, const ShareBook& shares) const override {
    if (a.tenant == b.tenant) return 0;
    const bool belowA = shares.belowFairLine(a.tenant), belowB = shares.belowFairLine(b.tenant);
    if (belowA != belowB) return belowA ? -1 : 1;
    const double ca = shares.chargeWith(a.tenant, a.gpus), cb = shares.chargeWith(b.tenant, b.gpus);
    return order(ca < cb, cb < ca);
  }
};

class AgeOrder final : public QueueSortPlugin {
 public:
  std::string_view name() const override { return "age"; }
  int compare(const Waiting& a, const Waiting& b, const ShareBook&) const override {
    return order(a.enqueuedAt < b.enqueuedAt, b.enqueuedAt < a.enqueuedAt);
  }
};

template <typename P>
std::shared_ptr<const QueueSortPlugin> make() {
  return std::make_shared<const P>();
}

constexpr std::array<QueueSortEntry, 4> kPlugins{{
    {"priority-class", "the higher priority class first", &make<PriorityClassOrder>},
    {"fair-share", "across tenants, the lower fair-share charge first", &make<FairShareOrder>},
    {"share-first", "across tenants, one under the fair line first, then the lower charge with the request admitted", &make<ShareFirstOrder>},
    {"age", "the older request first", &make<AgeOrder>},
}};

}  // namespace

std::span<const QueueSortEntry> queueSortPlugins() { return kPlugins; }

Result<QueueSort> QueueSort::of(std::span<const std::string> names) {
  QueueSort sort;
  std::vector<std::string_view> known;
  for (const auto& e : kPlugins) known.push_back(e.name);
  for (const auto& name : names) {
    const auto* entry = std::find_if(kPlugins.begin(), kPlugins.end(), [&](const QueueSortEntry& e) { return e.name == name; });
    if (entry == kPlugins.end())
      return fail(Code::kInvalidArgument, fmt::format("no queue-sort plugin '{}' (known: {})", name, fmt::join(known, ", ")));
    if (std::count(names.begin(), names.end(), name) > 1)
      return fail(Code::kInvalidArgument, fmt::format("queue-sort plugin '{}' named twice", name));
    sort.plugins_.push_back(entry->make());
    if (name == "share-first") sort.readsSize_ = true;
  }
  return sort;
}

std::vector<std::string> QueueSort::names() const {
  std::vector<std::string> out;
  for (const auto& p : plugins_) out.emplace_back(p->name());
  return out;
}

}  // namespace switchyard::admission

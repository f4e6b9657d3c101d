#include "composer/engine/admission/admission_profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "composer/model/mig.h"

namespace switchyard::admission {

namespace {

// A queued request and a placement request name the GPUs they ask for with the same fields.
template <typename Request>
double gpusOf(const Request& r) {
  double gpus = r.gpuCount > 0 ? r.gpuCount : static_cast<double>(r.devices.size());
  gpus += r.gpuShareMilli / 1000.0;
  for (MigProfile p : r.gpuInstances) gpus += computeSlices(p) / 7.0;
  return gpus;
}

}  // namespace

double gpusAsked(const QueuedRequest& q) { return gpusOf(q); }
double gpusAsked(const PlacementRequest& r) { return gpusOf(r); }

namespace {

// Share-first's bounds (the trace loop's rule A, docs/benchmarks/packing.md section 10).
constexpr std::size_t kBackfillTriesPerTenant = 16;
constexpr double kPreemptionHysteresis = 0.1;

// While a head waits, each tenant's requests are tried beside it at most kBackfillTriesPerTenant times a pass: a
// tenant with many small requests cannot fill what frees ahead of everyone else's.
class BackfillPerTenantPreFilter final : public PreFilterPlugin {
 public:
  std::string_view name() const override { return "backfill-per-tenant"; }
  std::optional<std::string> skip(const Operation& op, const Waiting& waiting, Pass& pass) const override {
    if (!pass.headWaits) return std::nullopt;
    if (pass.triedBeside.size() <= waiting.tenant) pass.triedBeside.resize(waiting.tenant + 1, 0);
    std::size_t& tried = pass.triedBeside[waiting.tenant];
    if (tried >= kBackfillTriesPerTenant)
      return fmt::format("tenant '{}' had {} requests tried beside the queue's head in this pass, its most; it is tried again at the next",
                         op.tenant, kBackfillTriesPerTenant);
    ++tried;
    return std::nullopt;
  }
};

class QuotaPermit final : public PermitPlugin {
 public:
  std::string_view name() const override { return "quota"; }
  std::optional<std::string> refuse(const Operation& op, const Placement& placement, const Handle& engine) const override {
    if (auto r = engine.quotaAllows(op, placement); !r) return r.error().message;
    return std::nullopt;
  }
};

class HostPolicyPermit final : public PermitPlugin {
 public:
  std::string_view name() const override { return "host-policy"; }
  std::optional<std::string> refuse(const Operation&, const Placement& placement, const Handle& engine) const override {
    if (auto r = engine.hostAllows(placement); !r) return r.error().message;
    return std::nullopt;
  }
};

// Backfill that cannot delay the head: a request behind it goes only if it keeps off the head's promised place or
// its lease ends before the head's time.
class HeadShadowPermit final : public PermitPlugin {
 public:
  std::string_view name() const override { return "head-shadow"; }
  std::optional<std::string> refuse(const Operation& op, const Placement& placement, const Handle& engine) const override {
    return engine.delaysHead(op, placement);
  }
};

class PreemptionPostFilter final : public PreemptingPostFilter {
 public:
  std::string_view name() const override { return "preemption"; }
  Handle::VictimFilter mayTake(const std::string&, const Waiting&, const Pass&) const override { return {}; }
};

// Preemption that does not invert shares: another tenant's system is a victim only when the preemptor's charge
// with the request stays under the victim tenant's charge after the eviction, by the hysteresis.
class SharePreemptionPostFilter final : public PreemptingPostFilter {
 public:
  std::string_view name() const override { return "share-preemption"; }
  Handle::VictimFilter mayTake(const std::string& tenant, const Waiting& waiting, const Pass& pass) const override {
    const double preemptor = pass.shares.chargeWith(waiting.tenant, waiting.gpus);
    return [&shares = pass.shares, tenant, preemptor](const System& victim) {
      if (victim.tenant == tenant) return true;
      const auto v = shares.find(victim.tenant);
      const double after = v ? shares.chargeWith(*v, -static_cast<double>(victim.bindings.size())) : 0;
      return preemptor * (1 + kPreemptionHysteresis) <= after;
    };
  }
};

// Moves idle GPUs of systems that allow it (label movable=true) off where the head needs room (ADR 0033).
class DefragmentationPostFilter final : public PostFilterPlugin {
 public:
  std::string_view name() const override { return "defragmentation"; }
  std::optional<Promise> promise(const Operation& head, const Waiting&, const std::string& why, const Pass&, Handle& engine) const override {
    return engine.defragmentFor(head, why);
  }
};

class LeaseShadowPostFilter final : public PostFilterPlugin {
 public:
  std::string_view name() const override { return "lease-shadow"; }
  std::optional<Promise> promise(const Operation& head, const Waiting&, const std::string&, const Pass&, Handle& engine) const override {
    return engine.leaseShadow(head);
  }
};

template <typename Plugin, typename P>
std::shared_ptr<const Plugin> make() {
  return std::make_shared<const P>();
}

template <typename Plugin>
struct Row {
  std::string_view name;
  std::shared_ptr<const Plugin> (*make)();
};

const std::vector<Row<PreFilterPlugin>>& preFilterTable() {
  static const std::vector<Row<PreFilterPlugin>> rows{
      {"backfill-per-tenant", &make<PreFilterPlugin, BackfillPerTenantPreFilter>},
  };
  return rows;
}

const std::vector<Row<PermitPlugin>>& permitTable() {
  static const std::vector<Row<PermitPlugin>> rows{
      {"quota", &make<PermitPlugin, QuotaPermit>},
      {"host-policy", &make<PermitPlugin, HostPolicyPermit>},
      {"head-shadow", &make<PermitPlugin, HeadShadowPermit>},
  };
  return rows;
}

const std::vector<Row<PostFilterPlugin>>& postFilterTable() {
  static const std::vector<Row<PostFilterPlugin>> rows{
      {"defragmentation", &make<PostFilterPlugin, DefragmentationPostFilter>},
      {"preemption", &make<PostFilterPlugin, PreemptionPostFilter>},
      {"share-preemption", &make<PostFilterPlugin, SharePreemptionPostFilter>},
      {"lease-shadow", &make<PostFilterPlugin, LeaseShadowPostFilter>},
  };
  return rows;
}

template <typename Plugin>
Result<std::vector<std::shared_ptr<const Plugin>>> pick(const std::vector<Row<Plugin>>& table, const std::vector<std::string>& names,
                                                        std::string_view point) {
  std::vector<std::shared_ptr<const Plugin>> out;
  for (const auto& name : names) {
    auto row = std::find_if(table.begin(), table.end(), [&](const auto& r) { return r.name == name; });
    if (row == table.end()) {
      std::vector<std::string_view> known;
      for (const auto& r : table) known.push_back(r.name);
      return fail(Code::kInvalidArgument, fmt::format("no {} plugin '{}' (known: {})", point, name, fmt::join(known, ", ")));
    }
    out.push_back(row->make());
  }
  return out;
}

const std::vector<ProfileEntry>& profileTable() {
  static const std::vector<ProfileEntry> rows{
      {"switchyard-v1",
       "priority classes strict, then the tenant's fair-share charge, then age; backfill that cannot delay the head; "
       "moves of idle GPUs that allow it, else preemption, else the head's shadow by leases (ADR 0017, ADR 0033)",
       {"priority-class", "fair-share", "age"},
       {},
       {"quota", "host-policy", "head-shadow"},
       {"defragmentation", "preemption", "lease-shadow"}},
      {"share-first",
       "across tenants, one under its weighted share first, then the lower charge with the request admitted; class "
       "and age inside a tenant; while a head waits, 16 tries a tenant a pass beside it; no preemption that puts the "
       "preemptor above the victim's tenant (issue 59's rule; rule A of docs/benchmarks/packing.md section 10)",
       {"share-first", "priority-class", "age"},
       {"backfill-per-tenant"},
       {"quota", "host-policy", "head-shadow"},
       {"defragmentation", "share-preemption", "lease-shadow"}},
  };
  return rows;
}

}  // namespace

std::string Profile::describe() const {
  std::vector<std::string_view> preFilterNames, permitNames, postFilterNames;
  for (const auto& p : preFilters) preFilterNames.push_back(p->name());
  for (const auto& p : permits) permitNames.push_back(p->name());
  for (const auto& p : postFilters) postFilterNames.push_back(p->name());
  return fmt::format("{}: queue sort {}; pre-filter {}; permit {}; post-filter {}", name, fmt::join(queueSort.names(), ", "),
                     preFilterNames.empty() ? std::string("none") : fmt::format("{}", fmt::join(preFilterNames, ", ")),
                     fmt::join(permitNames, ", "), fmt::join(postFilterNames, ", "));
}

bool Profile::moves() const {
  return std::any_of(postFilters.begin(), postFilters.end(),
                     [](const auto& p) { return dynamic_cast<const DefragmentationPostFilter*>(p.get()) != nullptr; });
}

const PreemptingPostFilter* Profile::preemption() const {
  for (const auto& p : postFilters)
    if (const auto* preempting = dynamic_cast<const PreemptingPostFilter*>(p.get())) return preempting;
  return nullptr;
}

std::span<const ProfileEntry> admissionProfiles() { return profileTable(); }

std::vector<std::string> admissionProfileNames() {
  std::vector<std::string> names;
  for (const auto& p : profileTable()) names.emplace_back(p.name);
  return names;
}

Result<std::shared_ptr<const Profile>> buildProfile(std::string_view name, std::span<const std::string> queueSort) {
  const auto& table = profileTable();
  auto row = std::find_if(table.begin(), table.end(), [&](const ProfileEntry& p) { return p.name == name; });
  if (row == table.end())
    return fail(Code::kInvalidArgument, fmt::format("no admission profile '{}' (known: {})", name, fmt::join(admissionProfileNames(), ", ")));
  auto profile = std::make_shared<Profile>();
  profile->name = std::string(row->name);
  SY_ASSIGN(profile->queueSort, QueueSort::of(queueSort.empty() ? std::span<const std::string>(row->queueSort) : queueSort));
  SY_ASSIGN(profile->preFilters, pick(preFilterTable(), row->preFilters, "pre-filter"));
  SY_ASSIGN(profile->permits, pick(permitTable(), row->permits, "permit"));
  SY_ASSIGN(profile->postFilters, pick(postFilterTable(), row->postFilters, "post-filter"));
  return profile;
}

}  // namespace switchyard::admission

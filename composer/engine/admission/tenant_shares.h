// The tenants' fair share as yardd's admission pass sees it (issue 59, ADR 0032): each tenant's use (GPUs held now
// plus its decayed recent use, from RecentUse) over its weight (the identities file's `share`, 1 when none). The fair
// line is everyone's use over everyone's weight, counted over every tenant the pass knows: those that wait, hold,
// remember use, or have a share set.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/engine/admission/queue_sort.h"

namespace switchyard::admission {

class TenantShares final : public ShareBook {
 public:
  using Use = std::map<std::string, double, std::less<>>;
  // `tenants`: every tenant the pass knows (any order; repeats are one); `use`: GPUs per tenant (missing: 0);
  // `weightOf`: a tenant's weight (positive).
  TenantShares(const std::vector<std::string>& tenants, const Use& use, const std::function<double(std::string_view)>& weightOf);

  // The tenant's number in this pass (its place in name order); one the pass does not know is an error.
  [[nodiscard]] TenantIndex index(std::string_view tenant) const;
  [[nodiscard]] std::optional<TenantIndex> find(std::string_view tenant) const;
  [[nodiscard]] std::size_t size() const { return names_.size(); }

  [[nodiscard]] double charge(TenantIndex tenant) const override { return used_[tenant] / weight_[tenant]; }
  [[nodiscard]] double chargeWith(TenantIndex tenant, double gpus) const override { return (used_[tenant] + gpus) / weight_[tenant]; }
  [[nodiscard]] bool belowFairLine(TenantIndex tenant) const override { return charge(tenant) < fairLine_; }

 private:
  std::vector<std::string> names_;  // sorted
  std::vector<double> used_;
  std::vector<double> weight_;
  double fairLine_ = 0;
};

}  // namespace switchyard::admission

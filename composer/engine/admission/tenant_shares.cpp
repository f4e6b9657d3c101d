#include "composer/engine/admission/tenant_shares.h"

#include <algorithm>
#include <cassert>

namespace switchyard::admission {

TenantShares::TenantShares(const std::vector<std::string>& tenants, const Use& use, const std::function<double(std::string_view)>& weightOf)
    : names_(tenants) {
  std::sort(names_.begin(), names_.end());
  names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
  double all = 0, weights = 0;
  for (const auto& name : names_) {
    const auto u = use.find(name);
    used_.push_back(u == use.end() ? 0.0 : u->second);
    weight_.push_back(weightOf(name));
    all += used_.back();
    weights += weight_.back();
  }
  fairLine_ = weights > 0 ? all / weights : 0;
}

TenantIndex TenantShares::index(std::string_view tenant) const {
  const auto it = std::lower_bound(names_.begin(), names_.end(), tenant);
  assert(it != names_.end() && *it == tenant);
  return static_cast<TenantIndex>(it - names_.begin());
}

std::optional<TenantIndex> TenantShares::find(std::string_view tenant) const {
  const auto it = std::lower_bound(names_.begin(), names_.end(), tenant);
  if (it == names_.end() || *it != tenant) return std::nullopt;
  return static_cast<TenantIndex>(it - names_.begin());
}

}  // namespace switchyard::admission

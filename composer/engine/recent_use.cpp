#include "composer/engine/recent_use.h"

#include <cmath>

namespace switchyard {

RecentUse::Charges RecentUse::pass(const Charges& heldNow, Timestamp now) {
  Charges out = heldNow;
  const double halfLife = std::chrono::duration<double>(halfLife_).count();
  if (halfLife <= 0) return out;
  // Each tenant's history since the last pass, as if it held then what it held at that pass (the passes come
  // with every change that may free capacity, so the steps are short while the queue is busy):
  // decayed' = decayed * 2^(-dt/H) + held * H/ln2 * (1 - 2^(-dt/H)).
  const double dt = lastPassAt_ == 0 ? 0.0 : static_cast<double>(now - lastPassAt_) / 1e9;
  const double keep = std::exp2(-dt / halfLife);
  for (auto& [tenant, u] : tenants_) u.decayedGpuSeconds = u.decayedGpuSeconds * keep + u.heldGpus * halfLife / std::log(2.0) * (1 - keep);
  for (auto& [tenant, u] : tenants_) u.heldGpus = 0;
  for (const auto& [tenant, n] : heldNow) tenants_[tenant].heldGpus = n;
  std::erase_if(tenants_, [](const auto& e) { return e.second.heldGpus == 0 && e.second.decayedGpuSeconds < 1.0; });
  lastPassAt_ = now;
  // Recent use counts as the GPUs that, held for one half-life, would have cost as much.
  for (const auto& [tenant, u] : tenants_) out[tenant] += u.decayedGpuSeconds / halfLife;
  return out;
}

}  // namespace switchyard

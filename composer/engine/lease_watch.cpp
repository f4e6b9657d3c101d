#include "composer/engine/lease_watch.h"

namespace switchyard {

LeaseWatch::Due LeaseWatch::look(const System& s, Timestamp now, Duration warnBefore) {
  if (s.leaseExpiresAt == 0 || s.state == SystemState::kQueued) return Due::kNothing;
  if (now >= s.leaseExpiresAt) {
    if (!s.activeOperation.empty()) return Due::kNothing;  // its operation ends first; then it is due
    if (auto retry = retryAt_.find(s.id); retry != retryAt_.end() && now < retry->second) return Due::kNothing;
    return Due::kDecompose;
  }
  if (warnBefore.count() > 0 && now >= s.leaseExpiresAt - warnBefore.count() && warned_.insert(s.id).second) return Due::kWarn;
  return Due::kNothing;
}

bool LeaseWatch::tried(const SystemId& id, Timestamp now, Duration retryAfter) {
  const bool retrying = retryAt_.contains(id);
  retryAt_[id] = now + retryAfter.count();
  return retrying;
}

void LeaseWatch::renewed(const SystemId& id) {
  warned_.erase(id);
  retryAt_.erase(id);
}

void LeaseWatch::prune(const std::function<bool(const SystemId&)>& gone) {
  std::erase_if(warned_, gone);
  std::erase_if(retryAt_, [&](const auto& entry) { return gone(entry.first); });
}

}  // namespace switchyard

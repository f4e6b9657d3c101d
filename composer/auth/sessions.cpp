#include "composer/auth/sessions.h"

#include <algorithm>

#include "composer/auth/identities.h"

namespace switchyard::auth {

std::pair<std::string, Session> Sessions::issue(const Caller& caller, std::chrono::seconds ttl, std::uint64_t generation) {
  const Timestamp now = clock_.now();
  Session session{caller, now + std::chrono::duration_cast<std::chrono::nanoseconds>(ttl).count(), generation};
  std::string token = Identities::newToken();
  std::lock_guard lock(mutex_);
  dropExpired(now);
  if (byTokenHash_.size() >= kMaxSessions) {
    auto soonest = std::min_element(byTokenHash_.begin(), byTokenHash_.end(),
                                    [](const auto& a, const auto& b) { return a.second.expiresAt < b.second.expiresAt; });
    byTokenHash_.erase(soonest);
  }
  byTokenHash_.emplace(Identities::hashToken(token), session);
  return {std::move(token), std::move(session)};
}

std::optional<Session> Sessions::find(std::string_view token) {
  if (token.empty()) return std::nullopt;
  const std::string hash = Identities::hashToken(token);
  std::lock_guard lock(mutex_);
  auto it = byTokenHash_.find(hash);
  if (it == byTokenHash_.end()) return std::nullopt;
  if (it->second.expiresAt <= clock_.now()) {
    byTokenHash_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void Sessions::revoke(std::string_view token) {
  if (token.empty()) return;
  const std::string hash = Identities::hashToken(token);
  std::lock_guard lock(mutex_);
  byTokenHash_.erase(hash);
}

std::size_t Sessions::size() const {
  std::lock_guard lock(mutex_);
  return byTokenHash_.size();
}

void Sessions::dropExpired(Timestamp now) {
  std::erase_if(byTokenHash_, [now](const auto& entry) { return entry.second.expiresAt <= now; });
}

}  // namespace switchyard::auth

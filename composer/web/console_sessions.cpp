#include "composer/web/console_sessions.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "composer/auth/identities.h"

namespace switchyard::web {

ConsoleSessions::ConsoleSessions(Clock& clock) : clock_(clock), localCsrf_(auth::Identities::newToken()) {}

std::pair<std::string, ConsoleSession> ConsoleSessions::open(const Caller& caller) {
  const Timestamp now = clock_.now();
  ConsoleSession session{caller, auth::Identities::newToken(), now + std::chrono::duration_cast<std::chrono::nanoseconds>(kTtl).count()};
  std::string cookie = auth::Identities::newToken();
  std::lock_guard lock(mutex_);
  std::erase_if(byCookieHash_, [now](const auto& entry) { return entry.second.expiresAt <= now; });
  if (byCookieHash_.size() >= kMaxSessions)
    byCookieHash_.erase(std::min_element(byCookieHash_.begin(), byCookieHash_.end(),
                                         [](const auto& a, const auto& b) { return a.second.expiresAt < b.second.expiresAt; }));
  byCookieHash_.emplace(auth::Identities::hashToken(cookie), session);
  return {std::move(cookie), std::move(session)};
}

std::optional<ConsoleSession> ConsoleSessions::find(std::string_view cookie) {
  if (cookie.empty()) return std::nullopt;
  const std::string hash = auth::Identities::hashToken(cookie);
  std::lock_guard lock(mutex_);
  auto it = byCookieHash_.find(hash);
  if (it == byCookieHash_.end()) return std::nullopt;
  if (it->second.expiresAt <= clock_.now()) {
    byCookieHash_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void ConsoleSessions::close(std::string_view cookie) {
  if (cookie.empty()) return;
  const std::string hash = auth::Identities::hashToken(cookie);
  std::lock_guard lock(mutex_);
  byCookieHash_.erase(hash);
}

bool sameSecret(std::string_view a, std::string_view b) { return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

std::string cookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const auto semi = header.find(';');
    std::string_view pair = header.substr(0, semi);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    const auto eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return std::string(pair.substr(eq + 1));
    if (semi == std::string_view::npos) break;
    header.remove_prefix(semi + 1);
  }
  return {};
}

}  // namespace switchyard::web

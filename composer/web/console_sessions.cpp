#include "composer/web/console_sessions.h"

#include <openssl/crypto.h>

#include "composer/auth/identities.h"

namespace switchyard::web {

namespace {

// The CSRF token of a session: derived from its cookie, which no page of another origin can read.
std::string csrfOf(std::string_view cookie) { return auth::Identities::hashToken("console-csrf:" + std::string(cookie)); }

}  // namespace

ConsoleSessions::ConsoleSessions(Clock& clock, net::CurrentCaller current)
    : logins_(clock), current_(std::move(current)), localCsrf_(auth::Identities::newToken()) {}

std::pair<std::string, ConsoleSession> ConsoleSessions::open(const Caller& caller, std::uint64_t generation) {
  auto [cookie, session] = logins_.issue(caller, kTtl, generation);
  ConsoleSession console{caller, csrfOf(cookie), session.expiresAt};
  return {std::move(cookie), std::move(console)};
}

std::optional<ConsoleSession> ConsoleSessions::find(std::string_view cookie) {
  auto session = logins_.find(cookie);
  if (!session) return std::nullopt;
  if (current_) {
    auto now = current_(session->caller.identity, session->generation);
    if (!now) {
      logins_.revoke(cookie);
      return std::nullopt;
    }
    session->caller = std::move(*now);
  }
  return ConsoleSession{session->caller, csrfOf(cookie), session->expiresAt};
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

// The browser console's logins (issue 63, item 1): a name and password exchanged for a session cookie
// (HttpOnly, SameSite=Strict, Secure on TLS) and a CSRF token the page sends back in X-CSRF-Token on every
// change. The cookie proves who asks; the token, which a page of another origin cannot read, proves the console
// asks. The cookie is a login token of auth::Sessions (in memory by its SHA-256: a restart of yardd logs everyone
// out); the CSRF token is derived from it, so nothing else is kept. A session is the identity as it is now: a
// changed password or a removal (SIGHUP) ends it at its next use, as it ends gRPC and Redfish logins. Thread-safe.
//
// Without identities (every caller is the local admin) there is no login, but changes still need the token:
// the process's own, which /api/v1/session hands to a page of the same origin only.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "net/authorize.h"
#include "composer/auth/sessions.h"
#include "composer/model/caller.h"
#include "composer/model/clock.h"

namespace switchyard::web {

struct ConsoleSession {
  Caller caller;
  std::string csrf;
  Timestamp expiresAt = 0;
};

class ConsoleSessions {
 public:
  static constexpr std::chrono::hours kTtl{8};

  // `current` empty: a session keeps the caller it opened with (no identities).
  ConsoleSessions(Clock& clock, net::CurrentCaller current);
  // A new login of `caller`, whose identity was at `generation`: the cookie's value and the session it opens.
  [[nodiscard]] std::pair<std::string, ConsoleSession> open(const Caller& caller, std::uint64_t generation = 0);
  // The session a cookie opened, while it has not expired or been closed and its identity is unchanged; its
  // caller as the identity is now (a new role or tenant from a reload applies at once).
  [[nodiscard]] std::optional<ConsoleSession> find(std::string_view cookie);
  void close(std::string_view cookie) { logins_.revoke(cookie); }
  // The token changes need when nobody logs in (no identities).
  [[nodiscard]] const std::string& localCsrf() const { return localCsrf_; }

 private:
  auth::Sessions logins_;
  net::CurrentCaller current_;
  const std::string localCsrf_;
};

// Compares two secrets in time that does not depend on where they differ.
[[nodiscard]] bool sameSecret(std::string_view a, std::string_view b);

// The value of cookie `name` in a Cookie header ("a=1; yard_session=..."), or empty.
[[nodiscard]] std::string cookieValue(std::string_view header, std::string_view name);

}  // namespace switchyard::web

// The browser console's logins (issue 63, item 1): a name and password exchanged for a session cookie
// (HttpOnly, SameSite=Strict, Secure on TLS) and a CSRF token the page sends back in X-CSRF-Token on every
// change. The cookie proves who asks; the token, which a page of another origin cannot read, proves the console
// asks. The cookie is a login token of auth::Sessions (in memory by its SHA-256: a restart of yardd logs everyone
// out); the CSRF token is derived from it, so nothing else is kept. Thread-safe.
//
// Without identities (every caller is the local admin) there is no login, but changes still need the token:
// the process's own, which /api/v1/session hands to a page of the same origin only.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

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

  explicit ConsoleSessions(Clock& clock);
  // A new login of `caller`: the cookie's value and the session it opens.
  [[nodiscard]] std::pair<std::string, ConsoleSession> open(const Caller& caller);
  // The session a cookie opened, while it has not expired or been closed.
  [[nodiscard]] std::optional<ConsoleSession> find(std::string_view cookie);
  void close(std::string_view cookie) { logins_.revoke(cookie); }
  // The token changes need when nobody logs in (no identities).
  [[nodiscard]] const std::string& localCsrf() const { return localCsrf_; }

 private:
  auth::Sessions logins_;
  const std::string localCsrf_;
};

// Compares two secrets in time that does not depend on where they differ.
[[nodiscard]] bool sameSecret(std::string_view a, std::string_view b);

// The value of cookie `name` in a Cookie header ("a=1; yard_session=..."), or empty.
[[nodiscard]] std::string cookieValue(std::string_view header, std::string_view name);

}  // namespace switchyard::web

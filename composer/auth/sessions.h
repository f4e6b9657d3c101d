// Short-lived bearer tokens that yardd issues for a name and password (gRPC Login, `yardctl login`), so that
// an identity with only a password can use the CLI. Kept in memory, by the token's SHA-256: a restart of
// yardd ends every session (log in again). Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "composer/model/caller.h"
#include "composer/model/clock.h"

namespace switchyard::auth {

struct Session {
  Caller caller;
  Timestamp expiresAt = 0;
  std::uint64_t generation = 0;  // the identity's when it logged in (Identity::generation): the session ends with it
};

class Sessions {
 public:
  static constexpr std::chrono::hours kDefaultTtl{12};
  static constexpr std::chrono::hours kMaxTtl{24 * 7};
  static constexpr std::size_t kMaxSessions = 100'000;  // then the oldest expiring go first

  explicit Sessions(Clock& clock) : clock_(clock) {}
  // A new token for `caller`, valid for `ttl`; the session it opens.
  [[nodiscard]] std::pair<std::string, Session> issue(const Caller& caller, std::chrono::seconds ttl, std::uint64_t generation = 0);
  // The session a token opened, while it has not expired.
  [[nodiscard]] std::optional<Session> find(std::string_view token);
  // Ends the session a token opened (a logout); nothing when there is none.
  void revoke(std::string_view token);
  [[nodiscard]] std::size_t size() const;

 private:
  void dropExpired(Timestamp now);
  Clock& clock_;
  mutable std::mutex mutex_;
  std::map<std::string, Session> byTokenHash_;
};

}  // namespace switchyard::auth

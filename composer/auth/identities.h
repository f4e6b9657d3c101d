// Who may talk to yardd, as what: the identities file (`yardd --identities FILE`, JSON, mode 0600), read
// by the gRPC API and the Redfish service alike. Each identity has a role (composer/model/caller.h), a
// tenant when its role is tenant, and one or more credentials:
//   - "password": a PBKDF2-SHA256 hash (`yardd --hash-password`), for Redfish Basic auth and sessions;
//   - "token_sha256": the SHA-256 of a bearer token (`yardd --new-token`), for gRPC and Redfish;
//   - "certificate_cn": the common name of a client certificate yardd's --tls-client-ca signed (mutual TLS).
// Secrets are never stored, only their hashes. "tenants" holds each tenant's quota (composer/model/access.h).
//
//   {"tenants": {"team-a": {"max_gpus": 16, "max_systems": 4}},
//    "identities": [
//      {"name": "alice", "role": "admin", "password": "pbkdf2-sha256$600000$<salt hex>$<hash hex>"},
//      {"name": "slurm", "role": "operator", "token_sha256": "<64 hex digits>"},
//      {"name": "ci-a", "role": "tenant", "tenant": "team-a", "certificate_cn": "ci-a"}]}
#pragma once

#include <cstdint>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/access.h"
#include "composer/model/caller.h"
#include "composer/model/clock.h"
#include "composer/model/error.h"

namespace switchyard::auth {

struct Identity {
  std::string name;
  Role role = Role::kViewer;
  std::string tenant;
  std::string passwordHash;  // pbkdf2-sha256$ITERATIONS$SALT$HASH (hex), or empty
  std::string tokenSha256;   // lower-case hex, or empty
  std::string certificateCn;
  // Which version of this identity: a reload keeps it while the name's credentials, role and tenant stay the
  // same, and gives a new one otherwise, or when a removed name is added again. A login made under one
  // generation ends with it (a password change or a removal ends its tokens, even once the name is back).
  std::uint64_t generation = 0;
  [[nodiscard]] Caller caller() const { return {name, role, tenant}; }
};

inline constexpr int kPasswordIterations = 600'000;  // OWASP's 2023 figure for PBKDF2-HMAC-SHA256

class Identities {
 public:
  // Parses the file's JSON; `source` names it in errors. Unknown keys, duplicate names, credentials or
  // certificate names, a tenant role without a tenant (or another role with one) are refused.
  [[nodiscard]] static Result<std::unique_ptr<Identities>> parse(std::string_view json, std::string_view source);
  [[nodiscard]] static Result<std::unique_ptr<Identities>> load(const std::filesystem::path& file);

  // The caller a credential proves, or nothing. Comparisons take the same time whatever matched.
  // Passwords: a name that failed kFreePasswordAttempts times in a row is locked for 1 s, then 2, 4, ... up to
  // kMaxLockout, each further failure doubling it; while locked every password is refused unchecked. A name
  // nobody has costs the same PBKDF2 work as one that exists, and is locked the same way.
  // `source` is where the attempt came from (the peer's address, without its port; empty: not known). A source
  // whose last kFreeSourceAttempts passwords all failed, whatever names they tried, is locked the same way, so
  // that one guesser cannot spray a few tries at each of many names. A password that matches starts the name's
  // count again, not the source's (a guesser who also knows one password must not reset its own count); a
  // count starts again after kMaxLockout with no failure. `generation`, when given, is set to the identity's
  // (Identity::generation) on a match.
  [[nodiscard]] std::optional<Caller> byPassword(std::string_view name, std::string_view password, std::string_view source = {},
                                                 std::uint64_t* generation = nullptr) const;
  // Whether byPassword would run PBKDF2 for these (a name and source not locked, a password not matched before):
  // callers on a request path's threads hand such a check to threads of their own (bmc::Accounts::authorize).
  [[nodiscard]] bool checkIsSlow(std::string_view name, std::string_view password, std::string_view source = {}) const;
  // Whether a password check for `name` is likely a guesser's: no identity has that name with a password, or
  // failed passwords are counted against it now. Such checks wait in a lane of their own (bmc::Accounts, gRPC
  // Login), so that guessers cannot make a first login of a real name wait behind their PBKDF2. (Guesses at a
  // real name lock it after kFreePasswordAttempts and then cost nothing; guesses at names nobody has are the
  // unbounded load.) Not by source: guessers and users often share one (a NAT, a proxy, loopback).
  [[nodiscard]] bool suspect(std::string_view name) const;
  static constexpr int kFreePasswordAttempts = 5;
  static constexpr int kFreeSourceAttempts = 20;
  static constexpr std::chrono::minutes kMaxLockout{15};
  // How long `name` (or `source`) stays locked after failed passwords; nothing when it is not.
  [[nodiscard]] std::optional<std::chrono::seconds> lockedFor(std::string_view name) const;
  [[nodiscard]] std::optional<std::chrono::seconds> sourceLockedFor(std::string_view source) const;
  // A name or a source just locked.
  struct Lockout {
    enum class Of { kName, kSource };
    Of of = Of::kName;
    std::string who;  // the name as sent, or the source's address
    std::chrono::seconds lockedFor{0};
    int failures = 0;  // in a row
  };
  // Called each time a name or source becomes locked (once per lock, not for the attempts refused while it
  // lasts), on the thread that checked the password and outside every lock: yardd logs it and writes it to the
  // audit trail.
  using LockoutObserver = std::function<void(const Lockout&)>;
  void onLockout(LockoutObserver observer);
  // The clock lockouts are timed by (tests: a ManualClock); it must outlive this object.
  void useClock(const Clock& clock) { clock_ = &clock; }
  [[nodiscard]] std::optional<Caller> byToken(std::string_view token) const;
  [[nodiscard]] std::optional<Caller> byCertificate(std::string_view commonName) const;
  // The caller an identity is now (a login token's identity may have been changed or removed since).
  [[nodiscard]] std::optional<Caller> byName(std::string_view name) const;
  // The identity as it is now, only while it is still the `generation` a login was made under.
  [[nodiscard]] std::optional<Caller> current(std::string_view name, std::uint64_t generation) const;

  // Copies: a reload (below) may replace them at any time.
  [[nodiscard]] std::vector<Identity> identities() const;
  [[nodiscard]] TenantQuotas quotas() const;

  // Replaces the identities and quotas with `fresh`'s (yardd's SIGHUP: the file was edited). Callers that
  // hold this object see the new ones from their next lookup; one running now finishes on the old.
  void replaceWith(const Identities& fresh);

  // What goes in the file: a password's hash (a fresh random salt), a token's hash, a new random token.
  [[nodiscard]] static std::string hashPassword(std::string_view password, int iterations = kPasswordIterations);
  [[nodiscard]] static std::string hashToken(std::string_view token);
  [[nodiscard]] static std::string newToken();

 private:
  Identities() = default;
  mutable std::shared_mutex data_;  // guards identities_ and quotas_ (written only by replaceWith)
  std::vector<Identity> identities_;
  TenantQuotas quotas_;
  struct Failures {
    int count = 0;
    Timestamp lockedUntil = 0;
    Timestamp lastFailure = 0;
  };
  using FailureCounts = std::map<std::string, Failures, std::less<>>;
  // Counts a failed password against its name and its source; tells the observer of each lock it starts.
  void recordFailure(const std::string& name, std::string_view source) const;
  // A password matched: the name's count starts again (mutex_ held).
  void forgetFailures(const std::string& name, std::string_view source) const;
  [[nodiscard]] static std::string rememberedKey(const Identity& id, std::string_view password);
  [[nodiscard]] std::optional<std::chrono::seconds> lockedIn(const FailureCounts& counts, std::string_view key) const;  // mutex_ held
  mutable std::mutex mutex_;  // guards verified_, failures_, sourceFailures_ and lockoutObserver_
  LockoutObserver lockoutObserver_;
  // PBKDF2 is slow on purpose; a password that matched once is remembered (by its SHA-256 with the
  // name) so that Redfish Basic auth on every request stays cheap.
  mutable std::set<std::string> verified_;
  mutable FailureCounts failures_;        // consecutive failed passwords, by name
  mutable FailureCounts sourceFailures_;  // consecutive failed passwords, by source
  const Clock* clock_ = &defaultClock();
  static const Clock& defaultClock();
};

}  // namespace switchyard::auth

// Redfish authentication over yardd's identities file (composer/auth/identities.h): Basic auth checks an
// identity's password, `Authorization: Bearer` its token, and sessions are tokens created by POST
// /redfish/v1/SessionService/Sessions, dropped on DELETE or after the timeout. Roles map onto Redfish's
// predefined ones (Administrator, Operator, ReadOnly) and one custom role, Tenant.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "composer/auth/identities.h"
#include "composer/model/caller.h"
#include "composer/model/error.h"

namespace switchyard::bmc {

// Roles as Redfish names them.
[[nodiscard]] std::optional<Role> parseRedfishRole(std::string_view name);
[[nodiscard]] std::string_view redfishRoleName(Role role);

struct Session {
  std::string id;
  std::string token;
  Caller caller;
  std::chrono::steady_clock::time_point lastUsed;
};

class Accounts {
 public:
  explicit Accounts(std::shared_ptr<const auth::Identities> identities, std::chrono::seconds sessionTimeout = std::chrono::minutes(30))
      : identities_(std::move(identities)), sessionTimeout_(sessionTimeout) {}

  // The caller an `Authorization: Basic ...` / `Authorization: Bearer ...` header or an `X-Auth-Token`
  // session token proves, or nothing.
  [[nodiscard]] std::optional<Caller> authorization(const std::string& header, std::string_view peer = {}) const;
  [[nodiscard]] std::optional<Caller> token(const std::string& token);
  [[nodiscard]] std::optional<Session> login(const std::string& user, const std::string& password, std::string_view peer = {});
  [[nodiscard]] bool logout(const std::string& sessionId);
  [[nodiscard]] std::vector<Session> sessions();
  [[nodiscard]] const auth::Identities& identities() const { return *identities_; }
  [[nodiscard]] std::chrono::seconds sessionTimeout() const {
    std::lock_guard lock(mutex_);
    return sessionTimeout_;
  }
  // PATCH SessionService SessionTimeout: idle sessions older than the new timeout end at the next check.
  void setSessionTimeout(std::chrono::seconds timeout) {
    std::lock_guard lock(mutex_);
    sessionTimeout_ = timeout;
  }

 private:
  void expireLocked();
  std::shared_ptr<const auth::Identities> identities_;
  std::chrono::seconds sessionTimeout_;
  mutable std::mutex mutex_;
  std::map<std::string, Session> sessions_;  // by id
  std::uint64_t nextSession_ = 1;
};

}  // namespace switchyard::bmc

// Redfish accounts and what each role may do. Accounts come from a file of `USER:ROLE:PASSWORD` lines
// (roles: Administrator, Operator, ReadOnly; the file should be readable by yardd only). Sessions are
// tokens created by POST /redfish/v1/SessionService/Sessions, dropped on DELETE or after the timeout.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "composer/model/caller.h"
#include "composer/model/error.h"

namespace switchyard::bmc {

// The Redfish predefined roles, as the engine's roles.
[[nodiscard]] std::optional<Role> parseRedfishRole(std::string_view name);
[[nodiscard]] std::string_view redfishRoleName(Role role);

struct Account {
  std::string user;
  Role role = Role::kViewer;
  std::string password;
};

struct Session {
  std::string id;
  std::string token;
  std::string user;
  Role role = Role::kViewer;
  std::chrono::steady_clock::time_point lastUsed;
};

class Accounts {
 public:
  explicit Accounts(std::vector<Account> accounts, std::chrono::seconds sessionTimeout = std::chrono::minutes(30))
      : accounts_(std::move(accounts)), sessionTimeout_(sessionTimeout) {}
  // Reads USER:ROLE:PASSWORD lines ('#' comments and blank lines skipped); names the line of any error.
  [[nodiscard]] static Result<std::unique_ptr<Accounts>> load(const std::filesystem::path& file);

  // The caller an `Authorization: Basic ...` or `X-Auth-Token` header proves, or nothing.
  [[nodiscard]] std::optional<Caller> basic(const std::string& authorization) const;
  [[nodiscard]] std::optional<Caller> token(const std::string& token);
  [[nodiscard]] std::optional<Session> login(const std::string& user, const std::string& password);
  [[nodiscard]] bool logout(const std::string& sessionId);
  [[nodiscard]] std::vector<Session> sessions();
  [[nodiscard]] const std::vector<Account>& accounts() const { return accounts_; }
  [[nodiscard]] std::chrono::seconds sessionTimeout() const { return sessionTimeout_; }

 private:
  void expireLocked();
  std::vector<Account> accounts_;
  std::chrono::seconds sessionTimeout_;
  std::mutex mutex_;
  std::map<std::string, Session> sessions_;  // by id
  std::uint64_t nextSession_ = 1;
};

}  // namespace switchyard::bmc

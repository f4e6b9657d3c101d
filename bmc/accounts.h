// Redfish authentication over yardd's identities file (composer/auth/identities.h): Basic auth checks an
// identity's password, `Authorization: Bearer` its token, and sessions are tokens created by POST
// /redfish/v1/SessionService/Sessions, dropped on DELETE or after the timeout. Roles map onto Redfish's
// predefined ones (Administrator, Operator, ReadOnly) and one custom role, Tenant.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
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
  std::uint64_t generation = 0;  // the identity's at login (auth::Identity::generation): the session ends with it
};

class Accounts {
 public:
  explicit Accounts(std::shared_ptr<const auth::Identities> identities, std::chrono::seconds sessionTimeout = std::chrono::minutes(30))
      : identities_(std::move(identities)), sessionTimeout_(sessionTimeout) {}
  ~Accounts() {
    checks_.join();
    suspectChecks_.join();
  }
  Accounts(const Accounts&) = delete;
  Accounts& operator=(const Accounts&) = delete;

  // The caller an `Authorization: Basic ...` / `Authorization: Bearer ...` header or an `X-Auth-Token`
  // session token proves, or nothing.
  [[nodiscard]] std::optional<Caller> authorization(const std::string& header, std::string_view peer = {}) const;
  // The same, for a server's request threads: `then` runs at once when the answer is cheap (a token, a password
  // matched before, a locked name or source, a malformed header), and on one of this object's own threads when it
  // takes a password check (PBKDF2 takes ~0.1-0.3 s on purpose), so that guessers never hold the threads that
  // serve everyone else. `then` must not block.
  void authorize(const std::string& header, std::string_view peer, std::function<void(std::optional<Caller>)> then);
  [[nodiscard]] std::optional<Caller> token(const std::string& token);
  [[nodiscard]] std::optional<Session> login(const std::string& user, const std::string& password, std::string_view peer = {});
  // login() for a server's request threads: `then` runs on one of this object's threads when the check is slow.
  void startLogin(std::string user, std::string password, std::string peer, std::function<void(std::optional<Session>)> then);
  // A name and password checked as Basic is (the same lockouts), for a login kept elsewhere (the console's):
  // `then` gets the caller and the identity's generation, on one of this object's threads when the check is slow.
  void checkPassword(std::string user, std::string password, std::string peer, std::function<void(std::optional<Caller>, std::uint64_t)> then);
  // Waits for the checks handed to this object's threads (yardd's shutdown, before its services go).
  void drain() {
    checks_.join();
    suspectChecks_.join();
  }
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
  // Where slow password checks run (last members: joined before the rest goes): checks of real names with no
  // failure counted, and, apart, the likely guessers' (auth::Identities::suspect), so that 40 guessers cannot
  // make a first login wait behind their PBKDF2.
  boost::asio::thread_pool checks_{2};
  boost::asio::thread_pool suspectChecks_{1};
  [[nodiscard]] boost::asio::thread_pool& laneFor(std::string_view name) { return identities_->suspect(name) ? suspectChecks_ : checks_; }
};

}  // namespace switchyard::bmc

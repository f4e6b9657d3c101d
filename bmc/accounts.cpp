#include "bmc/accounts.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <boost/asio/post.hpp>

#include "composer/model/base64.h"

namespace switchyard::bmc {

namespace {

std::string randomToken() {
  unsigned char bytes[24];
  RAND_bytes(bytes, sizeof bytes);
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

bool sameToken(const std::string& a, const std::string& b) { return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

// The name and password of a Basic header, or nothing.
std::optional<std::pair<std::string, std::string>> basicCredentials(std::string_view header) {
  const std::string_view prefix = "Basic ";
  if (!header.starts_with(prefix)) return std::nullopt;
  const std::string_view encoded = header.substr(prefix.size());
  // Well-formed base64 only (a partial group once overflowed Beast's decoder; the fuzzer keeps checking).
  const std::optional<std::string> decoded = encoded.size() > 4096 ? std::nullopt : decodeBase64(encoded);
  const auto colon = decoded ? decoded->find(':') : std::string::npos;
  if (colon == std::string::npos) return std::nullopt;
  return std::pair{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

}  // namespace

std::optional<Role> parseRedfishRole(std::string_view name) {
  if (name == "Administrator") return Role::kAdmin;
  if (name == "Operator") return Role::kOperator;
  if (name == "Tenant") return Role::kTenant;
  if (name == "ReadOnly") return Role::kViewer;
  return std::nullopt;
}

std::string_view redfishRoleName(Role role) {
  switch (role) {
    case Role::kAdmin: return "Administrator";
    case Role::kOperator: return "Operator";
    case Role::kTenant: return "Tenant";
    case Role::kViewer: return "ReadOnly";
  }
  return "ReadOnly";
}

std::optional<Caller> Accounts::authorization(const std::string& header, std::string_view peer) const {
  if (header.rfind("Bearer ", 0) == 0) return identities_->byToken(std::string_view(header).substr(7));
  const auto basic = basicCredentials(header);
  if (!basic) return std::nullopt;
  return identities_->byPassword(basic->first, basic->second, peer);
}

void Accounts::authorize(const std::string& header, std::string_view peer, std::function<void(std::optional<Caller>)> then) {
  const auto basic = basicCredentials(header);
  if (!basic || !identities_->checkIsSlow(basic->first, basic->second, peer)) return then(authorization(header, peer));
  boost::asio::post(laneFor(basic->first), [this, header, peer = std::string(peer), then = std::move(then)] { then(authorization(header, peer)); });
}

void Accounts::startLogin(std::string user, std::string password, std::string peer, std::function<void(std::optional<Session>)> then) {
  if (!identities_->checkIsSlow(user, password, peer)) return then(login(user, password, peer));
  auto& lane = laneFor(user);
  boost::asio::post(lane, [this, user = std::move(user), password = std::move(password), peer = std::move(peer), then = std::move(then)] {
    then(login(user, password, peer));
  });
}

void Accounts::checkPassword(std::string user, std::string password, std::string peer, std::function<void(std::optional<Caller>, std::uint64_t)> then) {
  const bool slow = identities_->checkIsSlow(user, password, peer);
  auto check = [this, user, password = std::move(password), peer = std::move(peer), then = std::move(then)] {
    std::uint64_t generation = 0;
    auto caller = identities_->byPassword(user, password, peer, &generation);
    then(std::move(caller), generation);
  };
  if (!slow) return check();
  boost::asio::post(laneFor(user), std::move(check));
}

void Accounts::expireLocked() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(sessions_, [&](const auto& entry) { return now - entry.second.lastUsed > sessionTimeout_; });
}

std::optional<Caller> Accounts::token(const std::string& token) {
  std::lock_guard lock(mutex_);
  expireLocked();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
    if (sameToken(it->second.token, token)) {
      // As the identity is now; a changed password or a removal (even if the name is back) ends the session.
      auto current = identities_->current(it->second.caller.identity, it->second.generation);
      if (!current) {
        sessions_.erase(it);
        return std::nullopt;
      }
      it->second.lastUsed = std::chrono::steady_clock::now();
      it->second.caller = *current;
      return *current;
    }
  return std::nullopt;
}

std::optional<Session> Accounts::login(const std::string& user, const std::string& password, std::string_view peer) {
  std::uint64_t generation = 0;
  auto caller = identities_->byPassword(user, password, peer, &generation);
  if (!caller) return std::nullopt;
  std::lock_guard lock(mutex_);
  expireLocked();
  Session s{std::to_string(nextSession_++), randomToken(), *caller, std::chrono::steady_clock::now(), generation};
  sessions_[s.id] = s;
  return s;
}

bool Accounts::logout(const std::string& sessionId) {
  std::lock_guard lock(mutex_);
  return sessions_.erase(sessionId) > 0;
}

std::vector<Session> Accounts::sessions() {
  std::lock_guard lock(mutex_);
  expireLocked();
  std::vector<Session> out;
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

}  // namespace switchyard::bmc

#include "bmc/accounts.h"

#include <fmt/format.h>

#include <boost/beast/core/detail/base64.hpp>
#include <fstream>
#include <random>

namespace switchyard::bmc {

namespace {

// Compares without an early exit, so the time taken does not tell how much of a secret matched.
bool sameSecret(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i)
    diff |= static_cast<unsigned>(static_cast<unsigned char>(i < a.size() ? a[i] : 0) ^ static_cast<unsigned char>(i < b.size() ? b[i] : 0));
  return diff == 0;
}

std::string randomToken() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 4; ++i) out += fmt::format("{:08x}", rd());
  return out;
}

Caller callerOf(const std::string& user, Role role) { return Caller{user, role, {}}; }

}  // namespace

std::optional<Role> parseRedfishRole(std::string_view name) {
  if (name == "Administrator") return Role::kAdmin;
  if (name == "Operator") return Role::kOperator;
  if (name == "ReadOnly") return Role::kViewer;
  return std::nullopt;
}

std::string_view redfishRoleName(Role role) {
  switch (role) {
    case Role::kAdmin: return "Administrator";
    case Role::kOperator: return "Operator";
    case Role::kViewer: return "ReadOnly";
  }
  return "ReadOnly";
}

Result<std::unique_ptr<Accounts>> Accounts::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return fail(Code::kInvalidArgument, fmt::format("{}: cannot read the Redfish accounts file", file.string()));
  std::vector<Account> accounts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos)
      return fail(Code::kInvalidArgument, fmt::format("{}:{}: expected USER:ROLE:PASSWORD", file.string(), number));
    Account a{line.substr(0, first), Role::kViewer, line.substr(second + 1)};
    auto role = parseRedfishRole(line.substr(first + 1, second - first - 1));
    if (a.user.empty() || a.password.empty() || !role)
      return fail(Code::kInvalidArgument,
                  fmt::format("{}:{}: expected USER:ROLE:PASSWORD with ROLE Administrator, Operator or ReadOnly", file.string(), number));
    a.role = *role;
    accounts.push_back(std::move(a));
  }
  if (accounts.empty()) return fail(Code::kInvalidArgument, fmt::format("{}: no accounts", file.string()));
  return std::make_unique<Accounts>(std::move(accounts));
}

std::optional<Caller> Accounts::basic(const std::string& authorization) const {
  const std::string prefix = "Basic ";
  if (authorization.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string encoded = authorization.substr(prefix.size());
  // Well-formed base64 only: whole 4-character groups of its alphabet. Beast's decoder writes past
  // decoded_size() for a trailing partial group (the fuzzer found that heap overflow), so it never sees one.
  if (encoded.empty() || encoded.size() % 4 != 0 || encoded.size() > 4096 ||
      encoded.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != std::string::npos)
    return std::nullopt;
  std::string decoded(boost::beast::detail::base64::decoded_size(encoded.size()) + 3, '\0');
  decoded.resize(boost::beast::detail::base64::decode(decoded.data(), encoded.data(), encoded.size()).first);
  const auto colon = decoded.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string user = decoded.substr(0, colon);
  const std::string password = decoded.substr(colon + 1);
  for (const auto& a : accounts_)
    if (a.user == user && sameSecret(a.password, password)) return callerOf(a.user, a.role);
  return std::nullopt;
}

void Accounts::expireLocked() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(sessions_, [&](const auto& entry) { return now - entry.second.lastUsed > sessionTimeout_; });
}

std::optional<Caller> Accounts::token(const std::string& token) {
  std::lock_guard lock(mutex_);
  expireLocked();
  for (auto& [id, s] : sessions_)
    if (sameSecret(s.token, token)) {
      s.lastUsed = std::chrono::steady_clock::now();
      return callerOf(s.user, s.role);
    }
  return std::nullopt;
}

std::optional<Session> Accounts::login(const std::string& user, const std::string& password) {
  for (const auto& a : accounts_) {
    if (a.user != user || !sameSecret(a.password, password)) continue;
    std::lock_guard lock(mutex_);
    expireLocked();
    Session s{std::to_string(nextSession_++), randomToken(), a.user, a.role, std::chrono::steady_clock::now()};
    sessions_[s.id] = s;
    return s;
  }
  return std::nullopt;
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

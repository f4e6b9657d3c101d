#include "composer/api/authenticator.h"

#include <fmt/format.h>

#include <algorithm>

namespace switchyard {

namespace {

std::optional<std::string> metadata(const grpc::ServerContextBase& ctx, const char* key) {
  const auto& md = ctx.client_metadata();
  auto it = md.find(key);
  if (it == md.end()) return std::nullopt;
  return std::string(it->second.data(), it->second.size());
}

bool printable(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

Result<Caller> claimed(const grpc::ServerContextBase& ctx) {
  Caller caller{"anonymous", Role::kAdmin, {}};
  if (auto identity = metadata(ctx, kCallerMetadata)) {
    if (identity->empty() || identity->size() > 128 || !printable(*identity))
      return fail(Code::kInvalidArgument, fmt::format("{} metadata: 1-128 printable characters without spaces", kCallerMetadata));
    caller.identity = *identity;
  }
  if (auto tenant = metadata(ctx, kTenantMetadata)) {
    if (tenant->size() > 128 || !printable(*tenant))
      return fail(Code::kInvalidArgument, fmt::format("{} metadata: up to 128 printable characters without spaces", kTenantMetadata));
    caller.tenant = *tenant;
  }
  return caller;
}

}  // namespace

Result<Caller> Authenticator::callerOf(const grpc::ServerContextBase& ctx) const {
  if (identities_ == nullptr) return claimed(ctx);
  if (auto header = metadata(ctx, "authorization")) {
    constexpr std::string_view kBearer = "Bearer ";
    if (header->rfind(kBearer, 0) != 0)
      return fail(Code::kUnauthenticated, "the authorization metadata must be 'Bearer TOKEN'");
    return callerOfBearer(std::string_view(*header).substr(kBearer.size()));
  }
  // A certificate the server verified against --tls-client-ca (gRPC only reports verified peers).
  const auto auth = ctx.auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    for (const auto& cn : auth->FindPropertyValues("x509_common_name")) {
      const std::string name(cn.data(), cn.size());
      if (auto caller = identities_->byCertificate(name)) return *caller;
      return fail(Code::kUnauthenticated, fmt::format("client certificate CN={} matches no identity's certificate_cn", name));
    }
  }
  return fail(Code::kUnauthenticated,
              "this yardd requires credentials: a bearer token (yardctl --token-file or YARD_TOKEN) or a client certificate "
              "(yardctl --cert/--key) named in its identities file");
}

Result<Caller> Authenticator::callerOfBearer(std::string_view token) const {
  if (identities_ == nullptr) return Caller::local();
  if (auto caller = identities_->byToken(token)) return *caller;
  if (sessions_ != nullptr)
    if (auto session = sessions_->find(token)) {
      // As the identity is now: a reload may have changed its role or tenant, or removed it. A changed password
      // or token, or a removal (even if the name is back), ends the login: that is a new identity.
      if (auto current = identities_->current(session->caller.identity, session->generation)) return *current;
      if (identities_->byName(session->caller.identity))
        return fail(Code::kUnauthenticated, fmt::format("'{}' logged in before its identity changed (a new password or credentials, or it was "
                                                        "removed and added again): `yardctl login` again",
                                                        session->caller.identity));
      return fail(Code::kUnauthenticated, fmt::format("'{}' logged in, but is no longer in yardd's identities file", session->caller.identity));
    }
  return fail(Code::kUnauthenticated,
              "the bearer token matches no identity in yardd's identities file and no current login (a login token expires, "
              "and ends when yardd restarts: `yardctl login` again)");
}

std::optional<auth::Session> Authenticator::sessionOf(const grpc::ServerContextBase& ctx) const {
  if (sessions_ == nullptr) return std::nullopt;
  auto header = metadata(ctx, "authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (!header || header->rfind(kBearer, 0) != 0) return std::nullopt;
  return sessions_->find(std::string_view(*header).substr(kBearer.size()));
}

std::string peerAddress(std::string_view peer) {
  if (peer.starts_with("unix")) return "unix";
  if (peer.starts_with("ipv4:") || peer.starts_with("ipv6:")) peer.remove_prefix(5);
  std::string address(peer);
  for (const auto& [escaped, plain] : {std::pair{"%5B", '['}, {"%5D", ']'}, {"%5b", '['}, {"%5d", ']'}})
    for (auto at = address.find(escaped); at != std::string::npos; at = address.find(escaped)) address.replace(at, 3, 1, plain);
  if (address.starts_with('[')) return address.substr(1, address.find(']') - 1);  // [v6]:port
  if (std::count(address.begin(), address.end(), ':') == 1) return address.substr(0, address.find(':'));  // v4:port
  return address;
}

bool Authenticator::loginIsSuspect(std::string_view name) const { return identities_ != nullptr && identities_->suspect(name); }

Result<Login> Authenticator::login(std::string_view name, std::string_view password, std::chrono::seconds ttl, std::string_view peer) const {
  if (identities_ == nullptr)
    return fail(Code::kFailedPrecondition, "this yardd has no identities file: there is nothing to log in to (every caller is an admin)");
  if (sessions_ == nullptr) return fail(Code::kFailedPrecondition, "this yardd issues no login tokens");
  if (ttl.count() < 0 || ttl > auth::Sessions::kMaxTtl)
    return fail(Code::kInvalidArgument, fmt::format("ttl_seconds: from 1 to {} (7 days); 0: the default, 12 hours",
                                                    std::chrono::seconds(auth::Sessions::kMaxTtl).count()));
  if (name.empty() || password.empty()) return fail(Code::kInvalidArgument, "name and password: both required");
  const std::string source = peerAddress(peer);
  std::uint64_t generation = 0;
  auto caller = identities_->byPassword(name, password, source, &generation);
  if (!caller) {
    if (auto locked = identities_->sourceLockedFor(source))
      return fail(Code::kUnauthenticated, fmt::format("wrong name or password; after {} failed tries from {} every password from there is "
                                                      "refused for {} s",
                                                      auth::Identities::kFreeSourceAttempts, source, locked->count()));
    if (auto locked = identities_->lockedFor(name))
      return fail(Code::kUnauthenticated, fmt::format("wrong name or password; after {} failed tries '{}' is locked for {} s",
                                                      auth::Identities::kFreePasswordAttempts, name, locked->count()));
    return fail(Code::kUnauthenticated, "wrong name or password");
  }
  auto [token, session] = sessions_->issue(*caller, ttl.count() == 0 ? std::chrono::seconds(auth::Sessions::kDefaultTtl) : ttl, generation);
  return Login{std::move(token), std::move(session)};
}

}  // namespace switchyard

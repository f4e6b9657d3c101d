// Who is calling over gRPC. With an identities file (composer/auth/identities.h) every call must prove
// an identity: a client certificate verified by yardd's --tls-client-ca whose common name an identity
// names, or `authorization: Bearer TOKEN` metadata; the role and tenant come from the file, and what the
// client claims in `switchyard-caller`/`switchyard-tenant` is ignored. Without one (a development yardd)
// the claims are taken as they are and every caller is an admin.
#pragma once

#include <grpcpp/server_context.h>

#include <string>

#include "composer/auth/identities.h"
#include "composer/auth/sessions.h"
#include "composer/model/caller.h"
#include "composer/model/error.h"

namespace switchyard {

// The request metadata that names the caller when yardd has no identities file.
inline constexpr const char* kCallerMetadata = "switchyard-caller";
inline constexpr const char* kTenantMetadata = "switchyard-tenant";

// What Login answers: the new token and the session it opens.
struct Login {
  std::string token;
  auth::Session session;
};

// The address in a gRPC peer string, without scheme or port: "ipv4:10.0.0.7:51234" -> "10.0.0.7",
// "ipv6:[::1]:51234" (or its %5B/%5D form) -> "::1", "unix:/run/x.sock" -> "unix".
[[nodiscard]] std::string peerAddress(std::string_view grpcPeer);

class Authenticator {
 public:
  // `identities` null: open mode (claims trusted). `sessions`: the tokens Login issues (null: Login is
  // refused). Both must outlive the authenticator.
  explicit Authenticator(const auth::Identities* identities, auth::Sessions* sessions = nullptr)
      : identities_(identities), sessions_(sessions) {}
  [[nodiscard]] Result<Caller> callerOf(const grpc::ServerContextBase& ctx) const;
  // Who a bearer token proves, for the HTTP adapters that take yardd's own tokens (CoHDI's fabric-manager API):
  // an identity's token or a current login (kUnauthenticated saying which it is not). Open mode: the local admin.
  [[nodiscard]] Result<Caller> callerOfBearer(std::string_view token) const;
  // The session of the call's Login token, if it used one (WhoAmI tells when it expires).
  [[nodiscard]] std::optional<auth::Session> sessionOf(const grpc::ServerContextBase& ctx) const;
  // A name and password from the identities file for a token valid `ttl` (0: the default, 12 h). `peer` is
  // the call's ServerContext::peer() (password lockouts count by its address too; empty: not known).
  // Whether a login of `name` is likely a guesser's (auth::Identities::suspect).
  [[nodiscard]] bool loginIsSuspect(std::string_view name) const;
  [[nodiscard]] Result<Login> login(std::string_view name, std::string_view password, std::chrono::seconds ttl,
                                    std::string_view peer = {}) const;
  // No identities file: every caller is taken at its word.
  [[nodiscard]] bool open() const { return identities_ == nullptr; }

 private:
  const auth::Identities* identities_;
  auth::Sessions* sessions_;
};

}  // namespace switchyard

// Who is calling over gRPC. With an identities file (composer/auth/identities.h) every call must prove
// an identity: a client certificate verified by yardd's --tls-client-ca whose common name an identity
// names, or `authorization: Bearer TOKEN` metadata; the role and tenant come from the file, and what the
// client claims in `switchyard-caller`/`switchyard-tenant` is ignored. Without one (a development yardd)
// the claims are taken as they are and every caller is an admin.
#pragma once

#include <grpcpp/server_context.h>

#include <string>

#include "composer/auth/identities.h"
#include "composer/model/caller.h"
#include "composer/model/error.h"

namespace switchyard {

// The request metadata that names the caller when yardd has no identities file.
inline constexpr const char* kCallerMetadata = "switchyard-caller";
inline constexpr const char* kTenantMetadata = "switchyard-tenant";

class Authenticator {
 public:
  // `identities` null: open mode (claims trusted). It must outlive the authenticator.
  explicit Authenticator(const auth::Identities* identities) : identities_(identities) {}
  [[nodiscard]] Result<Caller> callerOf(const grpc::ServerContextBase& ctx) const;

 private:
  const auth::Identities* identities_;
};

}  // namespace switchyard

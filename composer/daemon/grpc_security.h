// How yardd's gRPC listener is secured (ADR 0013): TLS by default, with a self-signed certificate made
// in the state directory at first start when no --tls-cert is given; mutual TLS with --tls-client-ca;
// plaintext only with --plaintext and only on a loopback address.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "composer/daemon/daemon_options.h"
#include "composer/daemon/loopback.h"
#include "composer/model/error.h"

namespace switchyard {

struct GrpcSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::string description;  // for the log: "TLS (certificate ...)", "mutual TLS ...", "plaintext (loopback)"
};

// Whether `host` (of HOST:PORT) is a loopback address: localhost, 127.0.0.0/8 or ::1.

[[nodiscard]] Result<GrpcSecurity> grpcSecurity(const DaemonOptions& o);

}  // namespace switchyard

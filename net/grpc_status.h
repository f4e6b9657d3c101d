// The one place where Switchyard error codes become gRPC status codes (and back, for clients).
#pragma once

#include <grpcpp/support/status.h>

#include "composer/model/error.h"

namespace switchyard {

[[nodiscard]] grpc::StatusCode toGrpcCode(Code code);
[[nodiscard]] grpc::Status toGrpcStatus(const Error& error);
// A status from a peer (yard-agent, another service) as a Switchyard error; codes with no equivalent
// (CANCELLED, UNKNOWN, ...) become kUnavailable or kInternal as their retry semantics suggest.
[[nodiscard]] Error fromGrpcStatus(const grpc::Status& status);

}  // namespace switchyard

// The one place where Switchyard error codes become gRPC status codes (and back, for clients).
#pragma once

#include <grpcpp/support/status.h>

#include "composer/model/error.h"

namespace switchyard {

[[nodiscard]] grpc::StatusCode toGrpcCode(Code code);
[[nodiscard]] grpc::Status toGrpcStatus(const Error& error);

}  // namespace switchyard

// Every gRPC answer of yardd names its version in the initial metadata (`switchyard-version: 0.1.0`), so a
// client can tell it talks to a yardd of another major version (yardctl warns) without an extra call.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <vector>

namespace switchyard {

inline constexpr const char* kVersionMetadata = "switchyard-version";

// For grpc::ServerBuilder::experimental().SetInterceptorCreators.
[[nodiscard]] std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> versionInterceptors();

}  // namespace switchyard

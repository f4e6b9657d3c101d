#include "composer/api/status_mapping.h"

namespace switchyard {

grpc::StatusCode toGrpcCode(Code code) {
  switch (code) {
    case Code::kOk: return grpc::StatusCode::OK;
    case Code::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case Code::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case Code::kAlreadyExists: return grpc::StatusCode::ALREADY_EXISTS;
    case Code::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case Code::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case Code::kDeadlineExceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case Code::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case Code::kAborted: return grpc::StatusCode::ABORTED;
    case Code::kInternal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

grpc::Status toGrpcStatus(const Error& error) { return grpc::Status(toGrpcCode(error.code), error.message); }

}  // namespace switchyard

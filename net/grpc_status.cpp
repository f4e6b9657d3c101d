#include "net/grpc_status.h"

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
    case Code::kPermissionDenied: return grpc::StatusCode::PERMISSION_DENIED;
    case Code::kUnauthenticated: return grpc::StatusCode::UNAUTHENTICATED;
  }
  return grpc::StatusCode::UNKNOWN;
}

grpc::Status toGrpcStatus(const Error& error) { return grpc::Status(toGrpcCode(error.code), error.message); }

Error fromGrpcStatus(const grpc::Status& status) {
  auto code = Code::kInternal;
  switch (status.error_code()) {
    case grpc::StatusCode::OK: code = Code::kOk; break;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE: code = Code::kInvalidArgument; break;
    case grpc::StatusCode::NOT_FOUND: code = Code::kNotFound; break;
    case grpc::StatusCode::ALREADY_EXISTS: code = Code::kAlreadyExists; break;
    case grpc::StatusCode::FAILED_PRECONDITION: code = Code::kFailedPrecondition; break;
    case grpc::StatusCode::PERMISSION_DENIED: code = Code::kPermissionDenied; break;
    case grpc::StatusCode::UNAUTHENTICATED: code = Code::kUnauthenticated; break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: code = Code::kResourceExhausted; break;
    case grpc::StatusCode::DEADLINE_EXCEEDED: code = Code::kDeadlineExceeded; break;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED: code = Code::kUnavailable; break;
    case grpc::StatusCode::ABORTED: code = Code::kAborted; break;
    default: code = Code::kInternal; break;
  }
  return Error{code, status.error_message()};
}

}  // namespace switchyard

#include "composer/model/error.h"

namespace switchyard {

std::string_view codeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kNotFound: return "NOT_FOUND";
    case Code::kAlreadyExists: return "ALREADY_EXISTS";
    case Code::kFailedPrecondition: return "FAILED_PRECONDITION";
    case Code::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case Code::kUnavailable: return "UNAVAILABLE";
    case Code::kAborted: return "ABORTED";
    case Code::kInternal: return "INTERNAL";
    case Code::kPermissionDenied: return "PERMISSION_DENIED";
    case Code::kUnauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

}  // namespace switchyard

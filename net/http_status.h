// The one mapping of the engine's error codes onto HTTP statuses, for every HTTP surface (the Redfish
// service, the operator endpoint). Redfish adds its message ids on top (redfish_protocol.cpp) and two
// exceptions its models ask for: a compose naming a missing resource block is 400 (the request body is
// wrong, not the URI), and a stale If-Match is 412.
#pragma once

#include <boost/beast/http/status.hpp>

#include "composer/model/error.h"

namespace switchyard::net {

[[nodiscard]] constexpr boost::beast::http::status httpStatusOf(Code code) {
  using boost::beast::http::status;
  switch (code) {
    case Code::kOk: return status::ok;
    case Code::kInvalidArgument: return status::bad_request;
    case Code::kNotFound: return status::not_found;
    case Code::kAlreadyExists:
    case Code::kFailedPrecondition: return status::conflict;
    case Code::kResourceExhausted: return status::bad_request;  // does not fit as asked: DMTF's NoResourceMatch
    case Code::kDeadlineExceeded: return status::gateway_timeout;  // a switch or host did not answer; the outcome is unknown
    case Code::kUnavailable:
    case Code::kAborted: return status::service_unavailable;
    case Code::kPermissionDenied: return status::forbidden;
    case Code::kUnauthenticated: return status::unauthorized;
    case Code::kInternal: return status::internal_server_error;
  }
  return status::internal_server_error;
}

}  // namespace switchyard::net

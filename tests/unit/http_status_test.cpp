// One mapping of error codes to HTTP statuses (net/http_status.h): Redfish answers every code with that
// status and its own message id, except its two cases (a missing block named by a compose, a stale ETag).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "net/http_status.h"
#include "bmc/redfish_protocol.h"

namespace switchyard::bmc {
namespace {

namespace http = boost::beast::http;
using redfish_protocol::engineError;

std::string messageId(const HttpResponse& res) { return nlohmann::json::parse(res.body())["error"]["code"].get<std::string>(); }

TEST(HttpStatus, RedfishAnswersEachCodeWithTheSharedStatus) {
  for (Code code : {Code::kInvalidArgument, Code::kNotFound, Code::kAlreadyExists, Code::kFailedPrecondition, Code::kResourceExhausted,
                    Code::kDeadlineExceeded, Code::kUnavailable, Code::kAborted, Code::kPermissionDenied, Code::kUnauthenticated,
                    Code::kInternal})
    EXPECT_EQ(engineError(Error{code, "x"}, false).result(), httpStatusOf(code)) << codeName(code);
  EXPECT_EQ(httpStatusOf(Code::kDeadlineExceeded), http::status::gateway_timeout) << "a switch that did not answer: the outcome is unknown";
  EXPECT_EQ(httpStatusOf(Code::kAlreadyExists), http::status::conflict);
}

TEST(HttpStatus, RedfishAddsItsMessageIdsAndItsTwoExceptions) {
  const auto timeout = engineError(Error{Code::kDeadlineExceeded, "the switch did not answer"}, false);
  EXPECT_EQ(messageId(timeout), "Base.1.22.OperationTimeout");
  const auto busy = engineError(Error{Code::kUnavailable, "starting"}, false);
  EXPECT_EQ(busy.result(), http::status::service_unavailable);
  EXPECT_EQ(busy[http::field::retry_after], "5");
  EXPECT_EQ(engineError(Error{Code::kNotFound, "no sys-1"}, false).result(), http::status::not_found);
  const auto missingBlock = engineError(Error{Code::kNotFound, "no block gpu9"}, true);
  EXPECT_EQ(missingBlock.result(), http::status::bad_request) << "the request body is wrong, not the URI";
  EXPECT_EQ(messageId(missingBlock), "Composition.1.1.ResourceBlockNotFound");
  const auto stale = engineError(redfish_protocol::staleTag("sys-1", "W/\"3\""), false);
  EXPECT_EQ(stale.result(), http::status::precondition_failed);
  EXPECT_EQ(messageId(stale), "Base.1.22.PreconditionFailed");
}

}  // namespace
}  // namespace switchyard::bmc

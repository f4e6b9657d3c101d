// The Redfish protocol pieces every handler of the service uses: responses with the headers Redfish
// asks for, error bodies with registry message ids, ETags, engine errors as HTTP, and the per-request
// state handlers share (RedfishService::Call).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bmc/redfish_service.h"
#include "bmc/http_vocabulary.h"

namespace switchyard::bmc {

inline constexpr const char* kBase = "Base.1.22.";
inline constexpr const char* kComposition = "Composition.1.1.";

struct RedfishService::Call {
  std::string method;
  std::string path;  // without query or trailing slash
  std::string query;
  const HttpRequest* request = nullptr;  // valid until the reply is sent
  Caller caller;
  Reply reply;
  OpenStream openStream;
  std::string peer;  // the client's address, without its port
  std::string allow;  // the Allow of the route it matched (the route table's)
};

namespace redfish_protocol {

namespace http = boost::beast::http;

// A response with OData-Version, Cache-Control and (when given) Allow; a JSON body unless null.
[[nodiscard]] HttpResponse respond(http::status status, const json& body, const std::string& allow = {});
[[nodiscard]] HttpResponse error(http::status status, const std::string& id, const std::string& message, const std::string& allow = {});
// What the HTTP server answers itself on a Redfish port (net::HttpServerOptions::errorResponse): a Redfish error.
[[nodiscard]] HttpResponse serverError(http::status status, const std::string& message);
// A weak ETag of a body: equal bodies, equal tags.
[[nodiscard]] std::string etagOf(const json& body);
// 200 with the body, its ETag and a Link to the JSON Schema that describes it, or 404 when the body is null.
[[nodiscard]] HttpResponse resource(const json& body, const std::string& allow);
// "<http://redfish.dmtf.org/schemas/v1/TYPE.json>; rel=describedby" for a body's @odata.type; "" without one.
[[nodiscard]] std::string describedBy(const json& body);
// A 200 whose ETag the client already has (If-None-Match: a list of tags, or "*") becomes 304 with no body.
bool notModified(HttpResponse& res, const std::string& ifNoneMatch);
// An engine error as a Redfish error; `composing` picks the Composition registry's words.
[[nodiscard]] HttpResponse engineError(const Error& e, bool composing);
// 202 Accepted with the operation as a Task and Location: its task monitor.
[[nodiscard]] HttpResponse accepted(const Operation& op);
// "/a/b/c" -> {"a", "b", "c"}
[[nodiscard]] std::vector<std::string> split(const std::string& path);

// An If-Match (or ComputerSystemETag) guard that no longer matches: answered 412, not as an engine error.
[[nodiscard]] Error staleTag(const std::string& id, const std::string& tag);
[[nodiscard]] bool isStaleTag(const Error& e);

}  // namespace redfish_protocol
}  // namespace switchyard::bmc

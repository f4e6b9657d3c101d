#include "bmc/redfish_protocol.h"

#include <fmt/format.h>

#include "net/http_status.h"

namespace switchyard::bmc::redfish_protocol {

namespace {
// The message every stale-tag error starts with, so it is recognised from one place.
constexpr std::string_view kStalePrefix = "stale ETag: ";
std::string etagOfText(const std::string& bytes) { return fmt::format("W/\"{:016x}\"", std::hash<std::string>{}(bytes)); }
}  // namespace

HttpResponse respond(http::status status, const json& body, const std::string& allow) {
  HttpResponse res{status, 11};
  res.set("OData-Version", "4.0");
  res.set(http::field::cache_control, "no-cache");
  if (!allow.empty()) res.set(http::field::allow, allow);
  if (!body.is_null()) {
    res.set(http::field::content_type, "application/json;charset=utf-8");
    res.body() = text(body);
  }
  return res;
}

HttpResponse error(http::status status, const std::string& id, const std::string& message, const std::string& allow) {
  return respond(status, errorBody(id, message), allow);
}

std::string etagOf(const json& body) { return etagOfText(text(body)); }

std::string describedBy(const json& body) {
  const auto type = body.find("@odata.type");
  if (type == body.end() || !type->is_string()) return "";
  // "#ComputerSystem.v1_20_0.ComputerSystem" is described by ComputerSystem.v1_20_0.json, the version the resource
  // claims; "#ComputerSystemCollection.ComputerSystemCollection" by the unversioned ComputerSystemCollection.json.
  std::string name = type->get<std::string>();
  if (name.starts_with('#')) name.erase(0, 1);
  const auto dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0) return "";
  name.resize(dot);
  return fmt::format("<http://redfish.dmtf.org/schemas/v1/{}.json>; rel=describedby", name);
}

HttpResponse resource(const json& body, const std::string& allow) {
  if (body.is_null()) return error(http::status::not_found, std::string(kBase) + "ResourceNotFound", "no such resource");
  HttpResponse res = respond(http::status::ok, body, allow);  // serialized once: the ETag is the hash of these bytes
  res.set(http::field::etag, etagOfText(res.body()));
  if (auto link = describedBy(body); !link.empty()) res.set(http::field::link, link);
  return res;
}

bool notModified(HttpResponse& res, const std::string& ifNoneMatchHeader) {
  const std::string_view ifNoneMatch = ifNoneMatchHeader;
  if (ifNoneMatch.empty() || res.result() != http::status::ok) return false;
  const std::string tag(res[http::field::etag]);
  if (tag.empty()) return false;
  // A list of entity tags (RFC 9110 13.1.2) or "*"; weak comparison, as for GET.
  const auto weak = [](std::string_view t) { return t.starts_with("W/") ? t.substr(2) : t; };
  bool match = false;
  std::size_t start = 0;
  while (start <= ifNoneMatch.size() && !match) {
    auto comma = ifNoneMatch.find(',', start);
    std::string_view one = ifNoneMatch.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    match = one == "*" || weak(one) == weak(tag);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (!match) return false;
  res.result(http::status::not_modified);
  res.body().clear();
  res.erase(http::field::content_type);
  return true;
}

// The status is the one every HTTP surface gives the code (http_status.h); Redfish adds the message id.
HttpResponse engineError(const Error& e, bool composing) {
  if (isStaleTag(e)) return error(http::status::precondition_failed, std::string(kBase) + "PreconditionFailed", e.message);
  if (composing && e.code == Code::kNotFound)  // the request body names a resource block that is not there
    return error(http::status::bad_request, std::string(kComposition) + "ResourceBlockNotFound", e.message);
  std::string messageId = std::string(kBase) + "InternalError";
  switch (e.code) {
    case Code::kInvalidArgument: messageId = std::string(kBase) + "PropertyValueError"; break;
    case Code::kNotFound: messageId = std::string(kBase) + "ResourceNotFound"; break;
    case Code::kAlreadyExists: messageId = std::string(kBase) + "ResourceAlreadyExists"; break;
    case Code::kFailedPrecondition: messageId = composing ? std::string(kComposition) + "ResourceBlockInUse" : std::string(kBase) + "ResourceInUse"; break;
    case Code::kResourceExhausted: messageId = std::string(kComposition) + "NoResourceMatch"; break;
    case Code::kDeadlineExceeded: messageId = std::string(kBase) + "OperationTimeout"; break;
    case Code::kUnavailable:
    case Code::kAborted: messageId = std::string(kBase) + "ServiceTemporarilyUnavailable"; break;
    case Code::kPermissionDenied: messageId = std::string(kBase) + "InsufficientPrivilege"; break;
    case Code::kUnauthenticated: messageId = std::string(kBase) + "NoValidSession"; break;
    case Code::kOk:
    case Code::kInternal: break;
  }
  HttpResponse res = error(httpStatusOf(e.code), messageId, e.message);
  if (res.result() == http::status::service_unavailable) res.set(http::field::retry_after, "5");
  return res;
}

HttpResponse accepted(const Operation& op) {
  HttpResponse res = respond(http::status::accepted, task(op));
  res.set(http::field::location, taskMonitorUri(op.id));
  return res;
}

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 1;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

Error staleTag(const std::string& id, const std::string& tag) {
  return Error{Code::kAborted, fmt::format("{}{} changed since ETag {}", kStalePrefix, id, tag)};
}

bool isStaleTag(const Error& e) { return e.code == Code::kAborted && std::string_view(e.message).starts_with(kStalePrefix); }

HttpResponse serverError(http::status status, const std::string& message) {
  return error(status, std::string(kBase) + (status == http::status::payload_too_large ? "PayloadTooLarge" : "GeneralError"), message);
}

}  // namespace switchyard::bmc::redfish_protocol

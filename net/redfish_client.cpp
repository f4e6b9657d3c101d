#include "net/redfish_client.h"

#include <fmt/format.h>

#include <mutex>

#include "composer/model/base64.h"

namespace switchyard::redfish {

Result<Endpoint> parseUrl(const std::string& url) {
  Endpoint e;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    e.tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return fail(Code::kInvalidArgument, fmt::format("{}: expected http(s)://HOST[:PORT]", url));
  }
  if (auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const auto colon = rest.rfind(':');
  e.host = colon == std::string::npos ? rest : rest.substr(0, colon);
  e.port = colon == std::string::npos ? (e.tls ? "443" : "80") : rest.substr(colon + 1);
  if (e.host.empty() || e.port.empty() || e.port.find_first_not_of("0123456789") != std::string::npos)
    return fail(Code::kInvalidArgument, fmt::format("{}: expected http(s)://HOST[:PORT]", url));
  return e;
}

namespace {

Code codeForStatus(int status) {
  switch (status) {
    case 400: return Code::kInvalidArgument;
    case 404: return Code::kNotFound;
    case 409: return Code::kFailedPrecondition;
    case 412: return Code::kFailedPrecondition;  // the resource changed since it was read: nothing was applied
    case 401:
    case 403: return Code::kFailedPrecondition;
    default: return status >= 500 ? Code::kUnavailable : Code::kInternal;
  }
}

// The message of a Redfish error body, or the status line.
std::string errorText(const nlohmann::json& body, int status) {
  if (body.is_object() && body.contains("error") && body["error"].is_object()) {
    const auto& e = body["error"];
    if (e.contains("@Message.ExtendedInfo") && e["@Message.ExtendedInfo"].is_array() && !e["@Message.ExtendedInfo"].empty() &&
        e["@Message.ExtendedInfo"][0].is_object() && e["@Message.ExtendedInfo"][0].contains("Message") &&
        e["@Message.ExtendedInfo"][0]["Message"].is_string())
      return e["@Message.ExtendedInfo"][0]["Message"].get<std::string>();
    if (e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
  }
  return fmt::format("HTTP {}", status);
}

}  // namespace

struct Client::Credentials {
  std::mutex mutex;
  std::string user;
  std::string password;
  std::string token;
};

Client::Client(Endpoint endpoint, ClientOptions options)
    : endpoint_(endpoint),
      credentials_(std::make_unique<Credentials>()),
      http_(net::HttpTarget{.host = endpoint.host, .port = endpoint.port, .tls = endpoint.tls, .caFile = endpoint.caFile},
            net::HttpClientOptions{.maxConnections = options.maxConnections}) {
  credentials_->user = std::move(endpoint.user);
  credentials_->password = std::move(endpoint.password);
  credentials_->token = std::move(endpoint.token);
  endpoint_.user.clear();
  endpoint_.password.clear();
  endpoint_.token.clear();
}

Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

void Client::useToken(std::string token) {
  std::lock_guard lock(credentials_->mutex);
  credentials_->token = std::move(token);
}

Result<Response> Client::get(const std::string& path, Deadline deadline) const {
  return std::move(sendAll({Request{"GET", path, std::nullopt, {}}}, deadline).front());
}
Result<Response> Client::post(const std::string& path, const nlohmann::json& body, Deadline deadline) const {
  return std::move(sendAll({Request{"POST", path, body, {}}}, deadline).front());
}
Result<Response> Client::patch(const std::string& path, const nlohmann::json& body, const std::string& ifMatch, Deadline deadline) const {
  return std::move(sendAll({Request{"PATCH", path, body, ifMatch}}, deadline).front());
}
Result<Response> Client::del(const std::string& path, const std::string& ifMatch, Deadline deadline) const {
  return std::move(sendAll({Request{"DELETE", path, std::nullopt, ifMatch}}, deadline).front());
}

Result<std::vector<Response>> Client::getAll(const std::vector<std::string>& paths, Deadline deadline) const {
  std::vector<Request> requests;
  requests.reserve(paths.size());
  for (const auto& p : paths) requests.push_back({"GET", p, std::nullopt, {}});
  std::vector<Response> out;
  out.reserve(paths.size());
  for (auto& r : sendAll(requests, deadline)) {
    if (!r) return fail(r.error());
    out.push_back(std::move(*r));
  }
  return out;
}

Result<Response> Client::accepted(Response response, const Request& request) {
  if (response.status / 100 == 2) return response;
  return fail(codeForStatus(response.status),
              fmt::format("{} {}: {} (HTTP {})", request.method, request.path, errorText(response.body, response.status), response.status));
}

std::vector<Result<Response>> Client::sendAll(const std::vector<Request>& requests, Deadline deadline) const {
  auto results = exchangeAll(requests, deadline);
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i]) results[i] = accepted(std::move(*results[i]), requests[i]);
  return results;
}

Result<Response> Client::response(const Request& request, net::HttpOutcome outcome) const {
  const std::string what = fmt::format("{} {}", request.method, request.path);
  if (!outcome) {
    const net::HttpFailure& f = outcome.error();
    switch (f.kind) {
      case net::HttpFailure::Kind::kSetup:
        return fail(Code::kInvalidArgument, fmt::format("TLS trust for {}: {}", endpoint_.host, f.detail));
      case net::HttpFailure::Kind::kTimedOut:
        return fail(Code::kDeadlineExceeded, fmt::format("{}: the Redfish service did not answer in time", what));
      case net::HttpFailure::Kind::kTls:
        return fail(Code::kUnavailable, fmt::format("{}: TLS with {}:{} failed ({}); is its certificate trusted (--redfish-ca)?", what,
                                                    endpoint_.host, endpoint_.port, f.detail));
      case net::HttpFailure::Kind::kUnreachable:
        if (f.detail == "no connection before the deadline")
          return fail(Code::kDeadlineExceeded, fmt::format("{}: the Redfish service at {}:{} did not accept a connection in time", what,
                                                           endpoint_.host, endpoint_.port));
        [[fallthrough]];
      case net::HttpFailure::Kind::kLost:
        return fail(Code::kUnavailable,
                    fmt::format("{}: cannot reach the Redfish service at {}:{}: {}", what, endpoint_.host, endpoint_.port, f.detail));
    }
  }
  Response out;
  out.status = outcome->status;
  if (!outcome->body.empty()) {
    out.body = nlohmann::json::parse(outcome->body, nullptr, false);
    if (out.body.is_discarded()) {
      if (out.status / 100 == 2) return fail(Code::kInternal, fmt::format("{}: the Redfish service answered malformed JSON", what));
      out.body = nullptr;
    }
  }
  out.etag = outcome->header("ETag");
  out.location = outcome->header("Location");
  out.authToken = outcome->header("X-Auth-Token");
  return out;
}

std::vector<Result<Response>> Client::exchangeAll(const std::vector<Request>& requests, Deadline deadline) const {
  std::string token;
  std::string authorization;
  {
    std::lock_guard lock(credentials_->mutex);
    token = credentials_->token;
    if (token.empty() && !credentials_->user.empty())
      authorization = "Basic " + encodeBase64(credentials_->user + ":" + credentials_->password);
  }
  std::vector<net::HttpCall> calls;
  calls.reserve(requests.size());
  for (const Request& r : requests) {
    net::HttpCall call{.method = r.method, .target = r.path};
    call.headers = {{"Accept", "application/json"}, {"OData-Version", "4.0"}};
    if (!token.empty())
      call.headers.emplace_back("X-Auth-Token", token);
    else if (!authorization.empty())
      call.headers.emplace_back("Authorization", authorization);
    if (!r.ifMatch.empty()) call.headers.emplace_back("If-Match", r.ifMatch);
    if (r.body) {
      call.headers.emplace_back("Content-Type", "application/json");
      call.body = r.body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    call.mayResend = r.method != "POST";  // a POST's outcome is unknown once sent: never twice
    calls.push_back(std::move(call));
  }
  auto outcomes = http_.exchangeAll(std::move(calls), deadline);
  std::vector<Result<Response>> results;
  results.reserve(outcomes.size());
  for (std::size_t i = 0; i < outcomes.size(); ++i) results.push_back(response(requests[i], std::move(outcomes[i])));
  return results;
}

}  // namespace switchyard::redfish

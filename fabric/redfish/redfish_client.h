// A small HTTP/1.1 client for Redfish services (Boost.Beast): one request per connection, Basic auth,
// JSON bodies, and a deadline on every request (connect, write and read together). Statuses and
// transport failures become Error codes the fabric driver contract knows.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "composer/model/error.h"

namespace switchyard::redfish {

using Deadline = std::chrono::steady_clock::time_point;

struct Endpoint {
  std::string host = "127.0.0.1";
  std::string port = "80";
  std::string user;
  std::string password;
  bool tls = false;     // https: the server's certificate chain and name are verified
  std::string caFile;   // trust this CA (PEM) instead of the system's store, e.g. a manager's self-signed certificate
  std::string token;    // a Redfish session's X-Auth-Token: sent instead of Basic credentials when set
};

// Parses "http://host[:port]" or "https://host[:port]".
[[nodiscard]] Result<Endpoint> parseUrl(const std::string& url);

struct Response {
  int status = 0;
  nlohmann::json body;  // null when empty
  std::string etag;
  std::string location;
  std::string authToken;  // X-Auth-Token (a session's creation)
};

class Client {
 public:
  explicit Client(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}
  // From now on, authenticate with this session token instead of Basic credentials.
  void useToken(std::string token) { endpoint_.token = std::move(token); }

  // Any 2xx is the response; other statuses are errors (404 kNotFound, 400 kInvalidArgument,
  // 409 and 412 (the ETag moved) kFailedPrecondition, 401/403 kFailedPrecondition, 5xx kUnavailable),
  // with the Redfish error message when the body has one. A deadline that passes is kDeadlineExceeded.
  [[nodiscard]] Result<Response> get(const std::string& path, Deadline deadline) const;
  [[nodiscard]] Result<Response> post(const std::string& path, const nlohmann::json& body, Deadline deadline) const;
  [[nodiscard]] Result<Response> patch(const std::string& path, const nlohmann::json& body, const std::string& ifMatch, Deadline deadline) const;
  [[nodiscard]] Result<Response> del(const std::string& path, const std::string& ifMatch, Deadline deadline) const;

 private:
  [[nodiscard]] Result<Response> send(const std::string& method, const std::string& path, const std::optional<nlohmann::json>& body,
                                      const std::string& ifMatch, Deadline deadline) const;
  Endpoint endpoint_;
};

}  // namespace switchyard::redfish

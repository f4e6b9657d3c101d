// A client for Redfish services, shared by the Redfish fabric driver (fabric/redfish) and the hosts' BMCs
// (bmc/host_bmc.h): Basic auth or a session token, JSON bodies, Redfish's headers, and its statuses and error
// bodies onto the Error codes the fabric driver contract knows. On the one HTTP client (net/http_client.h):
// keep-alive connections in a pool, a deadline on every request (connect, write and read together), I/O on
// the shared "http-client" thread; a call blocks only its caller, so calls from several threads run at once.
// sendAll sends a batch at once and waits for all of it: what reading many resources costs one round trip
// instead of one each.
//
// A request on a pooled connection the service had closed is sent again once on a new one, except a POST
// (which could have been applied: its outcome is unknown), which always goes on a new connection instead.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "composer/model/error.h"
#include "net/http_client.h"

namespace switchyard::redfish {

using Deadline = net::Deadline;

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

struct Request {
  std::string method = "GET";
  std::string path;
  std::optional<nlohmann::json> body;
  std::string ifMatch;
};

struct ClientOptions {
  std::size_t maxConnections = 32;  // open at once; further requests wait for one to come free
};

class Client {
 public:
  explicit Client(Endpoint endpoint, ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  // From now on, authenticate with this session token instead of Basic credentials.
  void useToken(std::string token);

  // Any 2xx is the response; other statuses are errors (404 kNotFound, 400 kInvalidArgument,
  // 409 and 412 (the ETag moved) kFailedPrecondition, 401/403 kFailedPrecondition, 5xx kUnavailable),
  // with the Redfish error message when the body has one. A deadline that passes is kDeadlineExceeded.
  [[nodiscard]] Result<Response> get(const std::string& path, Deadline deadline) const;
  [[nodiscard]] Result<Response> post(const std::string& path, const nlohmann::json& body, Deadline deadline) const;
  [[nodiscard]] Result<Response> patch(const std::string& path, const nlohmann::json& body, const std::string& ifMatch, Deadline deadline) const;
  [[nodiscard]] Result<Response> del(const std::string& path, const std::string& ifMatch, Deadline deadline) const;
  // Sends every request at once (up to maxConnections in flight) and returns their answers in order.
  [[nodiscard]] std::vector<Result<Response>> sendAll(const std::vector<Request>& requests, Deadline deadline) const;
  // As sendAll, but any HTTP answer is a Response, whatever its status (see accepted()): only a request
  // that got no answer is an error.
  [[nodiscard]] std::vector<Result<Response>> exchangeAll(const std::vector<Request>& requests, Deadline deadline) const;
  // A 2xx answer as it is; any other status as the error get() and the others would return.
  [[nodiscard]] static Result<Response> accepted(Response response, const Request& request);
  // GETs of every path at once: their bodies in order, or the first failure.
  [[nodiscard]] Result<std::vector<Response>> getAll(const std::vector<std::string>& paths, Deadline deadline) const;

  // TCP connections opened so far (what keep-alive saves is measured by it).
  [[nodiscard]] std::uint64_t connectionsOpened() const { return http_.connectionsOpened(); }

 private:
  struct Credentials;  // the user, password and session token (guarded: useToken may come from any thread)
  [[nodiscard]] Result<Response> response(const Request& request, net::HttpOutcome outcome) const;
  Endpoint endpoint_;  // host, port and TLS settings (its credentials live in credentials_)
  std::unique_ptr<Credentials> credentials_;
  net::HttpClient http_;
};

}  // namespace switchyard::redfish

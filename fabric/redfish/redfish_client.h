// An HTTP/1.1 client for Redfish services (Boost.Beast): keep-alive connections kept in a pool and reused,
// Basic auth or a session token, JSON bodies, and a deadline on every request (connect, write and read
// together). Statuses and transport failures become Error codes the fabric driver contract knows.
//
// Threads: every client in the process runs its I/O on one shared thread ("redfish-io"); a call blocks its
// caller until its answer (or deadline) and never holds a lock while it waits, so calls from several threads
// run at once, each on its own connection. sendAll sends a batch at once and waits for all of it: what
// reading many resources costs one round trip instead of one each.
//
// A connection the service closed while it sat in the pool fails on its next use before any byte of an
// answer came back; such a request is sent again once on a new connection, except a POST (which could have
// been applied: its outcome is unknown), which always goes on a new connection instead.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

struct Request {
  std::string method = "GET";
  std::string path;
  std::optional<nlohmann::json> body;
  std::string ifMatch;
};

struct ClientOptions {
  std::size_t maxConnections = 32;  // open at once; further requests wait for one to come free
};

namespace detail {
struct ClientPool;  // the connections and I/O of one client (redfish_client.cpp)
}

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
  [[nodiscard]] std::uint64_t connectionsOpened() const;

 private:
  std::shared_ptr<detail::ClientPool> pool_;
};

}  // namespace switchyard::redfish

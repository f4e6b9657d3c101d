// The one HTTP/1.1 client (Boost.Beast) yardd's clients are built on: the Redfish client (the fabric driver, the
// hosts' BMCs) and the etcd client. Keep-alive connections kept in a pool and reused, TLS 1.2 or later with the
// server's chain and name verified (and a client certificate where the server asks for one), and a deadline on
// every request (connect, write and read together). It speaks bytes: each client above it adds its format
// (JSON), its credentials and its mapping of statuses and failures onto error codes.
//
// Threads: every client in the process runs its I/O on one shared thread ("http-client"); a call blocks its
// caller until its answer (or deadline) and never holds a lock while it waits, so calls from several threads
// run at once, each on its own connection. exchangeAll sends a batch at once and waits for all of it.
//
// A connection the server closed while it sat in the pool fails on its next use before any byte of an answer
// came back; such a request is sent again once on a new connection when the call allows it (mayResend), and
// otherwise goes on a new connection from the start (a POST that cannot be repeated safely).
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchyard::net {

using Deadline = std::chrono::steady_clock::time_point;

// Where a client connects, and how it proves itself over TLS.
struct HttpTarget {
  std::string host = "127.0.0.1";
  std::string port = "80";
  bool tls = false;      // https: the server's certificate chain and name are verified
  std::string caFile;    // trust this CA (PEM) instead of the system's store
  std::string certFile;  // present this client certificate (PEM) when the server asks (mutual TLS)
  std::string keyFile;   // its private key (PEM)
};

struct HttpClientOptions {
  std::size_t maxConnections = 32;      // open at once; further requests wait for one to come free
  std::uint64_t bodyLimit = 256ull << 20;  // a larger answer fails (kLost); an expanded collection of a large fabric is big
};

struct HttpCall {
  std::string method = "GET";
  std::string target;                                        // path and query
  std::vector<std::pair<std::string, std::string>> headers;  // besides Host, User-Agent and Content-Length
  std::string body;
  // Whether the request may be sent a second time when a pooled connection turns out closed before any answer
  // came back. Default: everything but a POST. A call that may not goes on a new connection from the start.
  bool mayResend = true;
  // Read the answer's body as it arrives: called with the body so far after each read; returning true ends the
  // call with the answer as it stands (the connection is closed, not pooled). A deadline that passes first
  // ends it too: kTimedOut. For streams that never end by themselves (etcd's watch).
  std::function<bool(std::string_view bodySoFar)> enough;
};

struct HttpAnswer {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // The first value of a header (case-insensitive name), or empty.
  [[nodiscard]] std::string header(std::string_view name) const;
};

struct HttpFailure {
  enum class Kind {
    kSetup,        // this client's TLS files cannot be used (CA, certificate, key): nothing was sent
    kUnreachable,  // no connection (the name, refused, unreachable): nothing was sent, another server may take it
    kTls,          // the TLS handshake failed or the server sent an alert (trust, a client certificate it wants)
    kTimedOut,     // no whole answer by the deadline: the request may or may not have been applied
    kLost,         // the connection failed once the request was on its way: it may or may not have been applied
  };
  Kind kind = Kind::kLost;
  std::string detail;  // what the transport said ("Connection refused"), or why the setup is unusable
};

using HttpOutcome = std::expected<HttpAnswer, HttpFailure>;

namespace detail {
struct HttpPool;  // the connections and I/O of one client (http_client.cpp)
}

class HttpClient {
 public:
  explicit HttpClient(HttpTarget target, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(HttpClient&&) noexcept;
  HttpClient& operator=(HttpClient&&) noexcept;

  // Any HTTP answer, whatever its status, is an answer; a failure means none came.
  [[nodiscard]] HttpOutcome exchange(HttpCall call, Deadline deadline) const;
  // Sends every call at once (up to maxConnections in flight) and returns their outcomes in order.
  [[nodiscard]] std::vector<HttpOutcome> exchangeAll(std::vector<HttpCall> calls, Deadline deadline) const;

  [[nodiscard]] const HttpTarget& target() const;
  // TCP connections opened so far (what keep-alive saves is measured by it).
  [[nodiscard]] std::uint64_t connectionsOpened() const;

 private:
  std::shared_ptr<detail::HttpPool> pool_;
};

}  // namespace switchyard::net

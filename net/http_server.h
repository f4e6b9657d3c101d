// A small HTTP/1.1 server on Boost.Beast for every HTTP surface of yardd (the Redfish service, the metrics and
// dashboard endpoint) and the test emulators: one io_context with a few threads, keep-alive, a body limit and an
// idle timeout per connection. Handlers answer through a callback, so they can wait for the engine without
// holding a thread. What it answers itself (a body too large, a request that is not HTTP) is in the service's
// error format (HttpServerOptions::errorResponse).
//
// Nothing a client sends stops the server: a handler that throws answers that one request 500 (logged with its
// method and target), a throw anywhere else on its threads is logged and the thread goes on serving, failed
// accepts (no descriptors left) back off and are logged at a bounded rate, and connections are capped.
#pragma once

#include <cstdint>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/beast/http.hpp>

#include "net/tls_certificate.h"
#include "composer/model/error.h"

namespace switchyard::net {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// Answer once; may be called from any thread.
using Reply = std::function<void(HttpResponse)>;

// A response that stays open (server-sent events): its head goes out at once, then every send() writes
// more bytes, in order. The connection ends when close() is called or the client goes away; either way
// the onClosed callback runs once.
class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  virtual void send(std::string bytes) = 0;  // thread-safe; never blocks
  virtual void close() = 0;
  virtual void onClosed(std::function<void()> callback) = 0;
};
// Instead of replying: sends `head` (a complete HTTP response head, no body length) and returns the writer.
using OpenStream = std::function<std::shared_ptr<StreamWriter>(std::string head)>;
// `peer`: the client's address, without its port (what a lockout of password guessing counts by).
using Handler = std::function<void(const HttpRequest&, Reply, OpenStream, const std::string& peer)>;

// A response the server gives itself, in the service's error format.
using ErrorResponse = std::function<HttpResponse(boost::beast::http::status status, const std::string& message)>;

struct HttpServerOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0 picks a free one
  int threads = 2;
  std::size_t bodyLimit = 1 << 20;   // larger bodies get 413
  std::chrono::seconds idleTimeout{30};  // a connection that sends nothing for this long is closed
  std::optional<CertificateFiles> tls;   // HTTPS with this certificate; none: plain HTTP
  std::string name = "--listen";         // what set `listen`, for errors and logs ("--redfish-listen")
  ErrorResponse errorResponse;           // none: the message as plain text
  // Open connections at most (event streams included); one more is answered 503 (plain HTTP) or closed (TLS)
  // at once, so that a client that opens connections without end cannot use up the process' descriptors.
  std::size_t maxConnections = 512;
};

class HttpServer {
 public:
  [[nodiscard]] static Result<std::unique_ptr<HttpServer>> start(HttpServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // Stops accepting and closes connections; in-flight replies are dropped.
  void stop();
  // Connections open now, and those refused at the cap since start (for tests and logs).
  [[nodiscard]] std::size_t connections() const;
  [[nodiscard]] std::uint64_t refusedConnections() const;

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace switchyard::net

#include "fabric/redfish/redfish_client.h"

#include <fmt/format.h>
#include <pthread.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "composer/model/base64.h"

namespace switchyard::redfish {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

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

// The one I/O thread of every Redfish client in the process. It lives as long as the process: a client
// may be destroyed from one of its own completions, which a joining owner could not survive.
asio::io_context& ioContext() {
  struct IoThread {
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread{[this] { io.run(); }};
    IoThread() { pthread_setname_np(thread.native_handle(), "redfish-io"); }
  };
  static IoThread* const thread = new IoThread;  // never destroyed (see above)
  return thread->io;
}

constexpr auto kIdleLimit = std::chrono::seconds(20);  // a pooled connection older than this is closed, not reused
constexpr std::uint64_t kBodyLimit = 256ull << 20;     // an expanded collection of a large fabric is big

struct Connection {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> secure;
  Clock::time_point idleSince;
  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
  template <typename F>
  void withStream(F&& f) {
    if (secure)
      f(*secure);
    else
      f(*plain);
  }
};

}  // namespace

namespace detail {

struct ClientPool {
  ClientPool(Endpoint e, ClientOptions o) : endpoint(std::move(e)), options(o), io(ioContext()) {
    if (!endpoint.tls) return;
    tls.emplace(asio::ssl::context::tls_client);
    beast::error_code ec;
    if (endpoint.caFile.empty())
      tls->set_default_verify_paths(ec);
    else
      tls->load_verify_file(endpoint.caFile, ec);
    if (ec) tlsError = fmt::format("TLS trust for {}: {}", endpoint.host, ec.message());
    tls->set_verify_mode(asio::ssl::verify_peer);
  }

  Endpoint endpoint;  // the token in it is guarded by tokenMutex
  ClientOptions options;
  asio::io_context& io;
  std::optional<asio::ssl::context> tls;
  std::string tlsError;
  std::mutex tokenMutex;
  std::atomic<std::uint64_t> opened{0};
  // The I/O thread's alone:
  std::vector<std::unique_ptr<Connection>> idle;
  std::size_t busy = 0;  // connections checked out or being opened
  std::deque<std::function<void()>> waiting;  // exchanges waiting for a connection

  std::string authorization() {
    std::lock_guard lock(tokenMutex);
    if (!endpoint.token.empty()) return {};
    if (endpoint.user.empty()) return {};
    return "Basic " + encodeBase64(endpoint.user + ":" + endpoint.password);
  }
  std::string token() {
    std::lock_guard lock(tokenMutex);
    return endpoint.token;
  }
  // A connection came back or closed: the next waiting exchange may go.
  void release() {
    --busy;
    if (waiting.empty()) return;
    auto next = std::move(waiting.front());
    waiting.pop_front();
    next();
  }
};

}  // namespace detail

namespace {

// One request and its answer, on the I/O thread from start to finish.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  using Done = std::function<void(Result<Response>)>;
  Exchange(std::shared_ptr<detail::ClientPool> pool, http::request<http::string_body> req, Deadline deadline, Done done)
      : pool_(std::move(pool)), req_(std::move(req)), deadline_(deadline), done_(std::move(done)), resolver_(pool_->io) {}

  void start() {
    if (pool_->busy >= pool_->options.maxConnections) {
      pool_->waiting.push_back([self = shared_from_this()] { self->start(); });
      return;
    }
    ++pool_->busy;
    // A POST goes on a new connection: were a pooled one found closed after it was sent, it could not be sent again.
    if (req_.method() != http::verb::post) {
      auto& idle = pool_->idle;
      while (!idle.empty()) {
        auto candidate = std::move(idle.back());
        idle.pop_back();
        if (Clock::now() - candidate->idleSince > kIdleLimit) continue;  // closed here, not reused
        connection_ = std::move(candidate);
        reused_ = true;
        return send();
      }
    }
    connect();
  }

 private:
  std::string what() const { return fmt::format("{} {}", std::string(req_.method_string()), std::string(req_.target())); }

  void connect() {
    reused_ = false;
    connection_ = std::make_unique<Connection>();
    if (pool_->tls) {
      connection_->secure = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(pool_->io, *pool_->tls);
      connection_->secure->set_verify_callback(asio::ssl::host_name_verification(pool_->endpoint.host));
      SSL_set_tlsext_host_name(connection_->secure->native_handle(), pool_->endpoint.host.c_str());
    } else {
      connection_->plain = std::make_unique<beast::tcp_stream>(pool_->io);
    }
    ++pool_->opened;
    resolver_.async_resolve(pool_->endpoint.host, pool_->endpoint.port,
                            [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
                              if (ec) return self->finish(ec);
                              self->connection_->lowest().expires_at(self->deadline_);
                              self->connection_->lowest().async_connect(results, [self](beast::error_code ec2, const tcp::endpoint&) {
                                if (ec2) return self->finish(ec2);
                                if (!self->connection_->secure) return self->send();
                                self->connection_->lowest().expires_at(self->deadline_);
                                self->connection_->secure->async_handshake(asio::ssl::stream_base::client, [self](beast::error_code ec3) {
                                  if (ec3) return self->finish(ec3);
                                  self->send();
                                });
                              });
                            });
  }

  void send() {
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    buffer_.clear();
    connection_->lowest().expires_at(deadline_);
    connection_->withStream([&](auto& stream) {
      http::async_write(stream, req_, [self = shared_from_this(), &stream](beast::error_code ec, std::size_t) {
        if (ec) return self->finish(ec);
        self->connection_->lowest().expires_at(self->deadline_);
        http::async_read(stream, self->buffer_, *self->parser_, [self](beast::error_code ec2, std::size_t) { self->finish(ec2); });
      });
    });
  }

  void finish(beast::error_code ec) {
    if (ec && reused_ && !retried_ && ec != beast::error::timeout && !(parser_ && parser_->got_some())) {
      retried_ = true;  // the service closed this pooled connection: once more on a new one
      return connect();
    }
    Result<Response> result = ec ? fail(failure(ec)) : response();
    auto& pool = *pool_;
    if (!ec && connection_ && parser_->get().keep_alive() && buffer_.size() == 0) {
      connection_->lowest().expires_never();
      connection_->idleSince = Clock::now();
      pool.idle.push_back(std::move(connection_));
    } else if (connection_) {
      beast::error_code ignored;
      connection_->lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
      connection_.reset();
    }
    auto done = std::move(done_);
    pool.release();
    done(std::move(result));
  }

  Error failure(beast::error_code ec) const {
    if (ec == beast::error::timeout) return Error{Code::kDeadlineExceeded, fmt::format("{}: the Redfish service did not answer in time", what())};
    const auto& e = pool_->endpoint;
    if (ec.category() == asio::error::get_ssl_category())
      return Error{Code::kUnavailable, fmt::format("{}: TLS with {}:{} failed ({}); is its certificate trusted (--redfish-ca)?", what(), e.host,
                                                   e.port, ec.message())};
    return Error{Code::kUnavailable, fmt::format("{}: cannot reach the Redfish service at {}:{}: {}", what(), e.host, e.port, ec.message())};
  }

  Result<Response> response() const {
    const auto& res = parser_->get();
    Response out;
    out.status = static_cast<int>(res.result_int());
    if (!res.body().empty()) {
      out.body = nlohmann::json::parse(res.body(), nullptr, false);
      if (out.body.is_discarded()) {
        if (out.status / 100 == 2) return fail(Code::kInternal, fmt::format("{}: the Redfish service answered malformed JSON", what()));
        out.body = nullptr;
      }
    }
    if (auto it = res.find(http::field::etag); it != res.end()) out.etag = std::string(it->value());
    if (auto it = res.find(http::field::location); it != res.end()) out.location = std::string(it->value());
    if (auto it = res.find("X-Auth-Token"); it != res.end()) out.authToken = std::string(it->value());
    return out;
  }

  std::shared_ptr<detail::ClientPool> pool_;
  http::request<http::string_body> req_;
  Deadline deadline_;
  Done done_;
  tcp::resolver resolver_;
  std::unique_ptr<Connection> connection_;
  bool reused_ = false;
  bool retried_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
};

}  // namespace

Client::Client(Endpoint endpoint, ClientOptions options) : pool_(std::make_shared<detail::ClientPool>(std::move(endpoint), options)) {}

namespace {

// The pool's connections are closed on the I/O thread, the only one that touches them.
void retire(std::shared_ptr<detail::ClientPool> pool) {
  if (!pool) return;
  asio::io_context& io = pool->io;
  asio::post(io, [pool = std::move(pool)] {});
}

}  // namespace

Client::~Client() { retire(std::move(pool_)); }

Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    retire(std::move(pool_));
    pool_ = std::move(other.pool_);
  }
  return *this;
}

void Client::useToken(std::string token) {
  std::lock_guard lock(pool_->tokenMutex);
  pool_->endpoint.token = std::move(token);
}

std::uint64_t Client::connectionsOpened() const { return pool_->opened.load(); }

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

std::vector<Result<Response>> Client::exchangeAll(const std::vector<Request>& requests, Deadline deadline) const {
  struct Batch {
    std::mutex mutex;
    std::condition_variable done;
    std::vector<Result<Response>> results;
    std::size_t left = 0;
  };
  auto batch = std::make_shared<Batch>();
  batch->results.assign(requests.size(), fail(Code::kInternal, "not sent"));
  if (Clock::now() >= deadline) {
    for (std::size_t i = 0; i < requests.size(); ++i)
      batch->results[i] = fail(Code::kDeadlineExceeded,
                               fmt::format("{} {}: no time left before the call's deadline", requests[i].method, requests[i].path));
    return std::move(batch->results);
  }
  if (!pool_->tlsError.empty()) {
    for (auto& r : batch->results) r = fail(Code::kInvalidArgument, pool_->tlsError);
    return std::move(batch->results);
  }
  const std::string authorization = pool_->authorization();
  const std::string token = pool_->token();
  batch->left = requests.size();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    http::request<http::string_body> req{http::string_to_verb(r.method), r.path, 11};
    req.set(http::field::host, pool_->endpoint.host);
    req.set(http::field::user_agent, "switchyard");
    req.set(http::field::accept, "application/json");
    req.set("OData-Version", "4.0");
    req.keep_alive(true);
    if (!token.empty()) req.set("X-Auth-Token", token);
    else if (!authorization.empty()) req.set(http::field::authorization, authorization);
    if (!r.ifMatch.empty()) req.set(http::field::if_match, r.ifMatch);
    if (r.body) {
      req.set(http::field::content_type, "application/json");
      req.body() = r.body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    req.prepare_payload();
    auto exchange = std::make_shared<Exchange>(pool_, std::move(req), deadline, [batch, i](Result<Response> result) {
      std::lock_guard lock(batch->mutex);
      batch->results[i] = std::move(result);
      if (--batch->left == 0) batch->done.notify_all();
    });
    asio::post(pool_->io, [exchange] { exchange->start(); });
  }
  std::unique_lock lock(batch->mutex);
  batch->done.wait(lock, [&] { return batch->left == 0; });
  return std::move(batch->results);
}

}  // namespace switchyard::redfish

#include "net/http_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <pthread.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <strings.h>
#include <thread>

#include "composer/model/contain.h"

namespace switchyard::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

std::string HttpAnswer::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (key.size() == name.size() && strncasecmp(key.data(), name.data(), name.size()) == 0) return value;
  return {};
}

namespace {

// The one I/O thread of every HTTP client in the process. It lives as long as the process: a client may be
// destroyed from one of its own completions, which a joining owner could not survive.
struct IoThread {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  // A completion that throws is logged and the thread goes on: every client in the process shares it.
  std::thread thread{[this] {
    while (!runContained([this] { io.run(); },
                         [](const std::string& what) { spdlog::error("the HTTP client thread caught a failure ({}); it goes on", what); })) {
    }
  }};
  IoThread() { pthread_setname_np(thread.native_handle(), "http-client"); }
};
IoThread& ioThread() {
  static IoThread* const thread = new IoThread;  // never destroyed (see above)
  return *thread;
}
asio::io_context& ioContext() { return ioThread().io; }

constexpr auto kIdleLimit = std::chrono::seconds(20);  // a pooled connection older than this is closed, not reused

}  // namespace

namespace detail {

struct Connection {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> secure;
  SteadyClock::time_point idleSince;
  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
  template <typename F>
  void withStream(F&& f) {
    if (secure)
      f(*secure);
    else
      f(*plain);
  }
};

struct HttpPool {
  HttpPool(HttpTarget t, HttpClientOptions o) : target(std::move(t)), options(o), io(ioContext()) {
    if (!target.tls) return;
    tls.emplace(asio::ssl::context::tls_client);
    tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                     asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    tls->set_verify_mode(asio::ssl::verify_peer);
    beast::error_code ec;
    if (target.caFile.empty())
      tls->set_default_verify_paths(ec);
    else
      tls->load_verify_file(target.caFile, ec);
    if (ec) {
      setupError = target.caFile.empty() ? fmt::format("cannot use the system's trusted certificates: {}", ec.message())
                                         : fmt::format("cannot use the CA file '{}': {}", target.caFile, ec.message());
      return;
    }
    if (target.certFile.empty() != target.keyFile.empty()) {
      setupError = "a client certificate needs both its certificate and its key file";
      return;
    }
    if (target.certFile.empty()) return;
    tls->use_certificate_chain_file(target.certFile, ec);
    if (ec) {
      setupError = fmt::format("cannot use the client certificate '{}': {}", target.certFile, ec.message());
      return;
    }
    tls->use_private_key_file(target.keyFile, asio::ssl::context::pem, ec);
    if (ec) setupError = fmt::format("cannot use the client key '{}': {}", target.keyFile, ec.message());
  }

  const HttpTarget target;
  const HttpClientOptions options;
  asio::io_context& io;
  std::optional<asio::ssl::context> tls;
  std::string setupError;  // why the TLS settings are unusable: every call fails with it
  std::atomic<std::uint64_t> opened{0};
  // The I/O thread's alone:
  std::vector<std::unique_ptr<Connection>> idle;
  std::size_t busy = 0;                       // connections checked out or being opened
  std::deque<std::function<void()>> waiting;  // exchanges waiting for a connection

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
  using Done = std::function<void(HttpOutcome)>;
  Exchange(std::shared_ptr<detail::HttpPool> pool, http::request<http::string_body> req, HttpCall call, Deadline deadline, Done done)
      : pool_(std::move(pool)),
        req_(std::move(req)),
        call_(std::move(call)),
        deadline_(deadline),
        done_(std::move(done)),
        resolver_(pool_->io),
        resolveTimer_(pool_->io) {}

  void start() {
    if (pool_->busy >= pool_->options.maxConnections) {
      pool_->waiting.push_back([self = shared_from_this()] { self->start(); });
      return;
    }
    ++pool_->busy;
    // A call that may not be sent twice, or that reads a stream, goes on a new connection.
    if (call_.mayResend && !call_.enough) {
      auto& idle = pool_->idle;
      while (!idle.empty()) {
        auto candidate = std::move(idle.back());
        idle.pop_back();
        if (SteadyClock::now() - candidate->idleSince > kIdleLimit) continue;  // closed here, not reused
        connection_ = std::move(candidate);
        reused_ = true;
        return send();
      }
    }
    connect();
  }

 private:
  void connect() {
    reused_ = false;
    connecting_ = true;
    connection_ = std::make_unique<detail::Connection>();
    const HttpTarget& t = pool_->target;
    if (pool_->tls) {
      connection_->secure = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(pool_->io, *pool_->tls);
      connection_->secure->set_verify_callback(asio::ssl::host_name_verification(t.host));
      SSL_set_tlsext_host_name(connection_->secure->native_handle(), t.host.c_str());
    } else {
      connection_->plain = std::make_unique<beast::tcp_stream>(pool_->io);
    }
    ++pool_->opened;
    // A numeric address is never resolved. A name is, inside the call's deadline: the resolver's getaddrinfo
    // cannot be interrupted, so the call ends at its deadline and a late answer is dropped.
    beast::error_code notNumeric;
    const auto address = asio::ip::make_address(t.host, notNumeric);
    unsigned short port = 0;
    const auto [end, portError] = std::from_chars(t.port.data(), t.port.data() + t.port.size(), port);
    if (!notNumeric && portError == std::errc{} && end == t.port.data() + t.port.size())
      return connectTo(std::vector<tcp::endpoint>{tcp::endpoint(address, port)});
    resolving_ = true;
    resolveTimer_.expires_at(deadline_);
    resolveTimer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->resolving_) return;
      self->resolving_ = false;
      self->resolver_.cancel();
      self->finish(beast::error::timeout);
    });
    resolver_.async_resolve(t.host, t.port, [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type results) {
      if (!self->resolving_) return;  // the deadline passed first: already answered
      self->resolving_ = false;
      self->resolveTimer_.cancel();
      if (ec) return self->finish(ec);
      self->connectTo(std::vector<tcp::endpoint>(results.begin(), results.end()));
    });
  }

  void connectTo(const std::vector<tcp::endpoint>& endpoints) {
    connection_->lowest().expires_at(deadline_);
    connection_->lowest().async_connect(endpoints, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return self->finish(ec);
      if (!self->connection_->secure) return self->send();
      self->handshaking_ = true;
      self->connection_->lowest().expires_at(self->deadline_);
      self->connection_->secure->async_handshake(asio::ssl::stream_base::client, [self](beast::error_code handshake) {
        if (handshake) return self->finish(handshake);
        self->send();
      });
    });
  }

  void send() {
    connecting_ = false;
    handshaking_ = false;
    parser_.emplace();
    parser_->body_limit(call_.enough ? std::numeric_limits<std::uint64_t>::max() : pool_->options.bodyLimit);
    buffer_.clear();
    connection_->lowest().expires_at(deadline_);
    connection_->withStream([&](auto& stream) {
      http::async_write(stream, req_, [self = shared_from_this(), &stream](beast::error_code ec, std::size_t) {
        if (ec) return self->finish(ec);
        self->connection_->lowest().expires_at(self->deadline_);
        if (self->call_.enough) return self->readSome(stream);
        http::async_read(stream, self->buffer_, *self->parser_, [self](beast::error_code ec2, std::size_t) { self->finish(ec2); });
      });
    });
  }

  // A stream's body, piece by piece, until the caller has enough, the body ends or the deadline passes.
  template <typename Stream>
  void readSome(Stream& stream) {
    http::async_read_some(stream, buffer_, *parser_, [self = shared_from_this(), &stream](beast::error_code ec, std::size_t) {
      if (ec) return self->finish(ec);
      if (self->parser_->is_header_done() && self->call_.enough(self->parser_->get().body())) {
        self->enoughRead_ = true;
        return self->finish({});
      }
      if (self->parser_->is_done()) return self->finish({});
      self->readSome(stream);
    });
  }

  void finish(beast::error_code ec) {
    if (ec && reused_ && !retried_ && ec != beast::error::timeout && !(parser_ && parser_->got_some())) {
      retried_ = true;  // the server closed this pooled connection: once more on a new one
      return connect();
    }
    HttpOutcome outcome = ec ? HttpOutcome(std::unexpected(failure(ec))) : HttpOutcome(answer());
    auto& pool = *pool_;
    if (!ec && !enoughRead_ && connection_ && parser_->get().keep_alive() && buffer_.size() == 0) {
      connection_->lowest().expires_never();
      connection_->idleSince = SteadyClock::now();
      pool.idle.push_back(std::move(connection_));
    } else if (connection_) {
      beast::error_code ignored;
      connection_->lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
      connection_.reset();
    }
    auto done = std::move(done_);
    pool.release();
    done(std::move(outcome));
  }

  HttpFailure failure(beast::error_code ec) const {
    using Kind = HttpFailure::Kind;
    if (ec == beast::error::timeout) {
      if (connecting_ && !handshaking_) return {Kind::kUnreachable, "no connection before the deadline"};
      return {Kind::kTimedOut, "no answer before the deadline"};
    }
    // An alert: the handshake failed, or the server refused us after it (TLS 1.3 checks a client's certificate then).
    if (ec.category() == asio::error::get_ssl_category() || handshaking_) return {Kind::kTls, ec.message()};
    if (connecting_) return {Kind::kUnreachable, ec.message()};
    return {Kind::kLost, ec.message()};
  }

  HttpAnswer answer() const {
    const auto& res = parser_->get();
    HttpAnswer out;
    out.status = static_cast<int>(res.result_int());
    out.body = res.body();
    for (const auto& field : res) out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    return out;
  }

  std::shared_ptr<detail::HttpPool> pool_;
  http::request<http::string_body> req_;
  HttpCall call_;
  Deadline deadline_;
  Done done_;
  tcp::resolver resolver_;
  asio::steady_timer resolveTimer_;
  bool resolving_ = false;
  std::unique_ptr<detail::Connection> connection_;
  bool reused_ = false;
  bool retried_ = false;
  bool connecting_ = false;   // resolving or connecting: nothing was sent yet
  bool handshaking_ = false;  // the TLS handshake
  bool enoughRead_ = false;   // the caller stopped reading a stream: the connection is not reused
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
};

// The pool's connections are closed on the I/O thread, the only one that touches them. A client destroyed on
// another thread waits for that: what the pool's TLS context did on the I/O thread then happens before whatever
// its owner does next (OpenSSL's cleanup at exit included).
void retire(std::shared_ptr<detail::HttpPool> pool) {
  if (!pool) return;
  asio::io_context& io = pool->io;
  if (std::this_thread::get_id() == ioThread().thread.get_id()) {
    asio::post(io, [pool = std::move(pool)] {});  // from a completion: the I/O thread cannot wait for itself
    return;
  }
  std::promise<void> gone;
  auto done = gone.get_future();
  asio::post(io, [pool = std::move(pool), gone = std::move(gone)]() mutable {
    pool.reset();
    gone.set_value();
  });
  done.wait();
}

}  // namespace

HttpClient::HttpClient(HttpTarget target, HttpClientOptions options)
    : pool_(std::make_shared<detail::HttpPool>(std::move(target), options)) {}

HttpClient::~HttpClient() { retire(std::move(pool_)); }

HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&& other) noexcept {
  if (this != &other) {
    retire(std::move(pool_));
    pool_ = std::move(other.pool_);
  }
  return *this;
}

const HttpTarget& HttpClient::target() const { return pool_->target; }

std::uint64_t HttpClient::connectionsOpened() const { return pool_->opened.load(); }

HttpOutcome HttpClient::exchange(HttpCall call, Deadline deadline) const {
  std::vector<HttpCall> one;
  one.push_back(std::move(call));
  return std::move(exchangeAll(std::move(one), deadline).front());
}

std::vector<HttpOutcome> HttpClient::exchangeAll(std::vector<HttpCall> calls, Deadline deadline) const {
  struct Batch {
    std::mutex mutex;
    std::condition_variable done;
    std::vector<HttpOutcome> outcomes;
    std::size_t left = 0;
  };
  auto batch = std::make_shared<Batch>();
  if (!pool_->setupError.empty()) {
    batch->outcomes.assign(calls.size(), std::unexpected(HttpFailure{HttpFailure::Kind::kSetup, pool_->setupError}));
    return std::move(batch->outcomes);
  }
  if (SteadyClock::now() >= deadline) {
    batch->outcomes.assign(calls.size(), std::unexpected(HttpFailure{HttpFailure::Kind::kTimedOut, "no time left before the deadline"}));
    return std::move(batch->outcomes);
  }
  batch->outcomes.assign(calls.size(), std::unexpected(HttpFailure{HttpFailure::Kind::kLost, "not sent"}));
  batch->left = calls.size();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    HttpCall& c = calls[i];
    http::request<http::string_body> req;
    req.method_string(c.method);
    req.target(c.target);
    req.version(11);
    req.set(http::field::host, pool_->target.host);
    req.set(http::field::user_agent, "switchyard");
    for (const auto& [name, value] : c.headers) req.set(name, value);
    req.keep_alive(!c.enough);
    req.body() = std::move(c.body);
    req.prepare_payload();
    auto exchange = std::make_shared<Exchange>(pool_, std::move(req), std::move(c), deadline, [batch, i](HttpOutcome outcome) {
      std::lock_guard lock(batch->mutex);
      batch->outcomes[i] = std::move(outcome);
      if (--batch->left == 0) batch->done.notify_all();
    });
    asio::post(pool_->io, [exchange] { exchange->start(); });
  }
  std::unique_lock lock(batch->mutex);
  batch->done.wait(lock, [&] { return batch->left == 0; });
  return std::move(batch->outcomes);
}

}  // namespace switchyard::net

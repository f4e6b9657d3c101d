#include "net/http_server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/ssl.hpp>
#include <openssl/ssl.h>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <array>
#include <sstream>
#include <atomic>
#include <deque>
#include <mutex>
#include <optional>

#include "composer/model/contain.h"
#include "composer/model/listen_address.h"

namespace switchyard::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace detail {

// Logs a line at most once per interval; the lines it held back are counted in the next one.
class RateLimitedLog {
 public:
  explicit RateLimitedLog(std::chrono::seconds interval) : interval_(interval) {}
  template <typename... Args>
  void warn(fmt::format_string<Args...> format, Args&&... args) {
    const auto now = std::chrono::steady_clock::now();
    std::uint64_t held = 0;
    {
      std::lock_guard lock(mutex_);
      if (last_ && now - *last_ < interval_) {
        ++held_;
        return;
      }
      last_ = now;
      held = std::exchange(held_, 0);
    }
    const std::string line = fmt::format(format, std::forward<Args>(args)...);
    if (held == 0) spdlog::warn("{}", line);
    else spdlog::warn("{} ({} more like it in the last {} s)", line, held, interval_.count());
  }

 private:
  const std::chrono::seconds interval_;
  std::mutex mutex_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  std::uint64_t held_ = 0;
};

// One open connection, counted while its session lives.
class ConnectionSlot {
 public:
  explicit ConnectionSlot(std::atomic<std::size_t>& open) : open_(open) { ++open_; }
  ~ConnectionSlot() { --open_; }
  ConnectionSlot(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(const ConnectionSlot&) = delete;

 private:
  std::atomic<std::size_t>& open_;
};

}  // namespace detail

using detail::ConnectionSlot;
using detail::RateLimitedLog;

struct HttpServer::Impl {
  Impl(HttpServerOptions o, Handler h)
      : options(std::move(o)), handler(std::move(h)), acceptor(asio::make_strand(io)), acceptRetry(acceptor.get_executor()) {}
  HttpServerOptions options;
  Handler handler;
  // Declared before io: the sessions that io's destructor destroys still count down into it.
  std::atomic<std::size_t> connections{0};
  std::atomic<std::uint64_t> refused{0};
  RateLimitedLog acceptLog{std::chrono::seconds(10)};
  RateLimitedLog refusalLog{std::chrono::seconds(10)};
  RateLimitedLog thrownLog{std::chrono::seconds(1)};
  std::chrono::milliseconds acceptDelay{0};  // after a failed accept: doubles to 1 s, back to 0 on success
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::steady_timer acceptRetry;
  std::optional<asio::ssl::context> tls;
  void accept();
  void refuse(tcp::socket socket);
  void serve();
};

namespace {

HttpResponse errorResponse(const HttpServerOptions& options, http::status status, const std::string& message) {
  if (options.errorResponse) return options.errorResponse(status, message);
  HttpResponse res{status, 11};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = message + "\n";
  return res;
}

// A request target for a log line: bytes outside printable ASCII as \\xNN, at most 200 of them.
std::string printable(boost::beast::string_view beastText) {
  const std::string_view text(beastText.data(), beastText.size());
  std::string out;
  for (const char ch : text.substr(0, 200)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  if (text.size() > 200) out += "...";
  return out;
}

// The TCP layer of a plain or a TLS stream, for timeouts and shutdown.
beast::tcp_stream& tcpOf(beast::tcp_stream& s) { return s; }
beast::tcp_stream& tcpOf(beast::ssl_stream<beast::tcp_stream>& s) { return beast::get_lowest_layer(s); }

template <typename Stream>
class Session;

// Bytes queued for a streaming session, written one buffer at a time on the session's strand.
template <typename Stream>
class SessionStream final : public StreamWriter, public std::enable_shared_from_this<SessionStream<Stream>> {
 public:
  explicit SessionStream(std::shared_ptr<Session<Stream>> session) : session_(std::move(session)) {}
  void send(std::string bytes) override {
    asio::post(session_->executor(), [self = this->shared_from_this(), bytes = std::move(bytes)]() mutable {
      if (self->closed_) return;
      self->queue_.push_back(std::move(bytes));
      self->pump();
    });
  }
  void close() override {
    asio::post(session_->executor(), [self = this->shared_from_this()] { self->finish(); });
  }
  void onClosed(std::function<void()> callback) override {
    asio::post(session_->executor(), [self = this->shared_from_this(), callback = std::move(callback)]() mutable {
      if (self->closed_) return callback();
      self->onClosed_ = std::move(callback);
    });
  }
  // On the strand: start by writing the head, and watch the socket for the client going away.
  void start(std::string head) {
    queue_.push_back(std::move(head));
    pump();
    session_->watchForClose([self = this->shared_from_this()] { self->finish(); });
  }

 private:
  void pump() {
    if (writing_ || queue_.empty() || closed_) return;
    writing_ = true;
    current_ = std::move(queue_.front());
    queue_.pop_front();
    session_->writeRaw(current_, [self = this->shared_from_this()](bool ok) {
      self->writing_ = false;
      if (!ok) return self->finish();
      self->pump();
    });
  }
  void finish() {
    if (closed_) return;
    closed_ = true;
    queue_.clear();
    session_->closeStream();
    if (auto callback = std::move(onClosed_)) callback();
  }

  std::shared_ptr<Session<Stream>> session_;
  std::deque<std::string> queue_;
  std::string current_;
  bool writing_ = false;
  bool closed_ = false;
  std::function<void()> onClosed_;
};

template <typename Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  template <typename... StreamArgs>
  Session(std::atomic<std::size_t>& open, RateLimitedLog& thrownLog, const HttpServerOptions& options, const Handler& handler, StreamArgs&&... args)
      : slot_(open), thrownLog_(thrownLog), stream_(std::forward<StreamArgs>(args)...), options_(options), handler_(handler) {}

  void run() {
    beast::error_code unknown;
    const auto remote = tcpOf(stream_).socket().remote_endpoint(unknown);
    if (!unknown) peer_ = remote.address().to_string();
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
        self->read();
      } else {
        tcpOf(self->stream_).expires_after(self->options_.idleTimeout);
        self->stream_.async_handshake(asio::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return;  // not a TLS client, or it went away: nothing to answer
          self->read();
        });
      }
    });
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(options_.bodyLimit);
    tcpOf(stream_).expires_after(options_.idleTimeout);
    http::async_read(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->onRead(ec); });
  }

  void onRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout) return close();
    if (ec == http::error::body_limit) {
      HttpResponse res = errorResponse(options_, http::status::payload_too_large, "the request body is too large");
      res.keep_alive(false);
      return write(std::move(res));
    }
    if (ec == http::error::partial_message) return close();  // the client left mid-request: nobody to answer
    if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
      // A request that is not HTTP/1.1 as RFC 9112 writes it: say so (400, or 431 for oversized headers) and close,
      // rather than dropping the connection with no answer.
      const bool tooLarge = ec == http::error::header_limit;
      HttpResponse res = errorResponse(options_, tooLarge ? http::status::request_header_fields_too_large : http::status::bad_request,
                                       "malformed HTTP request: " + ec.message());
      res.keep_alive(false);
      return write(std::move(res));
    }
    if (ec) return close();
    request_ = parser_->release();
    const unsigned version = request_.version();
    const bool keepAlive = request_.keep_alive();
    // The handler may answer from another thread (the engine's): come back to this connection's strand. It
    // answers once: a second answer (a handler that answered, then threw) is dropped.
    auto answered = std::make_shared<std::atomic<bool>>(false);
    auto reply = [self = this->shared_from_this(), version, keepAlive, answered](HttpResponse res) {
          if (answered->exchange(true)) return;
          res.version(version);
          res.keep_alive(keepAlive);
          res.prepare_payload();
          asio::post(self->stream_.get_executor(), [self, res = std::move(res)]() mutable { self->write(std::move(res)); });
        };
    auto openStream = [self = this->shared_from_this(), answered](std::string head) -> std::shared_ptr<StreamWriter> {
          answered->store(true);
          auto writer = std::make_shared<SessionStream<Stream>>(self);
          asio::post(self->stream_.get_executor(), [self, writer, head = std::move(head)]() mutable {
            tcpOf(self->stream_).expires_never();  // an event stream is quiet for as long as nothing happens
            writer->start(std::move(head));
          });
          return writer;
        };
    // Whatever the request's bytes, a throw in the handler answers this request 500 and nothing else.
    runContained([&] { handler_(request_, reply, openStream, peer_); },
                 [&](const std::string& what) {
                   thrownLog_.warn("{}: {} {} failed inside yardd ({}); answered 500", options_.name, printable(request_.method_string()),
                                   printable(request_.target()), what);
                   if (answered->load()) return;
                   runContained([&] { reply(errorResponse(options_, http::status::internal_server_error,
                                                          "yardd failed to answer this request; the failure is in its log")); },
                                [&](const std::string&) {
                                  HttpResponse res{http::status::internal_server_error, version};
                                  res.set(http::field::content_type, "text/plain; charset=utf-8");
                                  res.body() = "internal error\n";
                                  reply(std::move(res));
                                });
                 });
  }

 public:
  auto executor() { return stream_.get_executor(); }
  // For SessionStream, on the strand.
  void writeRaw(const std::string& bytes, std::function<void(bool)> done) {
    asio::async_write(stream_, asio::buffer(bytes), [self = this->shared_from_this(), done = std::move(done)](beast::error_code ec, std::size_t) {
      done(!ec);
    });
  }
  void watchForClose(std::function<void()> closed) {
    stream_.async_read_some(asio::buffer(discard_), [self = this->shared_from_this(), closed = std::move(closed)](beast::error_code ec, std::size_t) mutable {
      if (ec) return closed();
      self->watchForClose(std::move(closed));  // a client that talks on an event stream is ignored
    });
  }
  // The watch read (watchForClose) is still pending: only end our side; that read sees the client go.
  void closeStream() {
    beast::error_code ignored;
    tcpOf(stream_).socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

 private:

  void write(HttpResponse res) {
    response_ = std::make_shared<HttpResponse>(std::move(res));
    tcpOf(stream_).expires_after(options_.idleTimeout);
    http::async_write(stream_, *response_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec || !self->response_->keep_alive()) return self->close();
      self->read();
    });
  }

  // Ends our side, then reads and drops what the client still sends (the rest of a refused body) until it
  // closes too or a few seconds pass: closing with unread input would reset the connection and the client
  // would never read our answer.
  void close() {
    beast::error_code ignored;
    tcpOf(stream_).socket().shutdown(tcp::socket::shutdown_send, ignored);
    tcpOf(stream_).expires_after(std::chrono::seconds(5));
    linger();
  }
  void linger() {
    tcpOf(stream_).async_read_some(asio::buffer(discard_), [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (!ec) self->linger();
    });
  }

  ConnectionSlot slot_;
  RateLimitedLog& thrownLog_;
  Stream stream_;
  const HttpServerOptions& options_;
  const Handler& handler_;
  std::string peer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest request_;
  std::shared_ptr<HttpResponse> response_;
  std::array<char, 256> discard_{};
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      // Most often no descriptor is left (EMFILE): accepting again at once would spin. Back off, up to a second,
      // and say so at a bounded rate.
      acceptDelay = std::min<std::chrono::milliseconds>(std::chrono::seconds(1), std::max(std::chrono::milliseconds(10), acceptDelay * 2));
      acceptLog.warn("{}: accept failed: {}; accepting again in {} ms ({} connections open)", options.name, ec.message(), acceptDelay.count(),
                     connections.load());
      acceptRetry.expires_after(acceptDelay);
      acceptRetry.async_wait([this](beast::error_code waited) {
        if (!waited && acceptor.is_open()) accept();
      });
      return;
    }
    acceptDelay = std::chrono::milliseconds(0);
    // Whatever happens to this connection, the server goes on accepting the next one.
    runContained(
        [&] {
          if (connections.load() >= options.maxConnections) {
            refuse(std::move(socket));
          } else if (tls) {
            std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(connections, thrownLog, options, handler, std::move(socket), *tls)->run();
          } else {
            std::make_shared<Session<beast::tcp_stream>>(connections, thrownLog, options, handler, std::move(socket))->run();
          }
        },
        [&](const std::string& what) { acceptLog.warn("{}: a new connection failed: {}", options.name, what); });
    accept();
  });
}

// A connection over the cap: answered 503 at once without reading it (plain HTTP), or closed (TLS: no handshake
// is spent on it). The answer is one small write that never waits: a client that does not read loses it.
void HttpServer::Impl::refuse(tcp::socket socket) {
  ++refused;
  refusalLog.warn("{}: refused a connection from {}: {} connections are open, the most this server takes", options.name,
                  [&] {
                    beast::error_code unknown;
                    const auto remote = socket.remote_endpoint(unknown);
                    return unknown ? std::string("an unknown address") : remote.address().to_string();
                  }(),
                  options.maxConnections);
  beast::error_code ignored;
  if (!tls) {
    HttpResponse res = errorResponse(options, http::status::service_unavailable,
                                     fmt::format("too many connections to this server (at most {}); retry shortly", options.maxConnections));
    res.set(http::field::retry_after, "1");
    res.keep_alive(false);
    res.prepare_payload();
    std::ostringstream text;
    text << res;
    socket.non_blocking(true, ignored);
    socket.write_some(asio::buffer(text.str()), ignored);
    socket.shutdown(tcp::socket::shutdown_both, ignored);
  }
  socket.close(ignored);
}

// One I/O thread: a throw out of a completion handler is logged and the thread goes on serving.
void HttpServer::Impl::serve() {
  while (true) {
    const bool returned = runContained([this] { io.run(); }, [this](const std::string& what) {
      spdlog::error("{}: an HTTP thread caught a failure ({}); it goes on serving", options.name, what);
    });
    if (returned) return;  // stopped
  }
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options, Handler handler) {
  SY_ASSIGN(const ListenAddress listen, parseListenAddress(options.listen, options.name));
  beast::error_code ec;
  std::string host = listen.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return fail(Code::kInvalidArgument, fmt::format("{} {}: {}", options.name, options.listen, ec.message()));
  const int portNumber = listen.port;
  auto impl = std::make_unique<Impl>(options, std::move(handler));
  if (options.tls) {
    impl->tls.emplace(asio::ssl::context::tls_server);
    impl->tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                           asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    // TLS 1.2 and 1.3 only, and only AEAD suites with forward secrecy (TLS 1.3's are all AEAD): no CBC, no
    // SHA-1 MACs, no static RSA key exchange.
    SSL_CTX_set_min_proto_version(impl->tls->native_handle(), TLS1_2_VERSION);
    if (SSL_CTX_set_cipher_list(impl->tls->native_handle(), "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL") != 1)
      return fail(Code::kInternal, fmt::format("{}: TLS: OpenSSL accepts none of the AEAD cipher suites", options.name));
    impl->tls->use_certificate_chain_file(options.tls->certificate.string(), ec);
    if (!ec) impl->tls->use_private_key_file(options.tls->key.string(), asio::ssl::context::pem, ec);
    if (ec) return fail(Code::kInvalidArgument, fmt::format("{}: TLS certificate {} / key {}: {}", options.name, options.tls->certificate.string(),
                                                            options.tls->key.string(), ec.message()));
  }
  tcp::endpoint at(address, static_cast<unsigned short>(portNumber));
  impl->acceptor.open(at.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(at, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(Code::kUnavailable, fmt::format("{} {}: cannot listen there: {}", options.name, options.listen, ec.message()));
  std::unique_ptr<HttpServer> server(new HttpServer(std::move(impl)));
  server->port_ = server->impl_->acceptor.local_endpoint().port();
  server->impl_->accept();
  for (int i = 0; i < std::max(1, options.threads); ++i) server->threads_.emplace_back([raw = server->impl_.get()] { raw->serve(); });
  return server;
}

void HttpServer::stop() {
  if (threads_.empty()) return;
  asio::post(impl_->acceptor.get_executor(), [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  impl_->io.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

HttpServer::~HttpServer() { stop(); }

std::size_t HttpServer::connections() const { return impl_->connections.load(); }
std::uint64_t HttpServer::refusedConnections() const { return impl_->refused.load(); }

}  // namespace switchyard::net

#include "inventory/etcd/etcd_client.h"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <limits>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>

#include "composer/model/base64.h"

namespace switchyard::etcd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;

namespace {

Result<std::string> unbase64(std::string_view text) {
  auto bytes = decodeBase64(text);
  if (!bytes) return fail(Code::kInternal, "etcd sent malformed base64");
  return std::move(*bytes);
}

// Reading a reply never throws: a field of the wrong type reads as absent (etcd's gateway leaves out fields
// that hold their zero value), a number that is not one is an error.
const json& field(const json& j, const char* key) {
  static const json kAbsent;
  if (!j.is_object()) return kAbsent;
  auto it = j.find(key);
  return it == j.end() ? kAbsent : *it;
}
std::string textOf(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_string() ? v.get<std::string>() : std::string{};
}
bool flag(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_boolean() && v.get<bool>();
}
const json& list(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json& v = field(j, key);
  return v.is_array() ? v : kEmpty;
}
// int64 fields come as JSON strings ("12"), sometimes as numbers.
Result<std::int64_t> number(const json& j, const char* key) {
  const json& v = field(j, key);
  if (v.is_null()) return std::int64_t{0};
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc{} && end == s.data() + s.size() && !s.empty()) return n;
  }
  return fail(Code::kInternal, fmt::format("etcd sent a malformed {}: {}", key, v.dump()));
}

Result<KeyValue> keyValueOf(const json& j) {
  KeyValue kv;
  SY_ASSIGN(kv.key, unbase64(textOf(j, "key")));
  SY_ASSIGN(kv.value, unbase64(textOf(j, "value")));
  SY_ASSIGN(kv.createRevision, number(j, "create_revision"));
  SY_ASSIGN(kv.modRevision, number(j, "mod_revision"));
  SY_ASSIGN(kv.version, number(j, "version"));
  SY_ASSIGN(kv.lease, number(j, "lease"));
  return kv;
}

json compareJson(const Compare& c) {
  static constexpr const char* kResults[] = {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"};
  json j{{"key", encodeBase64(c.key)}, {"result", kResults[static_cast<int>(c.result)]}};
  switch (c.target) {
    case Compare::Target::kVersion: j["target"] = "VERSION", j["version"] = std::to_string(c.number); break;
    case Compare::Target::kCreate: j["target"] = "CREATE", j["create_revision"] = std::to_string(c.number); break;
    case Compare::Target::kMod: j["target"] = "MOD", j["mod_revision"] = std::to_string(c.number); break;
    case Compare::Target::kValue: j["target"] = "VALUE", j["value"] = encodeBase64(c.value); break;
  }
  return j;
}

json opJson(const Op& op) {
  switch (op.kind) {
    case Op::Kind::kPut: {
      json put{{"key", encodeBase64(op.key)}, {"value", encodeBase64(op.value)}};
      if (op.lease != 0) put["lease"] = std::to_string(op.lease);
      return json{{"request_put", put}};
    }
    case Op::Kind::kDelete: {
      json del{{"key", encodeBase64(op.key)}};
      if (!op.rangeEnd.empty()) del["range_end"] = encodeBase64(op.rangeEnd);
      return json{{"request_delete_range", del}};
    }
    case Op::Kind::kRange: {
      json range{{"key", encodeBase64(op.key)}};
      if (!op.rangeEnd.empty()) range["range_end"] = encodeBase64(op.rangeEnd);
      return json{{"request_range", range}};
    }
  }
  return {};
}

// Runs one asynchronous operation to its end on `io` (a tcp_stream's deadline, expires_after, applies to
// asynchronous operations only: a synchronous read would wait for a member that never answers).
template <typename Start>
void runOne(asio::io_context& io, beast::error_code& ec, Start&& start) {
  ec = {};
  start([&ec](beast::error_code e, auto&&...) { ec = e; });
  io.restart();
  io.run();
}

struct HostPort {
  std::string host;
  std::string port;
  bool tls = false;
};

Result<HostPort> hostPortOf(const std::string& endpoint) {
  std::string rest = endpoint;
  bool tls = false;
  if (rest.starts_with("https://")) {
    rest = rest.substr(8);
    tls = true;
  } else if (rest.starts_with("http://")) {
    rest = rest.substr(7);
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
    return fail(Code::kInvalidArgument, fmt::format("etcd endpoint '{}': expected http://HOST:PORT or https://HOST:PORT", endpoint));
  std::string host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return HostPort{host, rest.substr(colon + 1), tls};
}

// etcd's answer to a request whose token it does not (or no longer) accept.
bool tokenRefused(const std::string& message) {
  return message.find("invalid auth token") != std::string::npos || message.find("user name is empty") != std::string::npos;
}

}  // namespace

std::string prefixEnd(std::string prefix) {
  for (auto i = prefix.size(); i > 0; --i) {
    auto& c = prefix[i - 1];
    if (static_cast<unsigned char>(c) < 0xff) {
      c = static_cast<char>(static_cast<unsigned char>(c) + 1);
      prefix.resize(i);
      return prefix;
    }
  }
  return std::string(1, '\0');  // every key
}

Result<EtcdUrl> parseEtcdUrl(const std::string& url) {
  const bool tls = url.starts_with("etcds://");
  if (!url.starts_with("etcd://") && !tls)
    return fail(Code::kInvalidArgument, fmt::format("store '{}': expected etcd://HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for TLS)", url));
  const std::string scheme = tls ? "https://" : "http://";
  std::string rest = url.substr(tls ? 8 : 7);
  EtcdUrl out;
  const auto slash = rest.find('/');
  out.prefix = slash == std::string::npos ? "/switchyard/" : rest.substr(slash);
  if (out.prefix.back() != '/') out.prefix += '/';
  rest = rest.substr(0, slash);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string member = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    SY_TRY(hostPortOf(scheme + member));
    out.endpoints.push_back(scheme + member);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.endpoints.empty() || rest.empty()) return fail(Code::kInvalidArgument, fmt::format("store '{}': no etcd endpoint", url));
  return out;
}

struct Client::Tls {
  asio::ssl::context context{asio::ssl::context::tls_client};
  std::string error;  // why the context is unusable (a file that cannot be read): every call fails with it
};

// One connection to one member, plain or TLS, on a private io_context (runOne runs one operation at a time).
struct Client::Connection {
  asio::io_context io;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  std::string endpoint;
  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
  template <typename F>
  void withStream(F&& f) {
    if (secure)
      f(*secure);
    else
      f(*plain);
  }
};

Client::Client(ClientOptions options) : options_(std::move(options)) {
  if (std::none_of(options_.endpoints.begin(), options_.endpoints.end(), [](const std::string& e) { return e.starts_with("https://"); })) return;
  tls_ = std::make_unique<Tls>();
  auto& context = tls_->context;
  context.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                      asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  context.set_verify_mode(asio::ssl::verify_peer);
  const ClientSecurity& s = options_.security;
  beast::error_code ec;
  if (s.caFile.empty())
    context.set_default_verify_paths(ec);
  else
    context.load_verify_file(s.caFile, ec);
  if (ec) {
    tls_->error = fmt::format("etcd TLS: cannot use the CA file '{}': {}", s.caFile, ec.message());
    return;
  }
  if (s.certFile.empty() != s.keyFile.empty()) {
    tls_->error = "etcd TLS: a client certificate needs both its certificate and its key file";
    return;
  }
  if (!s.certFile.empty()) {
    context.use_certificate_chain_file(s.certFile, ec);
    if (ec) {
      tls_->error = fmt::format("etcd TLS: cannot use the client certificate '{}': {}", s.certFile, ec.message());
      return;
    }
    context.use_private_key_file(s.keyFile, asio::ssl::context::pem, ec);
    if (ec) tls_->error = fmt::format("etcd TLS: cannot use the client key '{}': {}", s.keyFile, ec.message());
  }
}
Client::~Client() = default;

std::string Client::endpoint() const {
  std::lock_guard lock(mutex_);
  return options_.endpoints.empty() ? "" : options_.endpoints[current_ % options_.endpoints.size()];
}

std::unique_ptr<Client::Connection> Client::take(const std::string& endpoint) {
  std::lock_guard lock(mutex_);
  for (auto it = idle_.begin(); it != idle_.end(); ++it)
    if ((*it)->endpoint == endpoint) {
      auto c = std::move(*it);
      idle_.erase(it);
      return c;
    }
  return nullptr;
}

void Client::giveBack(std::unique_ptr<Connection> connection) {
  constexpr std::size_t kIdleMost = 8;
  std::lock_guard lock(mutex_);
  if (idle_.size() < kIdleMost) idle_.push_back(std::move(connection));
}

// A new connection to `endpoint`, TLS handshaken for https://. Fails kUnavailable when nothing was sent (the
// next member may answer), kFailedPrecondition when TLS itself is refused (a certificate that does not verify
// will not verify on the next try either).
Result<std::unique_ptr<Client::Connection>> Client::open(const std::string& endpoint) {
  SY_ASSIGN(const HostPort hp, hostPortOf(endpoint));
  if (hp.tls && (!tls_ || !tls_->error.empty()))
    return fail(Code::kFailedPrecondition, tls_ ? tls_->error : fmt::format("etcd {}: no TLS settings", endpoint));
  auto c = std::make_unique<Connection>();
  c->endpoint = endpoint;
  beast::error_code ec;
  asio::ip::tcp::resolver resolver(c->io);
  auto results = resolver.resolve(hp.host, hp.port, ec);
  if (ec) return fail(Code::kUnavailable, fmt::format("{}: {}", endpoint, ec.message()));
  if (hp.tls) {
    c->secure.emplace(c->io, tls_->context);
    c->secure->set_verify_callback(asio::ssl::host_name_verification(hp.host));
    SSL_set_tlsext_host_name(c->secure->native_handle(), hp.host.c_str());
  } else {
    c->plain.emplace(c->io);
  }
  c->lowest().expires_after(options_.timeout);
  runOne(c->io, ec, [&](auto handler) { c->lowest().async_connect(results, handler); });
  if (ec) return fail(Code::kUnavailable, fmt::format("{}: {}", endpoint, ec.message()));
  if (hp.tls) {
    runOne(c->io, ec, [&](auto handler) { c->secure->async_handshake(asio::ssl::stream_base::client, handler); });
    if (ec == beast::error::timeout) return fail(Code::kUnavailable, fmt::format("{}: the TLS handshake timed out", endpoint));
    if (ec) return fail(Code::kFailedPrecondition, fmt::format("etcd {}: TLS handshake failed: {}", endpoint, ec.message()));
  }
  return c;
}

Result<std::string> Client::token(bool renew) {
  const ClientSecurity& s = options_.security;
  if (s.user.empty()) return std::string{};
  std::string stale;
  {
    std::lock_guard lock(mutex_);
    if (!renew && !token_.empty()) return token_;
    stale = token_;
  }
  std::lock_guard authenticating(authMutex_);
  {
    std::lock_guard lock(mutex_);
    if (!token_.empty() && token_ != stale) return token_;  // another call renewed it meanwhile
  }
  auto reply = postWith("/v3/auth/authenticate", json{{"name", s.user}, {"password", s.password}}.dump(), {});
  if (!reply) {
    if (reply.error().code == Code::kUnavailable || reply.error().code == Code::kDeadlineExceeded) return fail(reply.error());
    return fail(Code::kUnauthenticated, fmt::format("etcd refused user '{}': {}", s.user, reply.error().message));
  }
  const json parsed = json::parse(*reply, nullptr, false);
  const std::string fresh = textOf(parsed, "token");
  if (fresh.empty()) return fail(Code::kUnauthenticated, fmt::format("etcd gave user '{}' no token (is authentication enabled?)", s.user));
  std::lock_guard lock(mutex_);
  token_ = fresh;
  return fresh;
}

Result<std::string> Client::post(const std::string& path, const std::string& body) {
  SY_ASSIGN(const std::string first, token(false));
  auto reply = postWith(path, body, first);
  if (reply || first.empty() || reply.error().code != Code::kUnauthenticated || !tokenRefused(reply.error().message)) return reply;
  SY_ASSIGN(const std::string renewed, token(true));  // expired (or etcd restarted and forgot it): once more with a new one
  return postWith(path, body, renewed);
}

// No lock is held across the round trip: each call takes a connection of its own from the pool (or a new
// one), so a slow call (a large range, a member under load) never holds up another (the leader's lease
// keep-alive above all).
Result<std::string> Client::postWith(const std::string& path, const std::string& body, const std::string& token) {
  std::size_t first = 0;
  {
    std::lock_guard lock(mutex_);
    first = current_;
  }
  if (options_.endpoints.empty()) return fail(Code::kInvalidArgument, "no etcd endpoints");
  std::string lastError;
  // Each endpoint once; a fresh connection is tried again on the same endpoint when a kept-alive one had gone stale.
  for (std::size_t attempt = 0; attempt < options_.endpoints.size(); ++attempt) {
    const std::size_t at = first + attempt;
    const std::string& endpoint = options_.endpoints[at % options_.endpoints.size()];
    SY_ASSIGN(const HostPort hp, hostPortOf(endpoint));
    for (int fresh = 0; fresh < 2; ++fresh) {
      std::unique_ptr<Connection> c = fresh == 0 ? take(endpoint) : nullptr;
      const bool reused = c != nullptr;
      if (!reused) {
        auto opened = open(endpoint);
        if (!opened) {
          if (opened.error().code != Code::kUnavailable) return fail(opened.error());
          lastError = opened.error().message;
          break;  // nothing was sent: the next endpoint may answer
        }
        c = std::move(*opened);
      }
      beast::error_code ec;
      http::request<http::string_body> req{http::verb::post, path, 11};
      req.set(http::field::host, hp.host);
      req.set(http::field::content_type, "application/json");
      if (!token.empty()) req.set(http::field::authorization, token);
      req.keep_alive(true);
      req.body() = body;
      req.prepare_payload();
      c->lowest().expires_after(options_.timeout);
      c->withStream([&](auto& stream) { runOne(c->io, ec, [&](auto handler) { http::async_write(stream, req, handler); }); });
      beast::flat_buffer buffer;
      http::response<http::string_body> res;
      if (!ec) c->withStream([&](auto& stream) { runOne(c->io, ec, [&](auto handler) { http::async_read(stream, buffer, res, handler); }); });
      if (ec) {
        if (reused && (ec == http::error::end_of_stream || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
                       ec == asio::ssl::error::stream_truncated) && fresh == 0)
          continue;  // the member closed the idle connection before reading the request: send it on a new one
        if (ec == beast::error::timeout)
          return fail(Code::kDeadlineExceeded, fmt::format("etcd {} did not answer {} within {} ms", endpoint, path, options_.timeout.count()));
        if (ec.category() == asio::error::get_ssl_category())  // an alert: the member refused us (TLS 1.3 checks the client's certificate after the handshake)
          return fail(Code::kFailedPrecondition, fmt::format("etcd {} refused the TLS connection: {} (a member with --client-cert-auth needs a client "
                                                             "certificate its CA signed)", endpoint, ec.message()));
        return fail(Code::kUnavailable, fmt::format("etcd {}: {} (the request may or may not have been applied)", endpoint, ec.message()));
      }
      if (res.keep_alive()) giveBack(std::move(c));
      {
        std::lock_guard lock(mutex_);
        current_ = at % options_.endpoints.size();  // the member that answered: the next call starts there
      }
      if (res.result() == http::status::ok) return std::move(res.body());
      auto error = json::parse(res.body(), nullptr, false);
      std::string message = textOf(error, "message");
      if (message.empty()) message = textOf(error, "error");
      if (message.empty()) message = res.body();
      const json& codeField = field(error, "code");
      const std::int64_t code = codeField.is_number_integer() ? codeField.get<std::int64_t>() : 0;
      if (code == 14 || res.result_int() >= 500)  // UNAVAILABLE: no leader, a member stopping
        return fail(Code::kUnavailable, fmt::format("etcd {}: {}", endpoint, message));
      if (code == 16 || tokenRefused(message))  // UNAUTHENTICATED, or no token where authentication is on
        return fail(Code::kUnauthenticated, fmt::format("etcd {}: {}{}", endpoint, message,
                                                        token.empty() && path != "/v3/auth/authenticate" ? " (etcd has authentication on: give a user and password)" : ""));
      if (code == 7)
        return fail(Code::kPermissionDenied, fmt::format("etcd {}: {} ({})", endpoint, message,
                                                         token.empty() ? "no user was given: etcd may have authentication on; give a user and password"
                                                                       : "the user's roles do not cover this key range"));
      if (message.find("CommonName of client") != std::string::npos)
        return fail(Code::kFailedPrecondition,
                    fmt::format("etcd {} refuses a client certificate with a CommonName while authentication is on (its JSON gateway cannot "
                                "take the user from it): use a user and password with no client certificate, or a certificate without a CN",
                                endpoint));
      return fail(code == 3 ? Code::kInvalidArgument : Code::kFailedPrecondition, fmt::format("etcd {}: {}", endpoint, message));
    }
  }
  return fail(Code::kUnavailable, fmt::format("no etcd member answered ({})", lastError));
}

Result<RangeResult> Client::range(const RangeRequest& r) {
  json body{{"key", encodeBase64(r.key)}};
  if (!r.rangeEnd.empty()) body["range_end"] = encodeBase64(r.rangeEnd);
  if (r.limit > 0) body["limit"] = std::to_string(r.limit);
  if (r.descending) body["sort_order"] = "DESCEND", body["sort_target"] = "KEY";
  if (r.countOnly) body["count_only"] = true;
  SY_ASSIGN(const std::string text, post("/v3/kv/range", body.dump()));
  const json reply = json::parse(text, nullptr, false);
  if (!reply.is_object()) return fail(Code::kInternal, "etcd sent a range reply that is not JSON");
  RangeResult out;
  SY_ASSIGN(out.count, number(reply, "count"));
  out.more = flag(reply, "more");
  SY_ASSIGN(out.revision, number(field(reply, "header"), "revision"));
  for (const auto& kv : list(reply, "kvs")) {
    SY_ASSIGN(auto parsed, keyValueOf(kv));
    out.kvs.push_back(std::move(parsed));
  }
  return out;
}

Result<TxnResult> Client::txn(const std::vector<Compare>& compares, const std::vector<Op>& success, const std::vector<Op>& failure) {
  json body{{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const auto& c : compares) body["compare"].push_back(compareJson(c));
  for (const auto& op : success) body["success"].push_back(opJson(op));
  for (const auto& op : failure) body["failure"].push_back(opJson(op));
  SY_ASSIGN(const std::string text, post("/v3/kv/txn", body.dump()));
  const json reply = json::parse(text, nullptr, false);
  if (!reply.is_object()) return fail(Code::kInternal, "etcd sent a txn reply that is not JSON");
  TxnResult out;
  out.succeeded = flag(reply, "succeeded");
  SY_ASSIGN(out.revision, number(field(reply, "header"), "revision"));
  for (const auto& r : list(reply, "responses")) {
    if (!field(r, "response_range").is_object()) continue;
    std::vector<KeyValue> kvs;
    for (const auto& kv : list(field(r, "response_range"), "kvs")) {
      SY_ASSIGN(auto parsed, keyValueOf(kv));
      kvs.push_back(std::move(parsed));
    }
    out.ranges.push_back(std::move(kvs));
  }
  return out;
}

Result<std::int64_t> Client::leaseGrant(std::chrono::seconds ttl) {
  SY_ASSIGN(const std::string text, post("/v3/lease/grant", json{{"TTL", std::to_string(ttl.count())}}.dump()));
  const json reply = json::parse(text, nullptr, false);
  if (!reply.is_object() || !reply.contains("ID")) return fail(Code::kInternal, "etcd granted no lease");
  SY_ASSIGN(const std::int64_t id, number(reply, "ID"));
  if (id == 0) return fail(Code::kInternal, "etcd granted no lease");
  return id;
}

Result<std::int64_t> Client::leaseKeepAlive(std::int64_t lease) {
  SY_ASSIGN(const std::string text, post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump()));
  const json reply = json::parse(text, nullptr, false);
  if (!reply.is_object()) return fail(Code::kInternal, "etcd sent a keep-alive reply that is not JSON");
  const json& result = field(reply, "result").is_object() ? field(reply, "result") : reply;
  return number(result, "TTL");
}

Result<std::optional<std::int64_t>> Client::watch(const std::string& key, const std::string& rangeEnd, std::int64_t fromRevision,
                                                  std::chrono::milliseconds wait) {
  std::string endpoint;
  {
    std::lock_guard lock(mutex_);
    if (options_.endpoints.empty()) return fail(Code::kInvalidArgument, "no etcd endpoints");
    endpoint = options_.endpoints[current_ % options_.endpoints.size()];
  }
  SY_ASSIGN(const HostPort hp, hostPortOf(endpoint));
  SY_ASSIGN(const std::string authToken, token(false));
  // etcd's gateway answers a watch with a stream of JSON messages, one per line: first "created", then one
  // per batch of events. Read until a message with events (or a compaction) arrives, or the wait ends.
  // On a private io_context, one asynchronous operation at a time (runOne).
  SY_ASSIGN(const std::unique_ptr<Connection> c, open(endpoint));
  beast::error_code ec;
  json create{{"key", encodeBase64(key)}, {"start_revision", std::to_string(fromRevision)}};
  if (!rangeEnd.empty()) create["range_end"] = encodeBase64(rangeEnd);
  http::request<http::string_body> req{http::verb::post, "/v3/watch", 11};
  req.set(http::field::host, hp.host);
  req.set(http::field::content_type, "application/json");
  if (!authToken.empty()) req.set(http::field::authorization, authToken);
  req.body() = json{{"create_request", create}}.dump();
  req.prepare_payload();
  c->withStream([&](auto& stream) { runOne(c->io, ec, [&](auto handler) { http::async_write(stream, req, handler); }); });
  if (ec) return fail(Code::kUnavailable, fmt::format("etcd {}: {}", endpoint, ec.message()));
  c->lowest().expires_after(wait);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  std::size_t scanned = 0;
  while (true) {
    c->withStream([&](auto& stream) { runOne(c->io, ec, [&](auto handler) { http::async_read_some(stream, buffer, parser, handler); }); });
    if (ec == beast::error::timeout) return std::optional<std::int64_t>{};
    if (ec) return fail(Code::kUnavailable, fmt::format("etcd {}: watch: {}", endpoint, ec.message()));
    if (parser.is_header_done() && parser.get().result() != http::status::ok)
      return fail(Code::kUnavailable, fmt::format("etcd {}: watch answered {}", endpoint, parser.get().result_int()));
    const std::string& body = parser.get().body();
    for (auto newline = body.find('\n', scanned); newline != std::string::npos; newline = body.find('\n', scanned)) {
      const json message = json::parse(body.substr(scanned, newline - scanned), nullptr, false);
      scanned = newline + 1;
      if (!message.is_object()) continue;
      const json& result = field(message, "result");
      if (!list(result, "events").empty()) {
        std::int64_t first = 0;
        for (const auto& e : list(result, "events")) {
          SY_ASSIGN(const std::int64_t at, number(field(e, "kv"), "mod_revision"));
          if (at != 0 && (first == 0 || at < first)) first = at;
        }
        return std::optional<std::int64_t>(first != 0 ? first : fromRevision);
      }
      SY_ASSIGN(const std::int64_t compacted, number(result, "compact_revision"));
      if (compacted != 0) return std::optional<std::int64_t>(fromRevision);
      const json& error = field(message, "error");
      if (error.is_object()) {
        const std::string why = textOf(error, "message");
        if (tokenRefused(why)) {
          std::lock_guard lock(mutex_);
          token_.clear();  // the next call authenticates again
        }
        return fail(Code::kUnavailable, fmt::format("etcd {}: watch: {}", endpoint, why));
      }
      if (flag(result, "canceled") && tokenRefused(textOf(result, "cancel_reason"))) {
        std::lock_guard lock(mutex_);
        token_.clear();  // the next call authenticates again
      }
      if (flag(result, "canceled"))
        return fail(Code::kUnavailable, fmt::format("etcd {}: watch canceled: {}", endpoint, textOf(result, "cancel_reason")));
    }
    if (parser.is_done()) return std::optional<std::int64_t>{};
  }
}

Result<void> Client::leaseRevoke(std::int64_t lease) {
  SY_TRY(post("/v3/kv/lease/revoke", json{{"ID", std::to_string(lease)}}.dump()));
  return {};
}

}  // namespace switchyard::etcd

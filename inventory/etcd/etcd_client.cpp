#include "inventory/etcd/etcd_client.h"

#include <fmt/format.h>
#include <charconv>
#include <limits>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
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
};

Result<HostPort> hostPortOf(const std::string& endpoint) {
  std::string rest = endpoint;
  if (rest.starts_with("https://")) return fail(Code::kInvalidArgument, fmt::format("etcd endpoint {}: https is not supported yet; use http:// on a trusted network", endpoint));
  if (rest.starts_with("http://")) rest = rest.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
    return fail(Code::kInvalidArgument, fmt::format("etcd endpoint '{}': expected http://HOST:PORT", endpoint));
  return HostPort{rest.substr(0, colon), rest.substr(colon + 1)};
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
  if (!url.starts_with("etcd://")) return fail(Code::kInvalidArgument, fmt::format("store '{}': expected etcd://HOST:PORT[,HOST:PORT...][/PREFIX]", url));
  std::string rest = url.substr(7);
  EtcdUrl out;
  const auto slash = rest.find('/');
  out.prefix = slash == std::string::npos ? "/switchyard/" : rest.substr(slash);
  if (out.prefix.back() != '/') out.prefix += '/';
  rest = rest.substr(0, slash);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string member = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    SY_TRY(hostPortOf("http://" + member));
    out.endpoints.push_back("http://" + member);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.endpoints.empty() || rest.empty()) return fail(Code::kInvalidArgument, fmt::format("store '{}': no etcd endpoint", url));
  return out;
}

struct Client::Connection {
  asio::io_context io;
  std::optional<beast::tcp_stream> stream;
  std::string endpoint;
};

Client::Client(ClientOptions options) : options_(std::move(options)) {}
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
  return std::make_unique<Connection>();
}

void Client::giveBack(std::unique_ptr<Connection> connection) {
  constexpr std::size_t kIdleMost = 8;
  std::lock_guard lock(mutex_);
  if (idle_.size() < kIdleMost) idle_.push_back(std::move(connection));
}

// No lock is held across the round trip: each call takes a connection of its own from the pool (or a new
// one), so a slow call (a large range, a member under load) never holds up another (the leader's lease
// keep-alive above all).
Result<std::string> Client::post(const std::string& path, const std::string& body) {
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
      std::unique_ptr<Connection> c = fresh == 0 ? take(endpoint) : std::make_unique<Connection>();
      const bool reused = c->stream.has_value();
      beast::error_code ec;
      if (!reused) {
        c->io.restart();
        asio::ip::tcp::resolver resolver(c->io);
        auto results = resolver.resolve(hp.host, hp.port, ec);
        if (ec) {
          lastError = fmt::format("{}: {}", endpoint, ec.message());
          break;
        }
        c->stream.emplace(c->io);
        c->stream->expires_after(options_.timeout);
        runOne(c->io, ec, [&](auto handler) { c->stream->async_connect(results, handler); });
        if (ec) {
          lastError = fmt::format("{}: {}", endpoint, ec.message());
          break;  // nothing was sent: the next endpoint may answer
        }
        c->endpoint = endpoint;
      }
      http::request<http::string_body> req{http::verb::post, path, 11};
      req.set(http::field::host, hp.host);
      req.set(http::field::content_type, "application/json");
      req.keep_alive(true);
      req.body() = body;
      req.prepare_payload();
      c->stream->expires_after(options_.timeout);
      runOne(c->io, ec, [&](auto handler) { http::async_write(*c->stream, req, handler); });
      beast::flat_buffer buffer;
      http::response<http::string_body> res;
      if (!ec) runOne(c->io, ec, [&](auto handler) { http::async_read(*c->stream, buffer, res, handler); });
      if (ec) {
        if (reused && (ec == http::error::end_of_stream || ec == asio::error::connection_reset || ec == asio::error::broken_pipe) && fresh == 0)
          continue;  // the member closed the idle connection before reading the request: send it on a new one
        if (ec == beast::error::timeout)
          return fail(Code::kDeadlineExceeded, fmt::format("etcd {} did not answer {} within {} ms", endpoint, path, options_.timeout.count()));
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
  // etcd's gateway answers a watch with a stream of JSON messages, one per line: first "created", then one
  // per batch of events. Read until a message with events (or a compaction) arrives, or the wait ends.
  // On a private io_context, one asynchronous operation at a time (runOne).
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(hp.host, hp.port, ec);
  if (ec) return fail(Code::kUnavailable, fmt::format("etcd {}: {}", endpoint, ec.message()));
  stream.expires_after(options_.timeout);
  runOne(io, ec, [&](auto handler) { stream.async_connect(results, handler); });
  if (ec) return fail(Code::kUnavailable, fmt::format("etcd {}: {}", endpoint, ec.message()));
  json create{{"key", encodeBase64(key)}, {"start_revision", std::to_string(fromRevision)}};
  if (!rangeEnd.empty()) create["range_end"] = encodeBase64(rangeEnd);
  http::request<http::string_body> req{http::verb::post, "/v3/watch", 11};
  req.set(http::field::host, hp.host);
  req.set(http::field::content_type, "application/json");
  req.body() = json{{"create_request", create}}.dump();
  req.prepare_payload();
  runOne(io, ec, [&](auto handler) { http::async_write(stream, req, handler); });
  if (ec) return fail(Code::kUnavailable, fmt::format("etcd {}: {}", endpoint, ec.message()));
  stream.expires_after(wait);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  std::size_t scanned = 0;
  while (true) {
    runOne(io, ec, [&](auto handler) { http::async_read_some(stream, buffer, parser, handler); });
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

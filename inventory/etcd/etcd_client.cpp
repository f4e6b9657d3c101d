#include "inventory/etcd/etcd_client.h"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <limits>

#include <nlohmann/json.hpp>

#include "composer/model/base64.h"
#include "inventory/etcd/replies.h"
#include "net/http_client.h"

namespace switchyard::etcd {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

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

struct Client::Member {
  std::string url;
  std::optional<net::HttpClient> http;  // none when the URL is unusable
  std::string invalid;                  // why
};

Client::Client(ClientOptions options) : options_(std::move(options)) {
  const ClientSecurity& s = options_.security;
  for (const std::string& url : options_.endpoints) {
    auto member = std::make_unique<Member>();
    member->url = url;
    if (auto hp = hostPortOf(url))
      member->http.emplace(net::HttpTarget{.host = hp->host, .port = hp->port, .tls = hp->tls, .caFile = s.caFile,
                                           .certFile = s.certFile, .keyFile = s.keyFile},
                           net::HttpClientOptions{.maxConnections = 64, .bodyLimit = std::numeric_limits<std::uint64_t>::max()});
    else
      member->invalid = hp.error().message;
    members_.push_back(std::move(member));
  }
}
Client::~Client() = default;

std::string Client::endpoint() const {
  std::lock_guard lock(mutex_);
  return options_.endpoints.empty() ? "" : options_.endpoints[current_ % options_.endpoints.size()];
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
  auto reply = postWith("/v3/auth/authenticate", json{{"name", s.user}, {"password", s.password}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), {});
  if (!reply) {
    if (reply.error().code == Code::kUnavailable || reply.error().code == Code::kDeadlineExceeded) return fail(reply.error());
    return fail(Code::kUnauthenticated, fmt::format("etcd refused user '{}': {}", s.user, reply.error().message));
  }
  const std::string fresh = tokenReplyOf(*reply);
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

// No lock is held across the round trip: each call takes a connection of its own from the member's pool (or a
// new one), so a slow call (a large range, a member under load) never holds up another (the leader's lease
// keep-alive above all). A member that could not be reached (nothing was sent) passes the call to the next.
Result<std::string> Client::postWith(const std::string& path, const std::string& body, const std::string& token) {
  std::size_t first = 0;
  {
    std::lock_guard lock(mutex_);
    first = current_;
  }
  if (members_.empty()) return fail(Code::kInvalidArgument, "no etcd endpoints");
  std::string lastError;
  for (std::size_t attempt = 0; attempt < members_.size(); ++attempt) {
    const std::size_t at = (first + attempt) % members_.size();
    const Member& member = *members_[at];
    if (!member.http) return fail(Code::kInvalidArgument, member.invalid);
    net::HttpCall call{.method = "POST", .target = path, .headers = {{"Content-Type", "application/json"}}, .body = body};
    if (!token.empty()) call.headers.emplace_back("Authorization", token);
    // The store's writes are fenced and idempotent: one sent on a connection etcd had closed may go again.
    call.mayResend = true;
    auto outcome = member.http->exchange(std::move(call), SteadyClock::now() + options_.timeout);
    if (!outcome) {
      const net::HttpFailure& f = outcome.error();
      switch (f.kind) {
        case net::HttpFailure::Kind::kSetup:
          return fail(Code::kFailedPrecondition, fmt::format("etcd TLS: {}", f.detail));
        case net::HttpFailure::Kind::kUnreachable:
          lastError = fmt::format("{}: {}", member.url, f.detail);
          continue;  // nothing was sent: the next member may answer
        case net::HttpFailure::Kind::kTls:  // an alert: the member refused us (TLS 1.3 checks the client's certificate after the handshake)
          return fail(Code::kFailedPrecondition, fmt::format("etcd {}: TLS failed: {} (is its certificate signed by the CA given? a member "
                                                             "with --client-cert-auth needs a client certificate its CA signed)", member.url, f.detail));
        case net::HttpFailure::Kind::kTimedOut:
          return fail(Code::kDeadlineExceeded, fmt::format("etcd {} did not answer {} within {} ms", member.url, path, options_.timeout.count()));
        case net::HttpFailure::Kind::kLost:
          return fail(Code::kUnavailable, fmt::format("etcd {}: {} (the request may or may not have been applied)", member.url, f.detail));
      }
    }
    {
      std::lock_guard lock(mutex_);
      current_ = at;  // the member that answered: the next call starts there
    }
    return answerOf(member, path, token, outcome->status, outcome->body);
  }
  return fail(Code::kUnavailable, fmt::format("no etcd member answered ({})", lastError));
}

// etcd's answer as its body, or the error its status and message mean.
Result<std::string> Client::answerOf(const Member& member, const std::string& path, const std::string& token, int status,
                                     const std::string& body) {
  const std::string& endpoint = member.url;
  if (status == 200) return body;
  const auto [message, code] = errorReplyOf(body);
  if (code == 14 || status >= 500)  // UNAVAILABLE: no leader, a member stopping
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

Result<RangeResult> Client::range(const RangeRequest& r) {
  json body{{"key", encodeBase64(r.key)}};
  if (!r.rangeEnd.empty()) body["range_end"] = encodeBase64(r.rangeEnd);
  if (r.limit > 0) body["limit"] = std::to_string(r.limit);
  if (r.descending) body["sort_order"] = "DESCEND", body["sort_target"] = "KEY";
  if (r.countOnly) body["count_only"] = true;
  SY_ASSIGN(const std::string text, post("/v3/kv/range", body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return rangeReplyOf(text);
}

Result<TxnResult> Client::txn(const std::vector<Compare>& compares, const std::vector<Op>& success, const std::vector<Op>& failure) {
  json body{{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const auto& c : compares) body["compare"].push_back(compareJson(c));
  for (const auto& op : success) body["success"].push_back(opJson(op));
  for (const auto& op : failure) body["failure"].push_back(opJson(op));
  SY_ASSIGN(const std::string text, post("/v3/kv/txn", body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return txnReplyOf(text);
}

Result<std::int64_t> Client::leaseGrant(std::chrono::seconds ttl) {
  SY_ASSIGN(const std::string text, post("/v3/lease/grant", json{{"TTL", std::to_string(ttl.count())}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return leaseGrantReplyOf(text);
}

Result<std::int64_t> Client::leaseKeepAlive(std::int64_t lease) {
  SY_ASSIGN(const std::string text, post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return keepAliveReplyOf(text);
}

Result<std::optional<std::int64_t>> Client::watch(const std::string& key, const std::string& rangeEnd, std::int64_t fromRevision,
                                                  std::chrono::milliseconds wait) {
  const Member* member = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (members_.empty()) return fail(Code::kInvalidArgument, "no etcd endpoints");
    member = members_[current_ % members_.size()].get();
  }
  if (!member->http) return fail(Code::kInvalidArgument, member->invalid);
  const std::string& endpoint = member->url;
  SY_ASSIGN(const std::string authToken, token(false));
  // etcd's gateway answers a watch with a stream of JSON messages, one per line: first "created", then one
  // per batch of events. Read until a message with events (or a compaction, an error, a cancel) arrives, or
  // the wait ends. The reading runs on the HTTP client's thread while this one waits for it.
  json create{{"key", encodeBase64(key)}, {"start_revision", std::to_string(fromRevision)}};
  if (!rangeEnd.empty()) create["range_end"] = encodeBase64(rangeEnd);
  net::HttpCall call{.method = "POST", .target = "/v3/watch", .headers = {{"Content-Type", "application/json"}},
                     .body = json{{"create_request", create}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  if (!authToken.empty()) call.headers.emplace_back("Authorization", authToken);
  std::optional<Result<std::optional<std::int64_t>>> verdict;  // what the first telling message said
  bool forgetToken = false;
  std::size_t scanned = 0;
  call.enough = [&](std::string_view body) {
    for (auto newline = body.find('\n', scanned); newline != std::string_view::npos; newline = body.find('\n', scanned)) {
      auto message = watchMessageOf(body.substr(scanned, newline - scanned));
      scanned = newline + 1;
      if (!message) {
        verdict = fail(message.error());
        return true;
      }
      switch (message->kind) {
        case WatchMessage::Kind::kNothing: continue;
        case WatchMessage::Kind::kChanged:
          verdict = std::optional<std::int64_t>(message->revision != 0 ? message->revision : fromRevision);
          return true;
        case WatchMessage::Kind::kCompacted:  // the changes since fromRevision are gone: the caller reads afresh
          verdict = std::optional<std::int64_t>(fromRevision);
          return true;
        case WatchMessage::Kind::kError:
          forgetToken = tokenRefused(message->reason);
          verdict = fail(Code::kUnavailable, fmt::format("etcd {}: watch: {}", endpoint, message->reason));
          return true;
        case WatchMessage::Kind::kCanceled:
          forgetToken = tokenRefused(message->reason);
          verdict = fail(Code::kUnavailable, fmt::format("etcd {}: watch canceled: {}", endpoint, message->reason));
          return true;
      }
    }
    return false;
  };
  auto outcome = member->http->exchange(std::move(call), SteadyClock::now() + wait);
  if (forgetToken) {
    std::lock_guard lock(mutex_);
    token_.clear();  // the next call authenticates again
  }
  if (verdict) return std::move(*verdict);
  if (!outcome) {
    switch (outcome.error().kind) {
      case net::HttpFailure::Kind::kTimedOut: return std::optional<std::int64_t>{};  // nothing changed in time
      case net::HttpFailure::Kind::kSetup: return fail(Code::kFailedPrecondition, fmt::format("etcd TLS: {}", outcome.error().detail));
      case net::HttpFailure::Kind::kTls:
        return fail(Code::kFailedPrecondition, fmt::format("etcd {}: watch: TLS failed: {}", endpoint, outcome.error().detail));
      default: return fail(Code::kUnavailable, fmt::format("etcd {}: watch: {}", endpoint, outcome.error().detail));
    }
  }
  if (outcome->status != 200) return fail(Code::kUnavailable, fmt::format("etcd {}: watch answered {}", endpoint, outcome->status));
  return std::optional<std::int64_t>{};  // the stream ended without a change
}

Result<void> Client::leaseRevoke(std::int64_t lease) {
  SY_TRY(post("/v3/kv/lease/revoke", json{{"ID", std::to_string(lease)}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return {};
}

}  // namespace switchyard::etcd

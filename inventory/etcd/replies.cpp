#include "inventory/etcd/replies.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "composer/model/base64.h"

namespace switchyard::etcd {

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
  return fail(Code::kInternal, fmt::format("etcd sent a malformed {}: {}", key, v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
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

json jsonOf(std::string_view body) { return json::parse(body, nullptr, false); }

}  // namespace

Result<RangeResult> rangeReplyOf(std::string_view body) {
  const json reply = jsonOf(body);
  if (!reply.is_object()) return fail(Code::kInternal, "etcd sent a range reply that is not JSON");
  RangeResult out;
  SY_ASSIGN(out.count, number(reply, "count"));
  out.more = flag(reply, "more");
  SY_ASSIGN(out.revision, number(field(reply, "header"), "revision"));
  for (const auto& kv : list(reply, "kvs")) {
    SY_ASSIGN(auto read, keyValueOf(kv));
    out.kvs.push_back(std::move(read));
  }
  return out;
}

Result<TxnResult> txnReplyOf(std::string_view body) {
  const json reply = jsonOf(body);
  if (!reply.is_object()) return fail(Code::kInternal, "etcd sent a txn reply that is not JSON");
  TxnResult out;
  out.succeeded = flag(reply, "succeeded");
  SY_ASSIGN(out.revision, number(field(reply, "header"), "revision"));
  for (const auto& r : list(reply, "responses")) {
    if (!field(r, "response_range").is_object()) continue;
    std::vector<KeyValue> kvs;
    for (const auto& kv : list(field(r, "response_range"), "kvs")) {
      SY_ASSIGN(auto read, keyValueOf(kv));
      kvs.push_back(std::move(read));
    }
    out.ranges.push_back(std::move(kvs));
  }
  return out;
}

Result<std::int64_t> leaseGrantReplyOf(std::string_view body) {
  const json reply = jsonOf(body);
  if (!reply.is_object() || !reply.contains("ID")) return fail(Code::kInternal, "etcd granted no lease");
  SY_ASSIGN(const std::int64_t id, number(reply, "ID"));
  if (id == 0) return fail(Code::kInternal, "etcd granted no lease");
  return id;
}

Result<std::int64_t> keepAliveReplyOf(std::string_view body) {
  const json reply = jsonOf(body);
  if (!reply.is_object()) return fail(Code::kInternal, "etcd sent a keep-alive reply that is not JSON");
  const json& result = field(reply, "result").is_object() ? field(reply, "result") : reply;
  return number(result, "TTL");
}

std::string tokenReplyOf(std::string_view body) { return textOf(jsonOf(body), "token"); }

ErrorReply errorReplyOf(std::string_view body) {
  const json error = jsonOf(body);
  ErrorReply out{textOf(error, "message"), 0};
  if (out.message.empty()) out.message = textOf(error, "error");
  if (out.message.empty()) out.message = std::string(body);
  const json& code = field(error, "code");
  if (code.is_number_integer()) out.code = code.get<std::int64_t>();
  return out;
}

Result<WatchMessage> watchMessageOf(std::string_view line) {
  const json message = jsonOf(line);
  WatchMessage out;
  if (!message.is_object()) return out;
  const json& result = field(message, "result");
  if (!list(result, "events").empty()) {
    out.kind = WatchMessage::Kind::kChanged;
    for (const auto& e : list(result, "events")) {
      SY_ASSIGN(const std::int64_t at, number(field(e, "kv"), "mod_revision"));
      if (at != 0 && (out.revision == 0 || at < out.revision)) out.revision = at;
    }
    return out;
  }
  SY_ASSIGN(const std::int64_t compacted, number(result, "compact_revision"));
  if (compacted != 0) {
    out.kind = WatchMessage::Kind::kCompacted;
    out.revision = compacted;
    return out;
  }
  if (const json& error = field(message, "error"); error.is_object()) {
    out.kind = WatchMessage::Kind::kError;
    out.reason = textOf(error, "message");
    return out;
  }
  if (flag(result, "canceled")) {
    out.kind = WatchMessage::Kind::kCanceled;
    out.reason = textOf(result, "cancel_reason");
  }
  return out;
}

}  // namespace switchyard::etcd

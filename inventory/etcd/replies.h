// What etcd's JSON gateway answers, read into the client's types. Every reply is outside bytes (a member, or
// whatever answers at its address), so reading never throws: a field of the wrong type reads as absent (the
// gateway leaves out fields that hold their zero value), a number or base64 text that is not one is an error.
// Pure functions, so that a fuzz target (tests/fuzz/etcd_reply_fuzz.cpp) reaches all of them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "composer/model/error.h"
#include "inventory/etcd/etcd_client.h"

namespace switchyard::etcd {

[[nodiscard]] Result<RangeResult> rangeReplyOf(std::string_view body);
[[nodiscard]] Result<TxnResult> txnReplyOf(std::string_view body);
// The lease granted; an error when there is none (ID absent or 0).
[[nodiscard]] Result<std::int64_t> leaseGrantReplyOf(std::string_view body);
// The lease's remaining TTL in seconds (0: expired).
[[nodiscard]] Result<std::int64_t> keepAliveReplyOf(std::string_view body);
// The token of /v3/auth/authenticate; "" when there is none.
[[nodiscard]] std::string tokenReplyOf(std::string_view body);

// An answer other than 200: etcd's message (its "message", else its "error", else the body) and gRPC code.
struct ErrorReply {
  std::string message;
  std::int64_t code = 0;
};
[[nodiscard]] ErrorReply errorReplyOf(std::string_view body);

// One line of a watch stream, and what it tells.
struct WatchMessage {
  enum class Kind { kNothing, kChanged, kCompacted, kError, kCanceled };
  Kind kind = Kind::kNothing;  // kNothing: not JSON, "created", or a progress note
  std::int64_t revision = 0;   // kChanged: the earliest change's revision (0: not said)
  std::string reason;          // kError, kCanceled: etcd's words
};
[[nodiscard]] Result<WatchMessage> watchMessageOf(std::string_view line);

}  // namespace switchyard::etcd

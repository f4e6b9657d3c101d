// A small client for etcd's v3 API through its JSON gateway (POST /v3/kv/range, /v3/kv/txn,
// /v3/lease/...), on the one HTTP client (net/http_client.h): synchronous, a pool of keep-alive connections per
// member (each call takes one of its own: no lock is held across a round trip, so a slow call never holds up
// another, such as the leader's lease keep-alive), a deadline per call, and failover across the cluster's endpoints. Replies are read
// without exceptions: a malformed one is an error. Keys and values are bytes (base64 on the wire); revisions are int64.
//
// Security: `https://` endpoints are reached over TLS (1.2 or later), verifying the member's certificate
// chain (a CA file, or the system's store) and its name; a client certificate answers etcd's
// --client-cert-auth. With a user, the client authenticates (POST /v3/auth/authenticate) and sends the
// token with every request; a token etcd no longer accepts (expired, etcd restarted) is replaced once and
// the request sent again.
//
// A call that failed before its request was sent (connection refused, a member down) is tried on the next
// endpoint. A write whose reply was lost may or may not have happened: kUnavailable, and the caller decides
// (the store's writes are fenced and idempotent, so the engine's answer is to stop and resume).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "composer/model/error.h"

namespace switchyard::etcd {

struct KeyValue {
  std::string key;
  std::string value;
  std::int64_t createRevision = 0;
  std::int64_t modRevision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;
};

struct Compare {
  enum class Target { kVersion, kCreate, kMod, kValue };
  enum class Result { kEqual, kGreater, kLess, kNotEqual };
  std::string key;
  Target target = Target::kVersion;
  Result result = Result::kEqual;
  std::int64_t number = 0;  // for version, create and mod revisions
  std::string value;        // for kValue
};

struct Op {
  enum class Kind { kPut, kDelete, kRange };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;     // put
  std::string rangeEnd;  // delete/range: [key, rangeEnd); empty: the key alone
  std::int64_t lease = 0;
};

struct TxnResult {
  bool succeeded = false;
  std::int64_t revision = 0;
  std::vector<std::vector<KeyValue>> ranges;  // one per range op of the branch taken, in order
};

struct RangeRequest {
  std::string key;
  std::string rangeEnd;  // empty: the key alone
  std::int64_t limit = 0;
  bool descending = false;  // sort by key
  bool countOnly = false;
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  std::int64_t count = 0;
  std::int64_t revision = 0;
  bool more = false;
};

struct ClientSecurity {
  std::string caFile;    // https: trust this CA (PEM) instead of the system's store
  std::string certFile;  // https: present this client certificate (PEM), for etcd's --client-cert-auth
  std::string keyFile;   // its private key (PEM)
  std::string user;      // etcd authentication (auth enabled): this user and password get a token
  std::string password;
};

struct ClientOptions {
  std::vector<std::string> endpoints{"http://127.0.0.1:2379"};  // the cluster's client URLs (http:// or https://)
  std::chrono::milliseconds timeout{5000};                      // per call
  ClientSecurity security;
};

// The end of the range of every key starting with `prefix`.
[[nodiscard]] std::string prefixEnd(std::string prefix);
// "etcd://h1:2379,h2:2379/prefix" -> endpoints and the key prefix ("/switchyard/" by default);
// "etcds://..." the same over TLS (https:// endpoints).
struct EtcdUrl {
  std::vector<std::string> endpoints;
  std::string prefix;
};
[[nodiscard]] Result<EtcdUrl> parseEtcdUrl(const std::string& url);

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  [[nodiscard]] Result<RangeResult> range(const RangeRequest& request);
  [[nodiscard]] Result<TxnResult> txn(const std::vector<Compare>& compares, const std::vector<Op>& success, const std::vector<Op>& failure = {});
  [[nodiscard]] Result<std::int64_t> leaseGrant(std::chrono::seconds ttl);
  // The lease's remaining TTL in seconds; 0 when it has expired (or never was).
  [[nodiscard]] Result<std::int64_t> leaseKeepAlive(std::int64_t lease);
  [[nodiscard]] Result<void> leaseRevoke(std::int64_t lease);
  // Waits up to `wait` for a change to a key in [key, rangeEnd) at revision `fromRevision` or later, on a
  // connection of its own (other calls go on meanwhile): the revision of the first change, or nullopt when
  // none came in time. A revision etcd has compacted away counts as a change (the caller reads again).
  [[nodiscard]] Result<std::optional<std::int64_t>> watch(const std::string& key, const std::string& rangeEnd, std::int64_t fromRevision,
                                                          std::chrono::milliseconds wait);
  // The endpoint the last call went to (for logs).
  [[nodiscard]] std::string endpoint() const;

 private:
  struct Member;  // one endpoint: its URL and its HTTP client (or why its URL is unusable)
  // The request's reply body, authenticated when a user is configured (a refused token is renewed once).
  [[nodiscard]] Result<std::string> post(const std::string& path, const std::string& body);
  [[nodiscard]] Result<std::string> postWith(const std::string& path, const std::string& body, const std::string& token);
  [[nodiscard]] Result<std::string> token(bool renew);  // empty without a user
  [[nodiscard]] Result<std::string> answerOf(const Member& member, const std::string& path, const std::string& token,
                                             int status, const std::string& body);
  const ClientOptions options_;
  std::vector<std::unique_ptr<Member>> members_;  // one per endpoint, in the options' order
  std::mutex authMutex_;      // one authentication at a time (held across it: the others wait for its token)
  mutable std::mutex mutex_;  // guards current_ and token_, never held across a request
  std::size_t current_ = 0;   // the endpoint that answered last: where the next call starts
  std::string token_;  // the current authentication token
};

}  // namespace switchyard::etcd

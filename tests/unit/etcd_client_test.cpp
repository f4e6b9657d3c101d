// The etcd client against a fake JSON gateway (net::HttpServer on port 0): a slow call holds up no other
// (issue 36: the store and the leader's lease keep-alive share a client), and a malformed reply is an
// error, never an exception. The client against real etcd is covered by the store contract and failover
// tests.
#include "inventory/etcd/etcd_client.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "net/http_server.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;
namespace http = boost::beast::http;

// Answers each path with its body; /v3/kv/range only when the test releases it.
class FakeGateway {
 public:
  FakeGateway() {
    auto s = net::HttpServer::start({"127.0.0.1:0", 2}, [this](const net::HttpRequest& req, net::Reply reply, net::OpenStream, const std::string&) {
      std::lock_guard lock(mutex_);
      if (holdRanges_ && req.target() == "/v3/kv/range") {
        held_.push_back(std::move(reply));
        return;
      }
      reply(answer(bodies_[std::string(req.target())]));
    });
    EXPECT_TRUE(s) << s.error().message;
    server_ = std::move(*s);
  }
  etcd::Client client() { return etcd::Client({{fmt::format("http://127.0.0.1:{}", server_->port())}, 5000ms}); }
  void set(const std::string& path, std::string body) {
    std::lock_guard lock(mutex_);
    bodies_[path] = std::move(body);
  }
  void holdRanges() {
    std::lock_guard lock(mutex_);
    holdRanges_ = true;
  }
  std::size_t held() {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  void release(const std::string& body) {
    std::vector<net::Reply> replies;
    {
      std::lock_guard lock(mutex_);
      replies.swap(held_);
      holdRanges_ = false;
    }
    for (auto& r : replies) r(answer(body));
  }

 private:
  static net::HttpResponse answer(const std::string& body) {
    net::HttpResponse res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = body.empty() ? "{}" : body;
    res.prepare_payload();
    return res;
  }
  std::mutex mutex_;
  std::map<std::string, std::string> bodies_;
  bool holdRanges_ = false;
  std::vector<net::Reply> held_;
  std::unique_ptr<net::HttpServer> server_;
};

TEST(EtcdClient, ASlowCallDoesNotHoldUpTheLeaseKeepAlive) {
  FakeGateway gateway;
  gateway.set("/v3/lease/keepalive", R"({"result": {"ID": "7", "TTL": "10"}})");
  gateway.holdRanges();
  etcd::Client client = gateway.client();
  std::atomic<bool> rangeDone{false};
  Result<etcd::RangeResult> range = fail(Code::kInternal, "not run");
  std::thread slow([&] {
    range = client.range({"/switchyard/devices/", etcd::prefixEnd("/switchyard/devices/")});
    rangeDone = true;
  });
  for (int i = 0; i < 500 && gateway.held() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(gateway.held(), 1u) << "the range is with the gateway, unanswered";
  auto ttl = client.leaseKeepAlive(7);
  const bool rangeWasStillOut = !rangeDone;
  gateway.release(R"({"header": {"revision": "5"}, "count": "0"})");
  slow.join();
  ASSERT_TRUE(ttl) << ttl.error().message;
  EXPECT_EQ(*ttl, 10);
  EXPECT_TRUE(rangeWasStillOut) << "the keep-alive waited for the range (a lock held across the round trip)";
  ASSERT_TRUE(range) << range.error().message;
  EXPECT_EQ(range->revision, 5);
}

TEST(EtcdClient, AMalformedReplyIsAnErrorNotAnException) {
  FakeGateway gateway;
  etcd::Client client = gateway.client();
  const etcd::RangeRequest all{"/a", "/b"};
  gateway.set("/v3/kv/range", R"({"count": "12x"})");
  auto badCount = client.range(all);
  ASSERT_FALSE(badCount);
  EXPECT_EQ(badCount.error().code, Code::kInternal);
  EXPECT_NE(badCount.error().message.find("count"), std::string::npos) << badCount.error().message;
  gateway.set("/v3/kv/range", R"({"more": "yes", "kvs": "none", "header": []})");
  auto wrongTypes = client.range(all);
  ASSERT_TRUE(wrongTypes) << "fields of the wrong type read as absent";
  EXPECT_TRUE(wrongTypes->kvs.empty());
  gateway.set("/v3/kv/range", R"({"kvs": [{"key": 5, "mod_revision": {"n": 1}}]})");
  EXPECT_FALSE(client.range(all)) << "a revision that is not a number";
  gateway.set("/v3/kv/txn", R"({"succeeded": true, "responses": [{"response_range": {"kvs": [{"key": "%%%%"}]}}]})");
  auto badBase64 = client.txn({}, {});
  ASSERT_FALSE(badBase64);
  EXPECT_EQ(badBase64.error().code, Code::kInternal);
  gateway.set("/v3/lease/keepalive", R"({"result": {"TTL": [1]}})");
  EXPECT_FALSE(client.leaseKeepAlive(7));
  gateway.set("/v3/lease/grant", R"({"ID": "0"})");
  EXPECT_FALSE(client.leaseGrant(10s)) << "lease 0 is no lease";
  gateway.set("/v3/lease/grant", R"({"ID": "123", "TTL": "10"})");
  auto lease = client.leaseGrant(10s);
  ASSERT_TRUE(lease);
  EXPECT_EQ(*lease, 123);
}

}  // namespace
}  // namespace switchyard

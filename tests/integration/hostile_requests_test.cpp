// Issue "No request can stop yardd": the requests an outside attack found that stopped or bloated yardd, each
// sent to the real daemon, which must answer them and live on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "tests/integration/daemon_fixture.h"
#include "tests/support/raw_http.h"

namespace switchyard::testing {
namespace {

namespace http = boost::beast::http;

class HostileRequestsTest : public DaemonTest {
 protected:
  // A viewer ("watcher", token "token-watcher") and two tenants ("alice" of team-a, "bob" of team-b; tokens
  // "token-NAME").
  void writeIdentities() {
    auto sha = [&](const std::string& token) { return runCommand("printf %s " + token + " | sha256sum | cut -d' ' -f1", "/tmp").out.substr(0, 64); };
    json ids = json::array({json{{"name", "watcher"}, {"role", "viewer"}, {"token_sha256", sha("token-watcher")}},
                            json{{"name", "alice"}, {"role", "tenant"}, {"tenant", "team-a"}, {"token_sha256", sha("token-alice")}},
                            json{{"name", "bob"}, {"role", "tenant"}, {"tenant", "team-b"}, {"token_sha256", sha("token-bob")}}});
    std::ofstream(dir_ / "identities.json") << json{{"identities", ids}}.dump(2);
    std::filesystem::permissions(dir_ / "identities.json", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  int portIn(const std::string& file) { return std::stoi(readFile(dir_ / file)); }

  // Composes 8-GPU systems until no more fit: what is queued next waits.
  void fillPool() {
    for (int i = 0; i < 64; ++i) {
      pb::ComposeRequest fill;
      fill.set_name("fill-" + std::to_string(i));
      fill.mutable_gpus()->set_count(8);
      pb::Operation op;
      const auto s = call(&pb::Switchyard::Stub::Compose, fill, op);
      if (!s.ok()) {
        ASSERT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
        return;
      }
      ASSERT_EQ(wait(op.id()).state(), pb::OPERATION_STATE_SUCCEEDED);
    }
  }

  static http::response<http::string_body> exchange(int port, const std::string& bytes) { return rawHttpExchange(port, bytes); }

  // yardd is still running and serving: its process, /healthz and a gRPC read.
  void expectAlive(int metricsPort, const std::string& after) {
    EXPECT_FALSE(daemon_->waitExit(0ms)) << "yardd ended after " << after << ":\n" << daemon_->log();
    const auto health = exchange(metricsPort, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(health.result(), http::status::ok) << after;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    ctx.AddMetadata("authorization", "Bearer token-watcher");
    pb::ListHostsResponse hosts;
    EXPECT_TRUE(stub_->ListHosts(&ctx, pb::ListHostsRequest{}, &hosts).ok()) << after;
  }
};

// N1 (critical): a byte that is not UTF-8 in the target of a request to the operator endpoint ended yardd:
// the JSON error repeated it with a dump() that throws, with no credentials needed (405 before auth). Each
// request is answered in JSON that parses (the byte replaced), and yardd lives.
TEST_F(HostileRequestsTest, TargetsThatAreNotUtf8AreAnsweredAndYarddLives) {
  writeIdentities();
  startDaemon({"--identities", (dir_ / "identities.json").string(), "--metrics-listen", "127.0.0.1:0", "--metrics-port-file",
               (dir_ / "mport").string(), "--redfish-listen", "127.0.0.1:0", "--redfish-http", "--redfish-port-file", (dir_ / "rfport").string()});
  const int metrics = portIn("mport");
  const int redfish = portIn("rfport");
  const std::string viewer = "Authorization: Bearer token-watcher\r\n";
  struct Attack {
    int port;
    std::string request;
    http::status expected;
  };
  const std::vector<Attack> attacks{
      {metrics, "POST /\xff HTTP/1.1\r\nHost: x\r\n\r\n", http::status::method_not_allowed},
      {metrics, "DELETE /x\xc3 HTTP/1.1\r\nHost: x\r\n\r\n", http::status::method_not_allowed},
      {metrics, "POST /api/v1/systems\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", http::status::method_not_allowed},
      {metrics, "DELETE /api/v1/systems HTTP/1.1\r\nHost: x\r\n\r\n", http::status::method_not_allowed},
      {metrics, "GET /api/v1/systems?limit=\xff HTTP/1.1\r\nHost: x\r\n" + viewer + "\r\n", http::status::bad_request},
      {metrics, "GET /api/v1/pool?switches=\xc3\x28 HTTP/1.1\r\nHost: x\r\n" + viewer + "\r\n", http::status::bad_request},
      {metrics, "GET /api/v1/nothing\xed\xa0\x80 HTTP/1.1\r\nHost: x\r\n" + viewer + "\r\n", http::status::not_found},
      {metrics, "GET /dashboard-\xff.js HTTP/1.1\r\nHost: x\r\n" + viewer + "\r\n", http::status::not_found},
      {redfish, "GET /redfish/v1/Systems/\xff HTTP/1.1\r\nHost: x\r\n" + viewer + "\r\n", http::status::not_found},
  };
  for (const auto& attack : attacks) {
    const auto res = exchange(attack.port, attack.request);
    EXPECT_EQ(res.result(), attack.expected) << attack.request << "\n" << res.body();
    if (res[http::field::content_type].starts_with("application/json"))
      EXPECT_FALSE(json::parse(res.body(), nullptr, false).is_discarded()) << "not JSON: " << res.body();
    expectAlive(metrics, attack.request);
  }
}

// N9: with an If-Match, Redfish answered another tenant's system 412 (it exists) and a missing one 404: a
// tenant could list which system ids exist. Both are 404 with the same words now.
TEST_F(HostileRequestsTest, RedfishAnswersAnotherTenantsSystemAsOneThatDoesNotExist) {
  writeIdentities();
  startDaemon({"--identities", (dir_ / "identities.json").string(), "--redfish-listen", "127.0.0.1:0", "--redfish-http",
               "--redfish-port-file", (dir_ / "rfport").string()});
  const int redfish = portIn("rfport");
  pb::ComposeRequest compose;
  compose.set_name("alices");
  compose.mutable_gpus()->set_count(1);
  pb::Operation op;
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer token-alice");
    ctx.set_deadline(std::chrono::system_clock::now() + 20s);
    ASSERT_TRUE(stub_->Compose(&ctx, compose, &op).ok());
  }
  const std::string system = op.system_id();
  ASSERT_FALSE(system.empty());
  auto remove = [&](const std::string& id) {
    return exchange(redfish, "DELETE /redfish/v1/Systems/" + id +
                                 " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer token-bob\r\nIf-Match: W/\"not-the-tag\"\r\n\r\n");
  };
  const auto others = remove(system);
  const auto missing = remove("sys-999999");
  EXPECT_EQ(others.result(), http::status::not_found) << others.body();
  EXPECT_EQ(missing.result(), http::status::not_found) << missing.body();
  auto messageOf = [](const std::string& body, const std::string& id) {
    auto doc = json::parse(body, nullptr, false);
    std::string text = doc.is_discarded() ? body : doc.dump();
    for (auto at = text.find(id); at != std::string::npos; at = text.find(id)) text.replace(at, id.size(), "ID");
    return text;
  };
  EXPECT_EQ(messageOf(others.body(), system), messageOf(missing.body(), "sys-999999"));
}

// F19: Redfish read a body as JSON whatever its Content-Type said. A body that is not application/json is
// refused 415 before anything is done; one that is (with a charset) is served.
TEST_F(HostileRequestsTest, RedfishReadsABodyOnlyWhenItSaysItIsJson) {
  writeIdentities();
  startDaemon({"--identities", (dir_ / "identities.json").string(), "--redfish-listen", "127.0.0.1:0", "--redfish-http",
               "--redfish-port-file", (dir_ / "rfport").string()});
  const int redfish = portIn("rfport");
  const std::string body = R"({"Name": "by-redfish", "Links": {"ResourceBlocks": []}})";
  auto post = [&](const std::string& contentType) {
    return exchange(redfish, "POST /redfish/v1/Systems HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer token-alice\r\n" + contentType +
                                 "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  };
  for (const std::string type : {"", "Content-Type: text/plain\r\n", "Content-Type: application/x-www-form-urlencoded\r\n"}) {
    const auto refused = post(type);
    EXPECT_EQ(refused.result(), http::status::unsupported_media_type) << type << refused.body();
    EXPECT_NE(refused.body().find("HeaderInvalid"), std::string::npos) << refused.body();
  }
  const auto served = post("Content-Type: application/json; charset=utf-8\r\n");
  EXPECT_NE(served.result(), http::status::unsupported_media_type) << served.body();
  EXPECT_FALSE(daemon_->waitExit(0ms));
}

// N12: 180 queued requests with full-size labels (64 labels of 256 characters) pushed a page of ListSystems
// over gRPC's default 4 MB: every client got RESOURCE_EXHAUSTED. A page now ends before 3 MB, whatever its
// count, and yardctl, which follows the pages, lists them all (220 systems of 21 KB here: 4.6 MB).
TEST_F(HostileRequestsTest, AListOfSystemsWithFullSizeLabelsStaysUnderTheMessageLimit) {
  startDaemon();
  fillPool();
  pb::ListSystemsResponse before;
  ASSERT_TRUE(call(&pb::Switchyard::Stub::ListSystems, pb::ListSystemsRequest{}, before).ok());
  for (int i = 0; i < 220; ++i) {
    pb::ComposeRequest big;
    big.set_name(fmt::format("labelled-{:03}", i));
    big.mutable_gpus()->set_count(8);  // the pool is full: it waits
    big.set_queue(true);
    for (int l = 0; l < 64; ++l) (*big.mutable_labels())[fmt::format("key-{:02}-{}", l, std::string(56, 'k'))] = std::string(256, 'v');
    pb::Operation op;
    const auto s = call(&pb::Switchyard::Stub::Compose, big, op);
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  pb::ListSystemsResponse page;
  const auto s = call(&pb::Switchyard::Stub::ListSystems, pb::ListSystemsRequest{}, page);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_LT(page.ByteSizeLong(), 4u << 20);
  EXPECT_LT(page.systems_size(), 220);
  EXPECT_FALSE(page.next_page_token().empty()) << "the rest is on the next page";
  const auto listed = yardctl("systems -o json");
  ASSERT_EQ(listed.exitCode, 0) << listed.err;
  EXPECT_EQ(json::parse(listed.out)["systems"].size(), 220u + static_cast<std::size_t>(before.systems_size()));
}

// N5: a listen port above 65535 wrapped (":70000" bound 4464): each listener's flag refuses it at start.
TEST_F(HostileRequestsTest, ListenPortsOutOfRangeAreRefusedAtStart) {
  for (const auto& [flag, value] : {std::pair{"--metrics-listen", "127.0.0.1:70000"}, std::pair{"--listen", "127.0.0.1:65536"},
                                    std::pair{"--redfish-listen", "127.0.0.1:-1"}}) {
    std::vector<std::string> args{"--state-dir", dir_.path().string(), "--plaintext", flag, value};
    if (std::string(flag) != "--listen") args.insert(args.end(), {"--listen", "127.0.0.1:0"});
    if (std::string(flag) == "--redfish-listen") args.push_back("--redfish-http");
    DaemonProcess yardd(YARDD_PATH, dir_.path());
    EXPECT_FALSE(yardd.startProgram(args)) << flag << " " << value << " was accepted";
    EXPECT_TRUE(yardd.waitExit(10s));
    EXPECT_NE(yardd.exitCode(), 0);
    EXPECT_NE(yardd.log().find(std::string(flag) + " " + value + ": "), std::string::npos) << yardd.log();
    std::filesystem::remove(yardd.logFile());
  }
}

// N2: a WaitOperation its client cancels (or whose deadline passes) is released at once: before, each held
// about 15 KB until the operation ended, and a queued one may never end. Waits also count against a cap per
// caller (256 open at once), which only holds if cancelled waits give their place back.
TEST_F(HostileRequestsTest, CancelledWaitsAreReleasedAndCountAgainstACapPerCaller) {
  startDaemon();
  // The pool full, then a compose that waits in the queue until cancelled.
  fillPool();
  pb::ComposeRequest next;
  next.set_name("waits");
  next.mutable_gpus()->set_count(8);
  next.set_queue(true);
  pb::Operation queued;
  auto s = call(&pb::Switchyard::Stub::Compose, next, queued);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(queued.state(), pb::OPERATION_STATE_QUEUED);
  // 300 waits of an hour each, every one cancelled by its client once yardd holds it: more than the cap of 256.
  for (int i = 0; i < 300; ++i) {
    pb::WaitOperationRequest w;
    w.set_id(queued.id());
    w.set_timeout_ms(3'600'000);
    pb::Operation out;
    grpc::ClientContext ctx;
    grpc::CompletionQueue cq;
    grpc::Status status;
    auto reader = stub_->AsyncWaitOperation(&ctx, w, &cq);
    reader->Finish(&out, &status, reinterpret_cast<void*>(1));
    std::this_thread::sleep_for(5ms);
    ctx.TryCancel();
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    ASSERT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << i << ": " << status.error_message();
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }
  // Had the cancelled waits stayed, this one would be refused at the cap.
  std::this_thread::sleep_for(200ms);
  pb::WaitOperationRequest w;
  w.set_id(queued.id());
  w.set_timeout_ms(100);
  pb::Operation out;
  s = call(&pb::Switchyard::Stub::WaitOperation, w, out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(out.state(), pb::OPERATION_STATE_QUEUED);

  // The cap itself: 256 waits held open at once by one caller, then the next is refused, then a slot frees.
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<pb::Operation>> replies;
  std::vector<grpc::Status> statuses(256);
  std::vector<std::unique_ptr<grpc::ClientAsyncResponseReader<pb::Operation>>> readers;
  pb::WaitOperationRequest hour;
  hour.set_id(queued.id());
  hour.set_timeout_ms(3'600'000);
  for (int i = 0; i < 256; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    replies.push_back(std::make_unique<pb::Operation>());
    readers.push_back(stub_->AsyncWaitOperation(contexts.back().get(), hour, &cq));
    readers.back()->Finish(replies.back().get(), &statuses[static_cast<std::size_t>(i)], reinterpret_cast<void*>(static_cast<std::intptr_t>(i + 1)));
  }
  grpc::Status refused;
  for (int attempt = 0; attempt < 600; ++attempt) {  // the async calls reach yardd in their own time (ASan: seconds)
    std::this_thread::sleep_for(50ms);
    pb::Operation ignored;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 2s);
    pb::WaitOperationRequest shortWait = hour;
    shortWait.set_timeout_ms(10);
    refused = stub_->WaitOperation(&ctx, shortWait, &ignored);
    if (refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) break;
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("256 WaitOperation calls open"), std::string::npos) << refused.error_message();
  for (auto& c : contexts) c->TryCancel();
  for (int i = 0; i < 256; ++i) {
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(cq.Next(&tag, &ok));
  }
  cq.Shutdown();
  for (void* tag = nullptr; ;) {
    bool ok = false;
    if (!cq.Next(&tag, &ok)) break;
  }
  std::this_thread::sleep_for(200ms);
  s = call(&pb::Switchyard::Stub::WaitOperation, w, out);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

}  // namespace
}  // namespace switchyard::testing

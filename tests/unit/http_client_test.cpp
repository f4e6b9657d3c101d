// The one HTTP client (net/http_client.h) against the shared HTTP server on loopback, port 0: what an answer is,
// what each failure says about the request, keep-alive, resending, streams and deadlines.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>

#include "net/http_client.h"
#include "net/http_server.h"

namespace switchyard::net {
namespace {

namespace http = boost::beast::http;
using namespace std::chrono_literals;

Deadline in(std::chrono::milliseconds ms) { return std::chrono::steady_clock::now() + ms; }

HttpTarget local(int port) { return HttpTarget{.host = "127.0.0.1", .port = std::to_string(port)}; }

struct Served {
  std::unique_ptr<HttpServer> server;
  std::mutex mutex;
  std::vector<Reply> parked;  // /never's replies: dropped once the server's threads are joined, before it goes
  std::atomic<int> requests{0};
  ~Served() {
    if (server) server->stop();
    std::lock_guard lock(mutex);
    parked.clear();
  }
};

// A server that answers each path: /missing 404, /echo the method and body with a header, /stream a stream of
// lines, /never never.
std::unique_ptr<Served> serve() {
  auto served = std::make_unique<Served>();
  auto* s = served.get();
  auto started = HttpServer::start({"127.0.0.1:0", 2}, [s](const HttpRequest& req, Reply reply, OpenStream open, const std::string&) {
    ++s->requests;
    const std::string target(req.target());
    if (target == "/never") {
      std::lock_guard lock(s->mutex);
      s->parked.push_back(std::move(reply));
      return;
    }
    if (target == "/stream") {
      auto writer = open("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n");
      writer->send("one\n");
      writer->send("two\n");
      writer->send("three\n");  // and then nothing more: the stream stays open
      return;
    }
    HttpResponse res{target == "/missing" ? http::status::not_found : http::status::ok, req.version()};
    res.set("X-Method", std::string(req.method_string()));
    res.body() = std::string(req.method_string()) + " " + req.body();
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    reply(std::move(res));
  });
  EXPECT_TRUE(started) << started.error().message;
  if (started) served->server = std::move(*started);
  return served;
}

TEST(HttpClient, AnyStatusIsAnAnswerWithItsHeadersAndBody) {
  auto s = serve();
  HttpClient client(local(s->server->port()));
  auto missing = client.exchange({.method = "GET", .target = "/missing"}, in(5s));
  ASSERT_TRUE(missing) << missing.error().detail;
  EXPECT_EQ(missing->status, 404);
  auto echoed = client.exchange({.method = "PATCH", .target = "/echo", .body = "hello"}, in(5s));
  ASSERT_TRUE(echoed) << echoed.error().detail;
  EXPECT_EQ(echoed->status, 200);
  EXPECT_EQ(echoed->body, "PATCH hello");
  EXPECT_EQ(echoed->header("x-method"), "PATCH") << "header names are case-insensitive";
  EXPECT_EQ(echoed->header("X-Absent"), "");
}

TEST(HttpClient, KeepsConnectionsAliveButOpensANewOneForWhatMayNotBeSentTwice) {
  auto s = serve();
  HttpClient client(local(s->server->port()));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.exchange({.target = "/echo"}, in(5s)));
  EXPECT_EQ(client.connectionsOpened(), 1u) << "three calls in a row share one kept-alive connection";
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(client.exchange({.method = "POST", .target = "/echo", .mayResend = false}, in(5s)));
  EXPECT_EQ(client.connectionsOpened(), 3u) << "a call that may not be sent twice never takes a pooled connection";
}

TEST(HttpClient, ABatchGoesAtOnceAndAnswersInOrder) {
  auto s = serve();
  HttpClient client(local(s->server->port()), {.maxConnections = 4});
  std::vector<HttpCall> calls;
  for (int i = 0; i < 10; ++i) calls.push_back({.method = "PUT", .target = "/echo", .body = std::to_string(i)});
  auto outcomes = client.exchangeAll(std::move(calls), in(5s));
  ASSERT_EQ(outcomes.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(outcomes[i]) << outcomes[i].error().detail;
    EXPECT_EQ(outcomes[i]->body, "PUT " + std::to_string(i));
  }
  EXPECT_LE(client.connectionsOpened(), 4u) << "at most maxConnections open at once";
}

TEST(HttpClient, NothingListeningIsUnreachableSoAnotherServerMayTakeTheCall) {
  int port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = probe.local_endpoint().port();
  }  // closed: nothing listens there now
  HttpClient client(local(port));
  auto outcome = client.exchange({.target = "/"}, in(5s));
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().kind, HttpFailure::Kind::kUnreachable) << outcome.error().detail;
}

TEST(HttpClient, AServerThatNeverAnswersTimesOutAtTheDeadline) {
  auto s = serve();
  HttpClient client(local(s->server->port()));
  const auto start = std::chrono::steady_clock::now();
  auto outcome = client.exchange({.target = "/never"}, in(200ms));
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().kind, HttpFailure::Kind::kTimedOut) << outcome.error().detail;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  auto late = client.exchange({.target = "/echo"}, in(-1ms));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().kind, HttpFailure::Kind::kTimedOut) << "no time left: nothing is sent";
}

TEST(HttpClient, ReadsAStreamUntilTheCallerHasEnough) {
  auto s = serve();
  HttpClient client(local(s->server->port()));
  HttpCall call{.method = "POST", .target = "/stream"};
  call.enough = [](std::string_view body) { return body.find("two\n") != std::string_view::npos; };
  auto outcome = client.exchange(std::move(call), in(5s));
  ASSERT_TRUE(outcome) << outcome.error().detail;
  EXPECT_EQ(outcome->status, 200);
  EXPECT_TRUE(outcome->body.starts_with("one\ntwo\n")) << outcome->body;

  HttpCall endless{.method = "POST", .target = "/stream"};
  endless.enough = [](std::string_view body) { return body.find("four") != std::string_view::npos; };
  auto waited = client.exchange(std::move(endless), in(300ms));
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().kind, HttpFailure::Kind::kTimedOut) << "a stream that never says enough ends at the deadline";
}

TEST(HttpClient, UnusableTlsFilesFailEveryCallBeforeAnythingIsSent) {
  auto s = serve();
  HttpClient client(HttpTarget{.host = "127.0.0.1", .port = std::to_string(s->server->port()), .tls = true, .caFile = "/nonexistent/ca.pem"});
  auto outcome = client.exchange({.target = "/echo"}, in(5s));
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().kind, HttpFailure::Kind::kSetup);
  EXPECT_NE(outcome.error().detail.find("/nonexistent/ca.pem"), std::string::npos) << outcome.error().detail;
  HttpClient halfPair(HttpTarget{.host = "127.0.0.1", .port = "1", .tls = true, .certFile = "/tmp/cert.pem"});
  auto half = halfPair.exchange({.target = "/"}, in(5s));
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().kind, HttpFailure::Kind::kSetup) << half.error().detail;
  EXPECT_EQ(s->requests.load(), 0);
}

TEST(HttpClient, TlsToAPlainServerFailsAsTls) {
  auto s = serve();
  HttpClient client(HttpTarget{.host = "127.0.0.1", .port = std::to_string(s->server->port()), .tls = true});
  auto outcome = client.exchange({.target = "/echo"}, in(5s));
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().kind, HttpFailure::Kind::kTls) << outcome.error().detail;
}

}  // namespace
}  // namespace switchyard::net

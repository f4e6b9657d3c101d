// The HTTP server every surface of yardd shares (net/http_server.h): what it tells handlers, and what it answers
// itself, in the format of the service on its port.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "composer/model/listen_address.h"
#include "net/http_server.h"
#include "tests/support/raw_http.h"

namespace switchyard::net {
namespace {

namespace http = boost::beast::http;

Handler echoPeer() {
  return [](const HttpRequest&, Reply reply, OpenStream, const std::string& peer) {
    HttpResponse res{http::status::ok, 11};
    res.body() = peer;
    reply(std::move(res));
  };
}

// Sends `bytes` as they are and reads the one answer.
http::response<http::string_body> exchange(int port, const std::string& bytes) { return switchyard::testing::rawHttpExchange(port, bytes); }

// The HTTP server hands each handler the client's address (without its port): what lockouts count by.
TEST(HttpServerPeer, IsTheClientsAddress) {
  auto server = HttpServer::start({"127.0.0.1:0", 1}, echoPeer());
  ASSERT_TRUE(server) << server.error().message;
  const auto res = exchange((*server)->port(), "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(res.body(), "127.0.0.1");
}

TEST(HttpServer, AnswersWhatNoHandlerSeesInTheFormatOfTheServiceOnItsPort) {
  HttpServerOptions options{"127.0.0.1:0", 1, 64};
  options.name = "--metrics-listen";
  options.errorResponse = [](http::status status, const std::string& message) {
    HttpResponse res{status, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = R"({"error":")" + message + R"("})";
    return res;
  };
  auto server = HttpServer::start(options, echoPeer());
  ASSERT_TRUE(server) << server.error().message;
  const auto tooLarge = exchange((*server)->port(), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'a'));
  EXPECT_EQ(tooLarge.result(), http::status::payload_too_large);
  EXPECT_EQ(tooLarge[http::field::content_type], "application/json");
  EXPECT_EQ(tooLarge.body(), R"({"error":"the request body is too large"})");
  const auto malformed = exchange((*server)->port(), "GET / HTTP/1.1\r\nHost x\r\n\r\n");
  EXPECT_EQ(malformed.result(), http::status::bad_request);
  EXPECT_NE(malformed.body().find("malformed HTTP request"), std::string::npos) << malformed.body();
  EXPECT_EQ(malformed.body().find("Base."), std::string::npos) << "no Redfish message id on a port that is not Redfish";

  // Without a format of its own, the server answers in plain text.
  auto plain = HttpServer::start({"127.0.0.1:0", 1, 64}, echoPeer());
  ASSERT_TRUE(plain) << plain.error().message;
  const auto res = exchange((*plain)->port(), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'a'));
  EXPECT_EQ(res.result(), http::status::payload_too_large);
  EXPECT_EQ(res.body(), "the request body is too large\n");
}

TEST(HttpServer, ABadAddressIsRefusedNamingTheFlagThatGaveIt) {
  HttpServerOptions options{"localhost-without-port"};
  options.name = "--metrics-listen";
  auto r = HttpServer::start(options, echoPeer());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message, "--metrics-listen localhost-without-port: expected HOST:PORT");
  options.listen = "127.0.0.1:http";
  r = HttpServer::start(options, echoPeer());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "--metrics-listen 127.0.0.1:http: the port must be a number from 0 (any free port) to 65535");
}

// N5: a port above 65535 once wrapped (":70000" bound 4464, ":65536" a random port, ":-1" 65535).
TEST(HttpServer, APortOutOfRangeIsRefusedNotWrapped) {
  for (const std::string listen : {"127.0.0.1:70000", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:", "127.0.0.1:0x50",
                                   "127.0.0.1:99999999999999999999"}) {
    HttpServerOptions options{listen};
    options.name = "--redfish-listen";
    auto r = HttpServer::start(options, echoPeer());
    ASSERT_FALSE(r) << listen << " was accepted (port " << (*r)->port() << ")";
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
    EXPECT_TRUE(r.error().message.starts_with("--redfish-listen " + listen + ": ")) << r.error().message;
  }
  const auto highest = parseListenAddress("[::1]:65535", "--listen");
  ASSERT_TRUE(highest) << highest.error().message;
  EXPECT_EQ(highest->host, "[::1]");
  EXPECT_EQ(highest->port, 65535);
  EXPECT_EQ(parseListenAddress("127.0.0.1:70000", "--listen").error().message,
            "--listen 127.0.0.1:70000: port 70000 is out of range: 0 (any free port) to 65535");
  // IPv6 in brackets, as operators write it, binds.
  auto v6 = HttpServer::start({"[::1]:0", 1}, echoPeer());
  if (v6) EXPECT_GT((*v6)->port(), 0);  // (a machine without IPv6 loopback cannot bind it; the address was still accepted)
  else EXPECT_EQ(v6.error().code, Code::kUnavailable) << v6.error().message;
}

// N1's class: whatever a handler does with a request's bytes, a throw answers that request 500 and the
// server goes on serving the next one (before, std::terminate ended yardd with every service in it).
TEST(HttpServer, AHandlerThatThrowsAnswers500AndTheServerGoesOn) {
  HttpServerOptions options{"127.0.0.1:0", 1};
  options.errorResponse = [](http::status status, const std::string& message) {
    HttpResponse res{status, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = R"({"error":")" + message + R"("})";
    return res;
  };
  auto server = HttpServer::start(options, [](const HttpRequest& request, Reply reply, OpenStream, const std::string&) {
    if (request.target() == "/throw") throw std::runtime_error("[json.exception.type_error.316] invalid UTF-8 byte");
    if (request.target() == "/answer-then-throw") {
      reply(HttpResponse{http::status::accepted, 11});
      throw 42;  // not even a std::exception
    }
    reply(HttpResponse{http::status::ok, 11});
  });
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  const auto thrown = exchange(port, "GET /throw HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(thrown.result(), http::status::internal_server_error);
  EXPECT_EQ(thrown.body(), R"({"error":"yardd failed to answer this request; the failure is in its log"})");
  EXPECT_EQ(exchange(port, "GET /answer-then-throw HTTP/1.1\r\nHost: x\r\n\r\n").result(), http::status::accepted)
      << "a request is answered once: the handler's own answer stands";
  EXPECT_EQ(exchange(port, "GET /fine HTTP/1.1\r\nHost: x\r\n\r\n").result(), http::status::ok);
}

// N3: open connections are capped; one over the cap is answered 503 at once and closed, and a slot frees
// when a connection ends.
TEST(HttpServer, ConnectionsOverTheCapAreRefusedWith503) {
  HttpServerOptions options{"127.0.0.1:0", 1};
  options.maxConnections = 3;
  auto server = HttpServer::start(options, echoPeer());
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  boost::asio::io_context io;
  std::vector<std::unique_ptr<boost::beast::tcp_stream>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<boost::beast::tcp_stream>(io));
    held.back()->connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  }
  for (int i = 0; i < 200 && (*server)->connections() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ((*server)->connections(), 3u);
  const auto refused = exchange(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(refused.result(), http::status::service_unavailable);
  EXPECT_EQ(refused[http::field::retry_after], "1");
  EXPECT_NE(refused.body().find("too many connections to this server (at most 3)"), std::string::npos) << refused.body();
  EXPECT_EQ((*server)->refusedConnections(), 1u);
  held.clear();  // the held connections go: their slots free
  for (int i = 0; i < 400 && (*server)->connections() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(exchange(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").body(), "127.0.0.1");
}

// N3: with no file descriptor left, accept() fails at once every time; the server backs off instead of
// spinning (it once burnt 93 % of a core writing 400,000 log lines a second).
#if defined(__SANITIZE_ADDRESS__)
#define SWITCHYARD_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWITCHYARD_TEST_UNDER_ASAN 1
#endif
#endif

TEST(HttpServer, AcceptFailuresBackOffInsteadOfSpinning) {
#ifdef SWITCHYARD_TEST_UNDER_ASAN
  // UBSan's vptr check reads memory through a pipe it opens: with no descriptor left, it reports every
  // virtual call as one on an invalid object. The test runs in the plain and TSan builds.
  GTEST_SKIP() << "ASan/UBSan need descriptors of their own";
#endif
  auto server = HttpServer::start({"127.0.0.1:0", 1}, echoPeer());
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Lower the limit to what is open now and a few more, then fill it with connections: the last clients sit
  // in the listen backlog, which the server cannot accept.
  int open = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) (void)entry, ++open;
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(open + 16);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> clients;
  while (true) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(static_cast<unsigned short>(port));
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) {
      ::close(fd);
      break;
    }
    clients.push_back(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server is out of descriptors now
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  getrusage(RUSAGE_SELF, &after);
  auto seconds = [](const rusage& r) {
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  const double cpu = seconds(after) - seconds(before);
  for (const int fd : clients) ::close(fd);
  setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_GT(clients.size(), 0u);
  EXPECT_LT(cpu, 0.25) << "the process used " << cpu << " s of CPU in 1 s while accept() failed";
  // Descriptors free again: the server accepts as before.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(exchange(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").body(), "127.0.0.1");
}

}  // namespace
}  // namespace switchyard::net

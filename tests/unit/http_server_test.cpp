// The HTTP server every surface of yardd shares (net/http_server.h): what it tells handlers, and what it answers
// itself, in the format of the service on its port.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "net/http_server.h"

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
http::response<http::string_body> exchange(int port, const std::string& bytes) {
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  boost::asio::write(stream, boost::asio::buffer(bytes));
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  boost::beast::error_code ec;
  http::read(stream, buffer, res, ec);
  return res;
}

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
  EXPECT_NE(r.error().message.find("--metrics-listen 127.0.0.1:http: the port is not a number"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace switchyard::net

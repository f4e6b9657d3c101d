// Tests that send an HTTP server bytes as they are (a target that is not UTF-8, a malformed head) and read its
// one answer, on loopback.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <string>

namespace switchyard::testing {

// Sends `bytes` to 127.0.0.1:`port` and reads the one answer; status 0 when none came within 10 s (the server
// closed the connection, or is gone).
inline boost::beast::http::response<boost::beast::http::string_body> rawHttpExchange(int port, const std::string& bytes) {
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(10));
  stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  boost::asio::write(stream, boost::asio::buffer(bytes));
  boost::beast::flat_buffer buffer;
  boost::beast::http::response<boost::beast::http::string_body> res;
  boost::beast::error_code ec;
  boost::beast::http::read(stream, buffer, res, ec);
  return res;
}

}  // namespace switchyard::testing

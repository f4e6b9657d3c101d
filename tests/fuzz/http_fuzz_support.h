// What the HTTP fuzz targets (Redfish, the operator endpoint) share: the request parsed as the server would,
// and a service's answer collected under the oracle every HTTP surface of yardd keeps (answered exactly once,
// within 10 s, a real status, JSON that parses when it says JSON). A broken rule aborts: libFuzzer's finding.
#pragma once

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "net/http_server.h"

namespace switchyard::fuzzing {

// A stream a fuzzer opens (a server-sent events resource): counts and ends at once.
class NullStream final : public net::StreamWriter {
 public:
  void send(std::string bytes) override { sent_ += bytes.size(); }
  void close() override {}
  void onClosed(std::function<void()> callback) override { callback(); }

 private:
  std::size_t sent_ = 0;
};

// The bytes as one HTTP request, or nothing when the HTTP layer would refuse them before any service.
inline std::optional<net::HttpRequest> parseRequest(const std::uint8_t* data, std::size_t size) {
  boost::beast::http::request_parser<boost::beast::http::string_body> parser;
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return std::nullopt;
  return parser.release();
}

// Runs `handle(reply, openStream)` for `request` and returns its one answer (an opened stream counts as a 200).
inline net::HttpResponse answerOnce(const net::HttpRequest& request, const std::function<void(net::Reply, net::OpenStream)>& handle) {
  auto answered = std::make_shared<std::promise<net::HttpResponse>>();
  auto once = std::make_shared<std::atomic<int>>(0);
  handle(
      [answered, once](net::HttpResponse res) {
        if (once->fetch_add(1) == 0) answered->set_value(std::move(res));
        else std::abort();  // answered twice
      },
      [answered, once](std::string) -> std::shared_ptr<net::StreamWriter> {
        if (once->fetch_add(1) == 0) answered->set_value(net::HttpResponse{boost::beast::http::status::ok, 11});
        return std::make_shared<NullStream>();
      });
  auto future = answered->get_future();
  if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) std::abort();  // never answered
  net::HttpResponse res = future.get();
  if (res.result_int() < 200 || res.result_int() > 599) std::abort();
  // A HEAD answer carries the GET's headers and no body.
  if (request.method() != boost::beast::http::verb::head && res[boost::beast::http::field::content_type].starts_with("application/json") &&
      nlohmann::json::parse(res.body(), nullptr, false).is_discarded())
    std::abort();  // said JSON, sent something else
  return res;
}

}  // namespace switchyard::fuzzing

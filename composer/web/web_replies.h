// The answers of the operator endpoint, shared by its reads (web_service.cpp) and the console's changes
// (console_actions.cpp): a response with the endpoint's headers and its JSON error body.
#pragma once

#include <boost/beast/http/status.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "composer/model/composition.h"
#include "net/http_server.h"

namespace switchyard::web {

[[nodiscard]] inline net::HttpResponse respond(boost::beast::http::status status, std::string_view contentType, std::string body, unsigned version,
                                               bool keepAlive) {
  net::HttpResponse res{status, version};
  res.set(boost::beast::http::field::server, "yardd");
  res.set(boost::beast::http::field::content_type, std::string(contentType));
  res.set(boost::beast::http::field::cache_control, "no-store");
  res.keep_alive(keepAlive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

[[nodiscard]] inline net::HttpResponse problem(boost::beast::http::status status, std::string message, unsigned version, bool keepAlive) {
  return respond(status, "application/json",
                 nlohmann::json{{"error", {{"code", static_cast<int>(status)}, {"message", std::move(message)}}}}.dump(
                     -1, ' ', false, nlohmann::json::error_handler_t::replace) +
                     "\n",
                 version, keepAlive);
}

}  // namespace switchyard::web

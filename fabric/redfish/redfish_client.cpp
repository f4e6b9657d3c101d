#include "fabric/redfish/redfish_client.h"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace switchyard::redfish {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Result<Endpoint> parseUrl(const std::string& url) {
  Endpoint e;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    e.tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return fail(Code::kInvalidArgument, fmt::format("{}: expected http(s)://HOST[:PORT]", url));
  }
  if (auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const auto colon = rest.rfind(':');
  e.host = colon == std::string::npos ? rest : rest.substr(0, colon);
  e.port = colon == std::string::npos ? (e.tls ? "443" : "80") : rest.substr(colon + 1);
  if (e.host.empty() || e.port.empty() || e.port.find_first_not_of("0123456789") != std::string::npos)
    return fail(Code::kInvalidArgument, fmt::format("{}: expected http(s)://HOST[:PORT]", url));
  return e;
}

namespace {

Code codeForStatus(int status) {
  switch (status) {
    case 400: return Code::kInvalidArgument;
    case 404: return Code::kNotFound;
    case 409: return Code::kFailedPrecondition;
    case 412: return Code::kFailedPrecondition;  // the resource changed since it was read: nothing was applied
    case 401:
    case 403: return Code::kFailedPrecondition;
    default: return status >= 500 ? Code::kUnavailable : Code::kInternal;
  }
}

// The message of a Redfish error body, or the status line.
std::string errorText(const nlohmann::json& body, int status) {
  if (body.is_object() && body.contains("error") && body["error"].is_object()) {
    const auto& e = body["error"];
    if (e.contains("@Message.ExtendedInfo") && e["@Message.ExtendedInfo"].is_array() && !e["@Message.ExtendedInfo"].empty() &&
        e["@Message.ExtendedInfo"][0].contains("Message"))
      return e["@Message.ExtendedInfo"][0]["Message"].get<std::string>();
    if (e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
  }
  return fmt::format("HTTP {}", status);
}

}  // namespace

Result<Response> Client::get(const std::string& path, Deadline deadline) const { return send("GET", path, std::nullopt, {}, deadline); }
Result<Response> Client::post(const std::string& path, const nlohmann::json& body, Deadline deadline) const {
  return send("POST", path, body, {}, deadline);
}
Result<Response> Client::patch(const std::string& path, const nlohmann::json& body, const std::string& ifMatch, Deadline deadline) const {
  return send("PATCH", path, body, ifMatch, deadline);
}
Result<Response> Client::del(const std::string& path, const std::string& ifMatch, Deadline deadline) const {
  return send("DELETE", path, std::nullopt, ifMatch, deadline);
}

Result<Response> Client::send(const std::string& method, const std::string& path, const std::optional<nlohmann::json>& body,
                              const std::string& ifMatch, Deadline deadline) const {
  const auto what = [&] { return fmt::format("{} {}", method, path); };
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero())
    return fail(Code::kDeadlineExceeded, fmt::format("{}: no time left before the call's deadline", what()));

  http::request<http::string_body> req{http::string_to_verb(method), path, 11};
  req.set(http::field::host, endpoint_.host);
  req.set(http::field::user_agent, "switchyard");
  req.set(http::field::accept, "application/json");
  req.set("OData-Version", "4.0");
  if (!endpoint_.token.empty()) {
    req.set("X-Auth-Token", endpoint_.token);
  } else if (!endpoint_.user.empty()) {
    const std::string credentials = endpoint_.user + ":" + endpoint_.password;
    std::string encoded(beast::detail::base64::encoded_size(credentials.size()), '\0');
    encoded.resize(beast::detail::base64::encode(encoded.data(), credentials.data(), credentials.size()));
    req.set(http::field::authorization, "Basic " + encoded);
  }
  if (!ifMatch.empty()) req.set(http::field::if_match, ifMatch);
  if (body) {
    req.set(http::field::content_type, "application/json");
    req.body() = body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  req.prepare_payload();

  // Beast's timeouts apply to asynchronous operations: run them on a private io_context until done.
  asio::io_context io;
  tcp::resolver resolver(io);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code failure;
  const auto remaining = [&] { return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()); };
  // Connect, then `exchange` (TLS handshake first when asked), on whichever stream this endpoint uses.
  auto exchange = [&](auto& stream, auto& lowest, auto&& afterConnect) {
    resolver.async_resolve(endpoint_.host, endpoint_.port, [&, afterConnect](beast::error_code ec, tcp::resolver::results_type results) mutable {
      if (ec) return void(failure = ec);
      lowest.expires_after(remaining());
      lowest.async_connect(results, [&, afterConnect](beast::error_code ec2, const tcp::endpoint&) mutable {
        if (ec2) return void(failure = ec2);
        afterConnect([&](beast::error_code ec3) {
          if (ec3) return void(failure = ec3);
          lowest.expires_after(remaining());
          http::async_write(stream, req, [&](beast::error_code ec4, std::size_t) {
            if (ec4) return void(failure = ec4);
            lowest.expires_after(remaining());
            http::async_read(stream, buffer, res, [&](beast::error_code ec5, std::size_t) { failure = ec5; });
          });
        });
      });
    });
    io.run();
    beast::error_code ignored;
    lowest.socket().shutdown(tcp::socket::shutdown_both, ignored);
  };
  std::string tlsProblem;
  if (endpoint_.tls) {
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    beast::error_code ec;
    if (endpoint_.caFile.empty())
      ctx.set_default_verify_paths(ec);
    else
      ctx.load_verify_file(endpoint_.caFile, ec);
    if (ec) return fail(Code::kInvalidArgument, fmt::format("TLS trust for {}: {}", endpoint_.host, ec.message()));
    ctx.set_verify_mode(asio::ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
    stream.set_verify_callback(asio::ssl::host_name_verification(endpoint_.host));
    SSL_set_tlsext_host_name(stream.native_handle(), endpoint_.host.c_str());
    exchange(stream, beast::get_lowest_layer(stream), [&](auto done) {
      beast::get_lowest_layer(stream).expires_after(remaining());
      stream.async_handshake(asio::ssl::stream_base::client, [done](beast::error_code ec2) { done(ec2); });
    });
    if (failure && failure.category() == asio::error::get_ssl_category()) tlsProblem = failure.message();
  } else {
    beast::tcp_stream stream(io);
    exchange(stream, stream, [](auto done) { done({}); });
  }
  if (!tlsProblem.empty())
    return fail(Code::kUnavailable, fmt::format("{}: TLS with {}:{} failed ({}); is its certificate trusted (--redfish-ca)?", what(), endpoint_.host,
                                                endpoint_.port, tlsProblem));
  if (failure == beast::error::timeout)
    return fail(Code::kDeadlineExceeded, fmt::format("{}: the Redfish service did not answer in time", what()));
  if (failure)
    return fail(Code::kUnavailable,
                fmt::format("{}: cannot reach the Redfish service at {}:{}: {}", what(), endpoint_.host, endpoint_.port, failure.message()));

  Response out;
  out.status = static_cast<int>(res.result_int());
  if (!res.body().empty()) {
    out.body = nlohmann::json::parse(res.body(), nullptr, false);
    if (out.body.is_discarded()) {
      if (out.status / 100 == 2) return fail(Code::kInternal, fmt::format("{}: the Redfish service answered malformed JSON", what()));
      out.body = nullptr;
    }
  }
  if (auto it = res.find(http::field::etag); it != res.end()) out.etag = std::string(it->value());
  if (auto it = res.find(http::field::location); it != res.end()) out.location = std::string(it->value());
  if (auto it = res.find("X-Auth-Token"); it != res.end()) out.authToken = std::string(it->value());
  if (out.status / 100 != 2)
    return fail(codeForStatus(out.status), fmt::format("{}: {} (HTTP {})", what(), errorText(out.body, out.status), out.status));
  return out;
}

}  // namespace switchyard::redfish

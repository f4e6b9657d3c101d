// Fuzz target: arbitrary bytes as an HTTP request into the Redfish service, end to end through the real
// engine (simulated fabric, SQLite in a temp dir). Whatever the bytes, the service must answer once with
// a well-formed response (a JSON body that parses when it says JSON) and never crash, hang or leak.
//
// Built two ways (tests/CMakeLists.txt): with clang and -fsanitize=fuzzer (-DSWITCHYARD_FUZZ=ON) for real
// fuzzing, and with a small replay main (replay_main.cpp) that runs the committed corpus in every CI build.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>

#include "composer/engine/engine.h"
#include "bmc/redfish_service.h"
#include "fabric/simulated_fabric.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"
#include "tests/support/identities.h"

namespace {

using namespace switchyard;
namespace http = boost::beast::http;

// A stream the fuzzer opens (the SSE resource): records and ends at once.
class NullStream final : public net::StreamWriter {
 public:
  void send(std::string bytes) override { sent_ += bytes.size(); }
  void close() override {}
  void onClosed(std::function<void()> callback) override { callback(); }

 private:
  std::size_t sent_ = 0;
};

struct World {
  World() {
    std::string dir = "/tmp/switchyard-fuzz-XXXXXX";
    if (!mkdtemp(dir.data())) std::abort();
    path = dir;
    fabric = std::move(*SimulatedFabric::create(defaultTopology(), clock, {}));
    store = std::move(*SqliteStore::open(path + "/yard.db"));
    engine = std::make_unique<Engine>(*fabric, *store, clock, EngineOptions{.fabricPollInterval = std::chrono::milliseconds(0)});
    if (!engine->start()) std::abort();
    accounts = std::make_unique<bmc::Accounts>(testing::makeIdentities({{"admin", "admin", "", "pw"}, {"viewer", "viewer", "", "pw"}}));
    service = std::make_unique<bmc::RedfishService>(*engine, *accounts);
  }
  std::string path;
  SystemClock clock;
  std::unique_ptr<SimulatedFabric> fabric;
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<bmc::Accounts> accounts;
  std::unique_ptr<bmc::RedfishService> service;
};

World& world() {
  static World* w = new World();  // lives for the process, as a daemon's would
  return *w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  http::request_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;  // the HTTP layer refuses it before the service sees it
  const net::HttpRequest request = parser.release();

  auto answered = std::make_shared<std::promise<net::HttpResponse>>();
  auto once = std::make_shared<std::atomic<int>>(0);
  world().service->handle(
      request,
      [answered, once](net::HttpResponse res) {
        if (once->fetch_add(1) == 0) answered->set_value(std::move(res));
        else std::abort();  // answered twice
      },
      [answered, once](std::string) -> std::shared_ptr<net::StreamWriter> {
        if (once->fetch_add(1) == 0) answered->set_value(net::HttpResponse{http::status::ok, 11});
        return std::make_shared<NullStream>();
      });
  auto future = answered->get_future();
  if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) std::abort();  // never answered
  const net::HttpResponse res = future.get();
  const unsigned status = res.result_int();
  if (status < 200 || status > 599) std::abort();
  // A HEAD answer carries the GET's headers and no body.
  if (request.method() != http::verb::head && res[http::field::content_type].starts_with("application/json") &&
      nlohmann::json::parse(res.body(), nullptr, false).is_discarded())
    std::abort();  // said JSON, sent something else
  return 0;
}

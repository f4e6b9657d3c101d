// Fuzz target: arbitrary bytes as an HTTP request into the operator endpoint (--metrics-listen: /metrics, the
// dashboard, /api/v1/*, its server-sent events, /healthz), end to end through the real engine (simulated
// fabric, SQLite in a temp dir) and the identities yardd authorizes it with. Whatever the bytes (a target,
// query or header that is not UTF-8 once stopped yardd), the service answers once with a well-formed response
// (a JSON body that parses when it says JSON) and never crashes, hangs or leaks.
//
// Built as the other targets are (tests/CMakeLists.txt): a libFuzzer binary in the fuzz build, and a replay of
// the committed corpus (tests/fuzz/corpus/web) in every build.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>

#include "bmc/accounts.h"
#include "composer/engine/engine.h"
#include "composer/web/web_service.h"
#include "fabric/simulated_fabric.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"
#include "tests/fuzz/http_fuzz_support.h"
#include "tests/support/identities.h"

namespace {

using namespace switchyard;

struct World {
  World() {
    std::string dir = "/tmp/switchyard-web-fuzz-XXXXXX";
    if (!mkdtemp(dir.data())) std::abort();
    path = dir;
    fabric = std::move(*SimulatedFabric::create(defaultTopology(), clock, {}));
    store = std::move(*SqliteStore::open(path + "/yard.db"));
    engine = std::make_unique<Engine>(*fabric, *store, clock, EngineOptions{.fabricPollInterval = std::chrono::milliseconds(0)});
    if (!engine->start()) std::abort();
    // Tokens only (a bearer check is a hash, not PBKDF2): the corpus uses "Bearer viewer" and "Bearer alice".
    accounts = std::make_unique<bmc::Accounts>(testing::makeIdentities(
        {{.name = "viewer", .role = "viewer", .token = "viewer"}, {.name = "alice", .role = "tenant", .tenant = "team-a", .token = "alice"}}));
    service = std::make_unique<web::WebService>(
        *engine, nullptr,
        [a = accounts.get()](const std::string& header, std::string_view peer, std::function<void(std::optional<Caller>)> then) {
          a->authorize(header, peer, std::move(then));
        },
        nullptr);
  }
  std::string path;
  SystemClock clock;
  std::unique_ptr<SimulatedFabric> fabric;
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<bmc::Accounts> accounts;
  std::unique_ptr<web::WebService> service;
};

World& world() {
  static World* w = new World();  // lives for the process, as a daemon's would
  return *w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto request = fuzzing::parseRequest(data, size);
  if (!request) return 0;  // the HTTP layer refuses it before the service sees it
  const net::HttpResponse res = fuzzing::answerOnce(
      *request, [&](net::Reply reply, net::OpenStream open) { world().service->handle(*request, std::move(reply), std::move(open), "127.0.0.1"); });
  if (res.result_int() >= 500 && res.result_int() != 503) std::abort();  // a request may be refused, never fail inside yardd
  return 0;
}

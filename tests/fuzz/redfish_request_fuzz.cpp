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
#include "tests/fuzz/http_fuzz_support.h"
#include "tests/support/identities.h"

namespace {

using namespace switchyard;

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
  const auto request = fuzzing::parseRequest(data, size);
  if (!request) return 0;  // the HTTP layer refuses it before the service sees it
  (void)fuzzing::answerOnce(*request, [&](net::Reply reply, net::OpenStream open) { world().service->handle(*request, std::move(reply), std::move(open)); });
  return 0;
}

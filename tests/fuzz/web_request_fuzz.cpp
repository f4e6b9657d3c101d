// Fuzz target: arbitrary bytes as an HTTP request into yardd's two JSON endpoints over HTTP: the operator endpoint
// (--metrics-listen: /metrics, the dashboard, /api/v1/*, its server-sent events, /healthz) and CoHDI's
// fabric-manager API (--cohdi-listen: paths under /id_manager, /fabric_manager and /cluster_manager), end to end
// through the real engine (simulated fabric, SQLite in a temp dir) and the identities yardd authorizes them with. Whatever the bytes (a target,
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
#include "composer/cohdi/fm_api_service.h"
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
    identities = testing::makeIdentities(
        {{.name = "viewer", .role = "viewer", .token = "viewer"}, {.name = "alice", .role = "tenant", .tenant = "team-a", .token = "alice"}});
    accounts = std::make_unique<bmc::Accounts>(identities);
    authenticator = std::make_unique<Authenticator>(identities.get(), &logins);
    cohdi = std::make_unique<cohdi::FmApiService>(*engine, *authenticator, identities.get());
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
  std::shared_ptr<const auth::Identities> identities;
  std::unique_ptr<bmc::Accounts> accounts;
  std::unique_ptr<web::WebService> service;
  auth::Sessions logins{clock};
  std::unique_ptr<Authenticator> authenticator;
  std::unique_ptr<cohdi::FmApiService> cohdi;
};

World& world() {
  static World* w = new World();  // lives for the process, as a daemon's would
  return *w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto request = fuzzing::parseRequest(data, size);
  if (!request) return 0;  // the HTTP layer refuses it before the service sees it
  const std::string_view target(request->target().data(), request->target().size());
  const bool cohdi = target.starts_with("/id_manager") || target.starts_with("/fabric_manager") || target.starts_with("/cluster_manager");
  const net::HttpResponse res = fuzzing::answerOnce(*request, [&](net::Reply reply, net::OpenStream open) {
    if (cohdi) return world().cohdi->handle(*request, std::move(reply), "127.0.0.1");
    world().service->handle(*request, std::move(reply), std::move(open), "127.0.0.1");
  });
  // A request may be refused, never fail inside yardd (503: not now; 501: a call the CoHDI API says it does not serve).
  if (res.result_int() >= 500 && res.result_int() != 503 && res.result_int() != 501) std::abort();
  return 0;
}

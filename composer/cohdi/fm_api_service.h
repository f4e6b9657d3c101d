// CoHDI's fabric-manager API (issue 64, ADR 0030, docs/kubernetes.md): the FTI-style REST calls that CoHDI's DRA
// driver and composable-resource operator make, served by yardd unchanged (`--cohdi-listen`), as one more adapter
// over the engine beside gRPC, Redfish and the console.
//
//   POST   /id_manager/realms/{realm}/protocol/openid-connect/token      password grant: a yardd login token
//   GET    /fabric_manager/api/v1/tenants                                 (Switchyard's) the tenants' UUIDs the caller may use
//   GET    /fabric_manager/api/v1/machines?tenant_uuid=                   hosts as machines
//   GET    /fabric_manager/api/v1/machines/{mach}?tenant_uuid=            one machine and its devices
//   GET    /fabric_manager/api/v1/machines/{mach}/available-reserved-resources?res_type=gpu&condition=
//   PATCH  /fabric_manager/api/v1/machines/{mach}/update?tenant_uuid=     attach N devices of a type and model
//   DELETE /fabric_manager/api/v1/machines/{mach}/update?tenant_uuid=     detach devices by res_uuid
//   GET    /cluster_manager/cluster_autoscaler/v2/tenants/{t}/clusters/{c}/nodegroups[/{group}]
//   GET    /cluster_manager/cluster_autoscaler/v3/tenants/{t}/clusters/{c}/machines/{mach}
//
// A machine is a host; the tenant a machine belongs to is the tenant of the system on it (a free host belongs to
// no one and is offered to every tenant); its devices are its system's. An attach composes the host's system
// (`cohdi-HOST`) or attaches to it; a detach of its last device decomposes it. Every change is the engine's own
// call with the caller's role and tenant (the same authorization, quotas and audit as gRPC), answered once the
// operation has ended, as CoHDI's clients expect (they read the attached device from the answer).
//
// Threads: reads answer on the HTTP thread from the engine's published view; a change takes one hop to the control
// thread to start its operation, then waits for it off every thread; a password check runs on a pool of its own.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "composer/api/authenticator.h"
#include "composer/auth/identities.h"
#include "composer/cohdi/fm_inventory.h"
#include "composer/engine/engine_client.h"
#include "net/http_server.h"
#include "net/route_table.h"

namespace switchyard::cohdi {

struct FmApiOptions {
  // How long a change is waited for before it is answered 504 (CoHDI's operator gives up after 180 s).
  std::chrono::milliseconds changeTimeout{150'000};
  std::chrono::seconds tokenLifetime{3600};  // the access tokens the token endpoint issues
  std::size_t maxChangesPerCaller = 32;      // changes one identity may have waiting at once; more: 429
};

class FmApiService {
 public:
  // `identities` null: no identities file (every caller is the local admin; tokens are issued to anyone).
  FmApiService(Engine& engine, const Authenticator& authenticator, const auth::Identities* identities, FmApiOptions options = {});
  ~FmApiService();
  FmApiService(const FmApiService&) = delete;
  FmApiService& operator=(const FmApiService&) = delete;

  void handle(const net::HttpRequest& request, net::Reply reply, const std::string& peer);
  // What the HTTP server answers itself on this port: the API's JSON error.
  [[nodiscard]] static net::HttpResponse errorResponse(boost::beast::http::status status, const std::string& message);

  // One request as its handler sees it.
  struct Call {
    const net::HttpRequest* request = nullptr;  // valid until the handler returns (copy what a later answer needs)
    net::RouteParams params;
    std::multimap<std::string, std::string> query;
    Caller caller;
    std::string peer;
    net::Reply reply;
    unsigned version = 11;
    bool keepAlive = true;
    void answer(boost::beast::http::status status, const nlohmann::json& body) const;
    void fail(const Error& error) const;
    void refuse(boost::beast::http::status status, std::string_view code, const std::string& message) const;
  };

 private:
  struct Route {
    bool anonymous = false;  // answered without a bearer token (the token endpoint)
    void (FmApiService::*handle)(Call call) = nullptr;
  };
  using Routes = net::RouteTable<Route>;
  [[nodiscard]] static Routes routeTable();

  void token(Call call);
  void tenants(Call call);
  void machines(Call call);
  void machine(Call call);
  void available(Call call);
  void attach(Call call);
  void detach(Call call);
  void nodeGroups(Call call);
  void nodeGroup(Call call);
  void nodeDetails(Call call);
  void resize(Call call);

  // A change (attach, detach). `start` runs on the control thread (unless the request's Idempotency-Key names an
  // earlier operation, which is waited for instead) and starts the operation, or names the one that holds the
  // machine's system; once the operation succeeded, `done` builds the answer from the machine as it is then.
  struct Started {
    std::optional<Operation> operation;  // the change's own
    OperationId busyWith;                // another operation holds the system: wait for it, then try again
    std::optional<nlohmann::json> answer;  // nothing to do: this is the answer
  };
  using Start = std::function<Result<Started>(EngineCore&, const std::string& requestId)>;  // the key, for the operation it starts
  using Done = std::function<nlohmann::json(const Inventory&, const Host&, const Operation&)>;
  void change(Call call, Start start, Done done);
  void waitForChange(std::shared_ptr<Call> call, const std::string& requestId, Start start, Done done,
                     std::chrono::steady_clock::time_point deadline);
  [[nodiscard]] Result<void> admitChange(const std::string& identity);
  void endChange(const std::string& identity);
  // A PATCH or DELETE .../update's body, and the tenant it acts for (the query's; the body may only repeat it).
  struct Update;
  [[nodiscard]] Result<Update> readUpdate(const Call& call) const;

  // The tenant a request acts for: its tenant_uuid, which a tenant caller may only set to its own.
  [[nodiscard]] Result<std::string> tenantOf(const Call& call, const PoolView& view) const;
  [[nodiscard]] Result<std::string> tenantNamed(const Caller& caller, const std::string& uuid, const PoolView& view) const;
  [[nodiscard]] std::vector<std::string> knownTenants(const PoolView& view) const;
  // Free devices per (fabric, kind, model; "" for every model) and GPUs held per tenant, counted once per published
  // view: the DRA driver asks every machine for every model, and a pass over the devices each time would cost
  // machines x devices per round of its questions.
  struct FreeCounts;
  [[nodiscard]] std::shared_ptr<const FreeCounts> freeCounts(const Inventory& inventory);

  const Routes routes_ = routeTable();
  boost::asio::thread_pool replies_{1};  // where the engine's answers are turned into JSON and sent
  EngineClient engine_;
  ShapeFactsCache shapeFacts_;
  std::mutex countsMutex_;
  std::shared_ptr<const FreeCounts> counts_;  // of the view counts_->version names
  const Authenticator& authenticator_;
  const auth::Identities* identities_;
  FmApiOptions options_;
  std::mutex changesMutex_;
  std::map<std::string, std::size_t> changesByCaller_;
  boost::asio::thread_pool logins_{2};  // password checks (PBKDF2 is slow on purpose): never on the HTTP threads
};

}  // namespace switchyard::cohdi

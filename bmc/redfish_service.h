// The northbound Redfish service: an adapter over the Engine like composer/api is for gRPC. It speaks
// the Redfish protocol (OData-Version, ETag/If-Match, Allow, Location, Redfish error bodies with Base and
// Composition registry messages, Basic auth and session tokens) over net::HttpServer, and maps:
//   Systems            physical hosts (SystemType Physical) and composed systems (SystemType Composed)
//   Compose action     a manifest of ComposeSystem stanzas: Preview, PreviewReserve (a reservation holds
//                      the blocks), Apply (all stanzas placed together or none), Apply of a ReservationId
//   CompositionReservations  what PreviewReserve holds; DELETE releases
//   POST Systems       compose: specific (Links.ResourceBlocks: a host's block + device blocks) or
//                      constrained (Processors.Members[{"@Redfish.RequestedCount": N, "ProcessorType": "GPU"}])
//   DELETE Systems/X   decompose
//   CompositionService ResourceBlocks (one per device, one per host), ResourceZones
//   TaskService        yardd operations; compose/decompose answer 202 with a task monitor
//   EventService       server-sent events: every engine event as a Redfish Event, pushed (no polling)
//   Reset action       ComputerSystem.Reset of a host, or of a system composed on it, passed to the host's BMC
//   Managers           yardd itself (ManagerType Service)
// Every call goes through the EngineClient with the account as Caller: no thread waits on the engine.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <atomic>
#include <chrono>
#include <memory>

#include "bmc/accounts.h"
#include "bmc/http_vocabulary.h"
#include "bmc/redfish_resources.h"
#include "composer/engine/engine_client.h"
#include "net/route_table.h"

namespace switchyard::bmc {

class RedfishService {
 public:
  // Engine calls complete on the service's own pool (work_), where the replies are built.
  RedfishService(Engine& engine, Accounts& accounts)
      : engine_(engine, [this](std::function<void()> f) { boost::asio::post(work_, std::move(f)); }), accounts_(accounts), routes_(routeTable()) {}
  ~RedfishService() {
    power_.join();
    work_.join();
  }
  RedfishService(const RedfishService&) = delete;
  RedfishService& operator=(const RedfishService&) = delete;

  // The HttpServer handler; `peer` is the client's address (password lockouts count by it too).
  void handle(const HttpRequest& request, Reply reply, OpenStream openStream, const std::string& peer = {});
  // How long a PreviewReserve holds its blocks (PATCH CompositionService ReservationDuration changes it).
  [[nodiscard]] std::chrono::seconds reservationDuration() const { return std::chrono::seconds(reservationSeconds_.load()); }
  void setReservationDuration(std::chrono::seconds d) { reservationSeconds_.store(d.count()); }
  // Waits for the replies being built (after the engine stopped, before the HTTP server stops).
  void drain() {
    power_.join();
    work_.join();
  }
  // What ComputerSystem.Reset calls for a host with a BMC (yardd: the bmc-reset hosts' BmcResetHosts::reset). It
  // blocks on the BMC, so it runs on a thread of its own (resets one at a time), never where reads are answered.
  // Set before the service takes requests; without one, a reset is refused.
  using HostReset = std::function<Result<void>(const HostId& host, const std::string& resetType)>;
  void setHostReset(HostReset reset) { hostReset_ = std::move(reset); }

 private:
  struct Call;
  // What a route's method needs of the caller, and what handles it (redfish_routes.cpp).
  struct RouteEntry {
    enum class Need { kAnyone, kAccount, kCompose, kAdmin };  // kCompose: a tenant, operator or administrator
    Need need = Need::kAccount;
    std::string_view forbidden;  // the 403's message when the caller's role falls short
    std::function<void(RedfishService&, const std::shared_ptr<Call>&, const net::RouteParams&)> handle;
  };
  using Routes = net::RouteTable<RouteEntry>;
  // Every path the service serves, its methods and what each needs: 404, 405 and Allow follow from it.
  [[nodiscard]] static Routes routeTable();
  void route(const std::shared_ptr<Call>& call);
  // The rest of route() once the caller is known (or nothing: 401), on whichever thread found it out.
  // `found`: what the route table found for the call's path and method (or why nothing: 404 or 405).
  void authenticated(const std::shared_ptr<Call>& call, const std::optional<Caller>& caller,
                     const std::expected<Routes::Found, Routes::Miss>& found);
  // Answers a read with `body` (304 on a matching If-None-Match; HEAD without the body), or the view built first.
  void replyRead(const std::shared_ptr<Call>& call, const json& body);
  void replyViewed(const std::shared_ptr<Call>& call, unsigned needs, std::function<json(const PoolView&)> body);
  void resourceBlock(const std::shared_ptr<Call>& call, const std::string& id);
  // The part of a device's block its Processors, Drives or Memory names (…/ResourceBlocks/ID/Memory/ID).
  void resourceBlockPart(const std::shared_ptr<Call>& call, const std::string& id, const std::string& collection, const std::string& part);
  void tasks(const std::shared_ptr<Call>& call);
  void oneTask(const std::shared_ptr<Call>& call, const std::string& id);
  void sessions(const std::shared_ptr<Call>& call, const std::string& id);
  void logout(const std::shared_ptr<Call>& call, const std::string& id);
  void compose(const std::shared_ptr<Call>& call);
  // CompositionService.Compose with a manifest of one or more ComposeSystem stanzas: Preview (what would
  // be composed, nothing held), PreviewReserve (held for reservationDuration()) or Apply (placed together
  // and composed, or refused whole), or Apply with a ReservationId.
  void composeAction(const std::shared_ptr<Call>& call);
  void applyReservation(const std::shared_ptr<Call>& call, const std::string& id);
  // `missingIsBlock`: kNotFound names a resource block (400 ResourceBlockNotFound), else a resource (404).
  void startComposeAll(const std::shared_ptr<Call>& call, std::function<Result<std::vector<Operation>>(EngineCore&)> compose, bool missingIsBlock = true);
  // GET of the reservations the caller may see, one of them, and DELETE (release).
  void reservations(const std::shared_ptr<Call>& call, const std::string& id);
  void releaseReservation(const std::shared_ptr<Call>& call, const std::string& id);
  // PATCH of the service's settings: CompositionService.ReservationDuration, SessionService.SessionTimeout.
  void patchSettings(const std::shared_ptr<Call>& call);
  void startCompose(const std::shared_ptr<Call>& call, ComposeRequest request);
  // Runs `change` on the engine; answers 202 with its task monitor, or the error (412 for a stale ETag).
  void startChange(const std::shared_ptr<Call>& call, std::function<Result<Operation>(EngineCore&)> change, bool composing);
  // On the control thread: the system's current ETag matches `tag` (always, when `tag` is empty).
  [[nodiscard]] Result<void> checkSystemTag(const Caller& caller, const std::string& id, const std::string& tag);
  [[nodiscard]] Result<ComposeRequest> resolveHost(ComposeRequest request);
  void decompose(const std::shared_ptr<Call>& call, const std::string& id);
  // PATCH of a ComputerSystem's GPU count (Processors @Redfish.RequestedCount, or Sunfish's @Redfish.RequestCount):
  // attach, detach, compose or decompose to reach it (redfish_resize.cpp).
  void resizeSystem(const std::shared_ptr<Call>& call, const std::string& id);
  // ComputerSystem.AddResourceBlock / RemoveResourceBlock: attach or detach one device.
  void changeBlocks(const std::shared_ptr<Call>& call, const std::string& id, bool add);
  void taskMonitor(const std::shared_ptr<Call>& call, const std::string& id);
  // ComputerSystem.Reset of a host or a composed system (redfish_power.cpp).
  void resetSystem(const std::shared_ptr<Call>& call, const std::string& id);
  // The operation behind a task, or NOT_FOUND when it is another tenant's (on the control thread).
  [[nodiscard]] static Result<Operation> visibleOperation(EngineCore& core, const Caller& caller, const std::string& id);
  void login(const std::shared_ptr<Call>& call);
  // GET /redfish/v1/EventService/SSE: the engine's events, pushed as they happen.
  void eventStream(const std::shared_ptr<Call>& call);
  // Reads what `needs` names of the pool in one engine call, then builds the answer on the service's own pool.
  enum Need : unsigned { kHosts = 1, kSystems = 2, kDevices = 4, kTopology = 8 };
  void withView(const std::shared_ptr<Call>& call, unsigned needs, std::function<HttpResponse(const PoolView&)> build);

  boost::asio::thread_pool work_{2};  // before engine_: its completions are posted here
  boost::asio::thread_pool power_{1};  // resets, which wait on a host's BMC
  HostReset hostReset_;
  EngineClient engine_;
  Accounts& accounts_;
  const Routes routes_;
  std::atomic<long long> reservationSeconds_{600};
};

}  // namespace switchyard::bmc

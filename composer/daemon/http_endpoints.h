// yardd's HTTP steps: the metrics/dashboard endpoint (--metrics-listen) and the Redfish service
// (--redfish-listen), each another adapter over the same engine on a Beast server of its own.
#pragma once

#include <filesystem>
#include <memory>

#include "bmc/accounts.h"
#include "net/http_server.h"
#include "bmc/redfish_service.h"
#include "composer/cohdi/fm_api_service.h"
#include "composer/daemon/daemon_options.h"
#include "composer/engine/engine.h"
#include "composer/web/capacity_history.h"
#include "composer/web/web_service.h"

namespace switchyard {

struct WebEndpoint {
  std::unique_ptr<web::CapacityHistory> capacityHistory;  // the dashboard's chart: a capacity sample per interval
  std::unique_ptr<web::WebService> service;
  std::unique_ptr<net::HttpServer> server;
};

struct RedfishEndpoint {
  std::unique_ptr<bmc::RedfishService> service;
  std::unique_ptr<net::HttpServer> server;
};

struct CohdiEndpoint {
  std::unique_ptr<cohdi::FmApiService> service;
  std::unique_ptr<net::HttpServer> server;
};

// /metrics, the dashboard and its JSON API; TLS with --metrics-tls (a self-signed certificate is made when
// none is given). `accounts` null: no credentials asked (yardd runs without --identities).
[[nodiscard]] Result<WebEndpoint> startWebEndpoint(const DaemonOptions& o, Engine& engine, Clock& clock,
                                                   const metrics::EngineMetrics* metrics, bmc::Accounts* accounts);

// The Redfish service; needs the accounts its clients log in with. `hostReset`: what ComputerSystem.Reset passes a
// reset to (the bmc-reset hosts' BMCs).
[[nodiscard]] Result<RedfishEndpoint> startRedfishEndpoint(const DaemonOptions& o, Engine& engine, bmc::Accounts* accounts,
                                                           bmc::RedfishService::HostReset hostReset);

// CoHDI's fabric-manager API (--cohdi-listen), always over TLS (CoHDI's clients speak only https). `identities`
// null: every caller is the local admin.
[[nodiscard]] Result<CohdiEndpoint> startCohdiEndpoint(const DaemonOptions& o, Engine& engine, const Authenticator& authenticator,
                                                       const auth::Identities* identities);

}  // namespace switchyard

#include "composer/engine/engine.h"
#include "composer/daemon/http_endpoints.h"

#include <spdlog/spdlog.h>

#include "bmc/redfish_protocol.h"
#include "composer/daemon/loopback.h"
#include "composer/model/durable_file.h"
#include "net/tls_certificate.h"

namespace switchyard {

Result<WebEndpoint> startWebEndpoint(const DaemonOptions& o, Engine& engine, Clock& clock, const metrics::EngineMetrics* metrics,
                                     bmc::Accounts* accounts) {
  const std::string metricsHost = hostOfListen(o.metricsListen);
  net::HttpServerOptions httpOptions{o.metricsListen};
  httpOptions.name = "--metrics-listen";
  httpOptions.errorResponse = web::WebService::errorResponse;
  if (o.metricsTls) {
    net::CertificateFiles files{o.metricsCert.empty() ? o.stateDir / "metrics-cert.pem" : o.metricsCert,
                                o.metricsKey.empty() ? o.stateDir / "metrics-key.pem" : o.metricsKey};
    auto made = net::ensureCertificate(files, metricsHost);
    if (!made) return fail(made.error().code, "metrics: " + made.error().message);
    httpOptions.tls = files;
  } else if (accounts && !isLoopbackHost(metricsHost)) {
    spdlog::warn("metrics and dashboard on plain HTTP off loopback: HTTP Basic passwords and tokens cross the network in the clear; "
                 "consider --metrics-tls");
  }
  WebEndpoint web;
  web.capacityHistory = std::make_unique<web::CapacityHistory>(
      engine, clock, std::chrono::milliseconds(static_cast<std::int64_t>(o.capacitySampleSeconds * 1000)));
  web.capacityHistory->start();
  net::Authorize authorize;  // none without identities: every caller is local
  if (accounts)
    authorize = [accounts](const std::string& header, std::string_view peer, std::function<void(std::optional<Caller>)> then) {
      accounts->authorize(header, peer, std::move(then));
    };
  // The console's login checks a name and password as HTTP Basic would (the same lockouts of guessing).
  web::ConsoleOptions console{.secureCookie = httpOptions.tls.has_value(), .clock = &clock};
  if (accounts) {
    console.login = [accounts](const std::string& name, const std::string& password, std::string_view peer,
                               std::function<void(std::optional<Caller>, std::uint64_t)> then) {
      accounts->checkPassword(name, password, std::string(peer), std::move(then));
    };
    console.current = [accounts](std::string_view identity, std::uint64_t generation) { return accounts->identities().current(identity, generation); };
  }
  web.service = std::make_unique<web::WebService>(engine, metrics, std::move(authorize), web.capacityHistory.get(),
                                                  *web::parseDeviceSeries(o.metricsDeviceSeries), std::move(console));  // CLI11 checked it
  auto started = net::HttpServer::start(httpOptions, [w = web.service.get()](const net::HttpRequest& req, net::Reply reply,
                                                                              net::OpenStream openStream, const std::string& peer) {
    w->handle(req, std::move(reply), openStream, peer);
  });
  if (!started) {
    web.capacityHistory->stop();
    return std::unexpected(started.error());  // its message names --metrics-listen
  }
  web.server = std::move(*started);
  spdlog::info("metrics on {}://{}:{}/metrics, dashboard at /{}", httpOptions.tls ? "https" : "http", metricsHost, web.server->port(),
               accounts ? " (credentials needed)" : "");
  SY_TRY(writePortFile(o.metricsPortFile, web.server->port()));
  return web;
}

Result<RedfishEndpoint> startRedfishEndpoint(const DaemonOptions& o, Engine& engine, bmc::Accounts* accounts) {
  if (!accounts)
    return fail(Code::kInvalidArgument,
                "--redfish-listen needs --identities FILE (the accounts Redfish clients log in with; see docs/security.md)");
  const std::string host = hostOfListen(o.redfishListen);
  net::HttpServerOptions httpOptions{o.redfishListen};
  httpOptions.name = "--redfish-listen";
  httpOptions.errorResponse = bmc::redfish_protocol::serverError;
  if (!o.redfishHttp) {
    net::CertificateFiles files{o.redfishCert.empty() ? o.stateDir / "redfish-cert.pem" : o.redfishCert,
                                o.redfishKey.empty() ? o.stateDir / "redfish-key.pem" : o.redfishKey};
    auto made = net::ensureCertificate(files, host);
    if (!made) return fail(made.error().code, "redfish: " + made.error().message);
    if (*made)
      spdlog::warn("redfish: made a self-signed TLS certificate {} (key {}); clients trust it by pinning that file, or configure "
                   "--redfish-cert/--redfish-key",
                   files.certificate.string(), files.key.string());
    httpOptions.tls = files;
  }
  RedfishEndpoint redfish;
  redfish.service = std::make_unique<bmc::RedfishService>(engine, *accounts);
  auto started = net::HttpServer::start(httpOptions, [r = redfish.service.get()](const net::HttpRequest& req, net::Reply reply,
                                                                                  net::OpenStream open, const std::string& peer) {
    r->handle(req, std::move(reply), std::move(open), peer);
  });
  if (!started) return std::unexpected(started.error());  // its message names --redfish-listen
  redfish.server = std::move(*started);
  if (httpOptions.tls)
    spdlog::info("Redfish service on https://{}:{}", host, redfish.server->port());
  else
    spdlog::warn("Redfish service on http://{}:{} (plain HTTP: Basic auth sends passwords in the clear)", host, redfish.server->port());
  SY_TRY(writePortFile(o.redfishPortFile, redfish.server->port()));
  return redfish;
}

Result<CohdiEndpoint> startCohdiEndpoint(const DaemonOptions& o, Engine& engine, const Authenticator& authenticator,
                                         const auth::Identities* identities) {
  const std::string host = hostOfListen(o.cohdiListen);
  net::HttpServerOptions httpOptions{o.cohdiListen};
  httpOptions.name = "--cohdi-listen";
  httpOptions.errorResponse = cohdi::FmApiService::errorResponse;
  net::CertificateFiles files{o.cohdiCert.empty() ? o.stateDir / "cohdi-cert.pem" : o.cohdiCert,
                              o.cohdiKey.empty() ? o.stateDir / "cohdi-key.pem" : o.cohdiKey};
  auto made = net::ensureCertificate(files, host);
  if (!made) return fail(made.error().code, "cohdi: " + made.error().message);
  if (*made)
    spdlog::warn("cohdi: made a self-signed TLS certificate {} (key {}); give CoHDI that file as its secret's certificate, or configure "
                 "--cohdi-cert/--cohdi-key",
                 files.certificate.string(), files.key.string());
  httpOptions.tls = files;
  if (!identities && !isLoopbackHost(host))
    spdlog::warn("--cohdi-listen off loopback without --identities: anyone who reaches it can attach and detach devices as an admin");
  CohdiEndpoint cohdi;
  cohdi.service = std::make_unique<cohdi::FmApiService>(engine, authenticator, identities);
  auto started = net::HttpServer::start(httpOptions, [s = cohdi.service.get()](const net::HttpRequest& req, net::Reply reply, net::OpenStream,
                                                                             const std::string& peer) { s->handle(req, std::move(reply), peer); });
  if (!started) return std::unexpected(started.error());  // its message names --cohdi-listen
  cohdi.server = std::move(*started);
  spdlog::info("CoHDI fabric-manager API on https://{}:{}/fabric_manager/api/v1 (token: /id_manager/realms/REALM/protocol/openid-connect/token)",
               host, cohdi.server->port());
  SY_TRY(writePortFile(o.cohdiPortFile, cohdi.server->port()));
  return cohdi;
}

}  // namespace switchyard

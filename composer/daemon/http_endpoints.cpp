#include "composer/engine/engine.h"
#include "composer/daemon/http_endpoints.h"

#include <spdlog/spdlog.h>

#include "bmc/redfish_protocol.h"
#include "composer/daemon/loopback.h"
#include "composer/model/durable_file.h"
#include "net/tls_certificate.h"

namespace switchyard {

namespace {

// An endpoint's TLS files: the ones given, else <state-dir>/NAME-cert.pem and NAME-key.pem, made self-signed for
// `host` at first start; `trustHint` (empty: say nothing) tells the log how clients come to trust a made one.
Result<net::CertificateFiles> endpointCertificate(const DaemonOptions& o, const std::string& name, const std::filesystem::path& cert,
                                                  const std::filesystem::path& key, const std::string& host, std::string_view trustHint) {
  net::CertificateFiles files{cert.empty() ? o.stateDir / (name + "-cert.pem") : cert, key.empty() ? o.stateDir / (name + "-key.pem") : key};
  auto made = net::ensureCertificate(files, host);
  if (!made) return fail(made.error().code, name + ": " + made.error().message);
  if (*made && !trustHint.empty())
    spdlog::warn("{}: made a self-signed TLS certificate {} (key {}); {}", name, files.certificate.string(), files.key.string(), trustHint);
  return files;
}

}  // namespace

Result<WebEndpoint> startWebEndpoint(const DaemonOptions& o, Engine& engine, Clock& clock, const metrics::EngineMetrics* metrics,
                                     bmc::Accounts* accounts) {
  const std::string metricsHost = hostOfListen(o.metricsListen);
  net::HttpServerOptions httpOptions{o.metricsListen};
  httpOptions.name = "--metrics-listen";
  httpOptions.errorResponse = web::WebService::errorResponse;
  if (o.metricsTls) {
    SY_ASSIGN(httpOptions.tls, endpointCertificate(o, "metrics", o.metricsCert, o.metricsKey, metricsHost, {}));
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

Result<RedfishEndpoint> startRedfishEndpoint(const DaemonOptions& o, Engine& engine, bmc::Accounts* accounts,
                                             bmc::RedfishService::HostReset hostReset) {
  if (!accounts)
    return fail(Code::kInvalidArgument,
                "--redfish-listen needs --identities FILE (the accounts Redfish clients log in with; see docs/security.md)");
  const std::string host = hostOfListen(o.redfishListen);
  net::HttpServerOptions httpOptions{o.redfishListen};
  httpOptions.name = "--redfish-listen";
  httpOptions.errorResponse = bmc::redfish_protocol::serverError;
  if (!o.redfishHttp) {
    SY_ASSIGN(httpOptions.tls, endpointCertificate(o, "redfish", o.redfishCert, o.redfishKey, host,
                                                   "clients trust it by pinning that file, or configure --redfish-cert/--redfish-key"));
  }
  RedfishEndpoint redfish;
  redfish.service = std::make_unique<bmc::RedfishService>(engine, *accounts);
  redfish.service->setHostReset(std::move(hostReset));
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
  SY_ASSIGN(httpOptions.tls, endpointCertificate(o, "cohdi", o.cohdiCert, o.cohdiKey, host,
                                                 "give CoHDI that file as its secret's certificate, or configure --cohdi-cert/--cohdi-key"));
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

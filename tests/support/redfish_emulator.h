// A Redfish service for tests, over real HTTP on 127.0.0.1 (port 0): serves a DMTF mockup tree from
// ../shared/redfish-mockups and lets clients change Zones as a fabric manager would (POST creates,
// PATCH with If-Match replaces the endpoints, DELETE removes; a target endpoint is in at most one zone,
// as a PCIe/CXL device is bound to at most one host; a CXL switch's VCSs and vPPBs follow the zones, as
// the switch a fabric manager drives would). Faults: per-request latency, failing the next
// requests with a status, and health changes. "$expand=.($levels=N)" as the mockup's service root offers it
// (ProtocolFeaturesSupported.ExpandQuery), else 501. Basic auth on everything but the service root. HTTPS when
// given a certificate (clients then verify it, as they would a real manager's).
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "composer/model/clock.h"
#include "composer/model/error.h"

namespace switchyard::testing {

class RedfishEmulator {
 public:
  struct Options {
    std::filesystem::path mockup;  // a short-form mockup folder (its index.json is /redfish/v1)
    std::string user = "admin";
    std::string password = "switchyard";
    // HTTPS with this certificate and key (PEM), e.g. from net::ensureCertificate; empty: plain HTTP.
    std::filesystem::path tlsCertificate;
    std::filesystem::path tlsKey;
  };
  [[nodiscard]] static Result<std::unique_ptr<RedfishEmulator>> start(Options options);
  ~RedfishEmulator();
  RedfishEmulator(const RedfishEmulator&) = delete;
  RedfishEmulator& operator=(const RedfishEmulator&) = delete;

  [[nodiscard]] std::string url() const { return (tls() ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_); }
  [[nodiscard]] bool tls() const { return !options_.tlsCertificate.empty(); }
  [[nodiscard]] const Options& options() const { return options_; }

  // Every request waits this long before it is handled (a slow switch manager).
  void setLatency(Duration latency);
  // The next `n` requests (of `method` only, when given) fail with `status` (a Redfish error body),
  // changing nothing.
  void failNext(int n, int status = 503, std::string method = {});
  // The next `n` requests get no answer: the connection is closed on them (a crashed or unplugged manager).
  void dropNext(int n);
  // Sets Status.Health of a resource ("OK", "Warning", "Critical").
  [[nodiscard]] bool setHealth(const std::string& uri, const std::string& health);
  // Removes every zone of a Zones collection (a fabric with nothing bound).
  void clearZones(const std::string& collection);
  // A CXL switch that lost a binding its zones still ask for (a link that went down): every vPPB bound to
  // this downstream port becomes Unbound until the next zone change. False when none was bound to it.
  bool dropVppbBinding(const std::string& downstreamPort);
  // ComputerSystem.Reset requests applied so far (any system).
  [[nodiscard]] int resets() const;
  // Sessions open now (created by POST SessionService/Sessions, ended by DELETE).
  [[nodiscard]] std::size_t sessions() const;
  // Requests handled so far with this method ("GET", "POST", ...).
  [[nodiscard]] std::uint64_t requests(const std::string& method) const;
  // The most requests that were being handled at once (waiting out the latency included) since the last reset.
  [[nodiscard]] int maxInFlight() const { return maxInFlight_.load(); }
  void resetMaxInFlight() { maxInFlight_ = inFlight_.load(); }

 private:
  explicit RedfishEmulator(Options options);
  struct Reply {
    int status = 200;
    nlohmann::json body;
    std::string etag;
    std::string location;
    std::string token;  // X-Auth-Token of a new session
  };
  [[nodiscard]] Result<void> load();
  // A CXL fabric manager's switch side: each VirtualCXLSwitch's vPPBs bound to the downstream ports of the
  // targets zoned with the initiator behind its upstream port, and nothing else (mutex_ held).
  void bindVppbsToZones();
  void acceptLoop();
  struct Connection;
  void serve(std::shared_ptr<Connection> connection);
  // The request loop over a plain or TLS stream.
  template <typename Stream>
  void serveOn(Stream& stream);
  [[nodiscard]] Reply handle(const std::string& method, std::string path, const std::string& authorization, const std::string& token,
                             const std::string& ifMatch, const std::string& body);
  [[nodiscard]] Reply login(const std::string& body);
  [[nodiscard]] Reply resetSystem(const std::string& path, const std::string& body);
  [[nodiscard]] Reply changeZone(const std::string& method, const std::string& path, const std::string& ifMatch, const std::string& body);
  // A target endpoint already in another zone than `except`, or empty.
  [[nodiscard]] std::string zonedElsewhere(const std::vector<std::string>& endpoints, const std::string& except) const;
  [[nodiscard]] std::string etagOf(const std::string& uri) const;
  void expand(nlohmann::json& node, int levels) const;  // mutex_ held

  Options options_;
  struct Net;
  std::unique_ptr<Net> net_;
  int port_ = 0;
  std::thread acceptor_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> inFlight_{0};
  std::atomic<int> maxInFlight_{0};

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, nlohmann::json> resources_;  // URI without trailing slash -> body
  std::map<std::string, std::uint64_t> versions_;
  std::map<std::string, std::uint64_t> requests_;
  Duration latency_{0};
  int failNext_ = 0;
  int failStatus_ = 503;
  std::string failMethod_;
  int dropNext_ = 0;
  int resets_ = 0;
  std::map<std::string, std::string> sessions_;  // token -> session URI
  int nextSession_ = 1;
  std::vector<std::thread> workers_;
  std::vector<std::weak_ptr<Connection>> open_;
};

}  // namespace switchyard::testing

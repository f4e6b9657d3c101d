#include "tests/support/redfish_emulator.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "composer/model/base64.h"

namespace switchyard::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;

struct RedfishEmulator::Net {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::ssl::context tls{asio::ssl::context::tls_server};
};

struct RedfishEmulator::Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
};

namespace {

std::string trimmed(std::string uri) {
  if (auto q = uri.find('?'); q != std::string::npos) uri.resize(q);
  while (uri.size() > 1 && uri.back() == '/') uri.pop_back();
  return uri;
}

json errorBody(const std::string& id, const std::string& message) {
  return {{"error",
           {{"code", "Base.1.19." + id},
            {"message", message},
            {"@Message.ExtendedInfo", json::array({{{"MessageId", "Base.1.19." + id}, {"Message", message}, {"Severity", "Warning"}}})}}}};
}

std::vector<std::string> endpointLinks(const json& resource) {
  std::vector<std::string> out;
  if (!resource.contains("Links") || !resource["Links"].contains("Endpoints")) return out;
  for (const auto& e : resource["Links"]["Endpoints"])
    if (e.is_object() && e.contains("@odata.id") && e["@odata.id"].is_string()) out.push_back(trimmed(e["@odata.id"].get<std::string>()));
  return out;
}

}  // namespace

RedfishEmulator::RedfishEmulator(Options options) : options_(std::move(options)), net_(std::make_unique<Net>()) {}

Result<std::unique_ptr<RedfishEmulator>> RedfishEmulator::start(Options options) {
  std::unique_ptr<RedfishEmulator> e(new RedfishEmulator(std::move(options)));
  SY_TRY(e->load());
  beast::error_code ec;
  if (e->tls()) {
    e->net_->tls.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                             asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    e->net_->tls.use_certificate_chain_file(e->options_.tlsCertificate.string(), ec);
    if (!ec) e->net_->tls.use_private_key_file(e->options_.tlsKey.string(), asio::ssl::context::pem, ec);
    if (ec) return fail(Code::kInvalidArgument, fmt::format("redfish emulator: cannot use {} / {}: {}", e->options_.tlsCertificate.string(),
                                                            e->options_.tlsKey.string(), ec.message()));
  }
  tcp::endpoint at(asio::ip::make_address("127.0.0.1"), 0);
  e->net_->acceptor.open(at.protocol(), ec);
  if (!ec) e->net_->acceptor.bind(at, ec);
  if (!ec) e->net_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(Code::kUnavailable, fmt::format("redfish emulator: cannot listen: {}", ec.message()));
  e->port_ = e->net_->acceptor.local_endpoint().port();
  e->acceptor_ = std::thread([raw = e.get()] { raw->acceptLoop(); });
  return e;
}

RedfishEmulator::~RedfishEmulator() {
  stopping_ = true;
  wake_.notify_all();
  beast::error_code ec;
  ::shutdown(net_->acceptor.native_handle(), SHUT_RDWR);  // unblocks accept()
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mutex_);
    for (auto& weak : open_)
      if (auto c = weak.lock()) ::shutdown(c->socket.native_handle(), SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
  net_->acceptor.close(ec);
}

Result<void> RedfishEmulator::load() {
  namespace fs = std::filesystem;
  if (!fs::is_directory(options_.mockup)) return fail(Code::kNotFound, fmt::format("no mockup folder {}", options_.mockup.string()));
  for (const auto& entry : fs::recursive_directory_iterator(options_.mockup)) {
    if (!entry.is_regular_file() || entry.path().filename() != "index.json") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    json body = json::parse(text.str(), nullptr, false);
    if (body.is_discarded()) return fail(Code::kInvalidArgument, fmt::format("{}: not JSON", entry.path().string()));
    const auto relative = fs::relative(entry.path().parent_path(), options_.mockup).generic_string();
    const std::string uri = relative == "." ? "/redfish/v1" : "/redfish/v1/" + relative;
    resources_[uri] = std::move(body);
    versions_[uri] = 1;
  }
  if (!resources_.contains("/redfish/v1")) return fail(Code::kInvalidArgument, "the mockup has no service root (index.json)");
  bindVppbsToZones();  // as a fabric manager that applied the mockup's zones would have
  return {};
}

namespace {

bool isA(const json& resource, std::string_view type) {
  return resource.is_object() && resource.contains("@odata.type") && resource["@odata.type"].is_string() &&
         resource["@odata.type"].get<std::string>().find(type) != std::string::npos;
}

std::string linkOf(const json& resource, const char* key) {
  if (!resource.contains("Links") || !resource["Links"].contains(key) || !resource["Links"][key].is_object()) return {};
  return trimmed(resource["Links"][key].value("@odata.id", ""));
}

std::vector<std::string> linksOf(const json& resource, const char* key) {
  std::vector<std::string> out;
  if (!resource.contains("Links") || !resource["Links"].contains(key) || !resource["Links"][key].is_array()) return out;
  for (const auto& l : resource["Links"][key])
    if (l.is_object() && l.contains("@odata.id") && l["@odata.id"].is_string()) out.push_back(trimmed(l["@odata.id"].get<std::string>()));
  return out;
}

std::string switchOf(const std::string& portUri) { return portUri.substr(0, portUri.rfind("/Ports/")); }

}  // namespace

void RedfishEmulator::bindVppbsToZones() {
  // The switch ports: which initiators sit behind each upstream port, and which downstream port each
  // target is behind (named by the port, or cabled to one of the target's own ports).
  std::map<std::string, std::vector<std::string>> upstreamOfInitiator;
  std::map<std::string, std::string> downstreamOfTarget;
  std::map<std::string, std::string> downstreamOfDevicePort;
  for (const auto& [uri, r] : resources_) {
    if (!isA(r, "#Port.") || uri.find("/Switches/") == std::string::npos) continue;
    const std::string type = r.value("PortType", "");
    for (const auto& e : linksOf(r, "AssociatedEndpoints")) {
      if (type == "UpstreamPort") upstreamOfInitiator[e].push_back(uri);
      if (type == "DownstreamPort") downstreamOfTarget.emplace(e, uri);
    }
    if (type == "DownstreamPort")
      for (const auto& devicePort : linksOf(r, "ConnectedPorts")) downstreamOfDevicePort.emplace(devicePort, uri);
  }
  auto portOfTarget = [&](const std::string& target) -> std::string {
    if (auto it = downstreamOfTarget.find(target); it != downstreamOfTarget.end()) return it->second;
    if (auto e = resources_.find(target); e != resources_.end())
      for (const auto& devicePort : linksOf(e->second, "Ports"))
        if (auto it = downstreamOfDevicePort.find(devicePort); it != downstreamOfDevicePort.end()) return it->second;
    return {};
  };
  std::map<std::string, std::string> vcsOfUpstream;  // upstream port -> its VCS
  for (const auto& [uri, r] : resources_)
    if (isA(r, "#VirtualCXLSwitch.") && !linkOf(r, "Port").empty()) vcsOfUpstream[linkOf(r, "Port")] = uri;
  if (vcsOfUpstream.empty()) return;

  // What the zones ask for: each target's downstream port in the VCS of its initiator's upstream port
  // (the one on the target's switch when the initiator has several).
  std::map<std::string, std::set<std::string>> wanted;  // VCS -> downstream ports
  for (const auto& [uri, zone] : resources_) {
    if (!isA(zone, "#Zone.")) continue;
    const auto endpoints = linksOf(zone, "Endpoints");
    for (const auto& initiator : endpoints) {
      auto ups = upstreamOfInitiator.find(initiator);
      if (ups == upstreamOfInitiator.end()) continue;
      for (const auto& target : endpoints) {
        const std::string port = target == initiator ? "" : portOfTarget(target);
        if (port.empty()) continue;
        std::string vcs;
        for (const auto& up : ups->second)
          if (auto v = vcsOfUpstream.find(up); v != vcsOfUpstream.end() && (vcs.empty() || switchOf(up) == switchOf(port))) vcs = v->second;
        if (!vcs.empty()) wanted[vcs].insert(port);
      }
    }
  }
  // Each VCS's vPPBs follow: bound ones no zone wants are unbound; wanted ports take a free vPPB (or a new one).
  for (const auto& [up, vcs] : vcsOfUpstream) {
    std::set<std::string> missing = wanted[vcs];
    const std::string collectionUri = vcs + "/VPPBs";
    std::vector<std::string> free;
    for (auto& [uri, vppb] : resources_) {
      if (!isA(vppb, "#VirtualPCI2PCIBridge.") || uri.rfind(collectionUri + "/", 0) != 0) continue;
      const std::string port = linkOf(vppb, "Port");
      const bool bound = vppb.value("BindingStatus", "Unbound") != "Unbound";
      if (bound && missing.erase(port) > 0) continue;
      if (bound || !port.empty()) {
        vppb["BindingStatus"] = "Unbound";
        if (vppb.contains("Links") && vppb["Links"].is_object()) vppb["Links"].erase("Port");
        vppb.erase("BoundLDId");
        vppb.erase("BoundPBRId");
        ++versions_[uri];
      }
      free.push_back(uri);
    }
    for (const auto& port : missing) {
      std::string uri;
      if (!free.empty()) {
        uri = free.front();
        free.erase(free.begin());
      } else {
        json& collection = resources_[collectionUri];
        const std::size_t n = collection.value("Members", json::array()).size() + 1;
        uri = fmt::format("{}/{}", collectionUri, n);
        resources_[uri] = {{"@odata.id", uri}, {"@odata.type", "#VirtualPCI2PCIBridge.v1_0_0.VirtualPCI2PCIBridge"}, {"Id", std::to_string(n)},
                           {"Name", fmt::format("vPPB {}", n)}, {"VPPBId", std::to_string(n)}, {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
                           {"Links", json::object()}};
        collection["Members"].push_back({{"@odata.id", uri}});
        collection["Members@odata.count"] = collection["Members"].size();
        ++versions_[collectionUri];
      }
      json& vppb = resources_[uri];
      vppb["BindingStatus"] = switchOf(port) == switchOf(up) ? "BoundPhysicalPort" : "BoundPID";
      vppb["Links"]["Port"] = {{"@odata.id", port}};
      ++versions_[uri];
    }
  }
}

bool RedfishEmulator::dropVppbBinding(const std::string& downstreamPort) {
  std::lock_guard lock(mutex_);
  bool dropped = false;
  for (auto& [uri, vppb] : resources_)
    if (isA(vppb, "#VirtualPCI2PCIBridge.") && linkOf(vppb, "Port") == trimmed(downstreamPort) && vppb.value("BindingStatus", "Unbound") != "Unbound") {
      vppb["BindingStatus"] = "Unbound";
      vppb["Links"].erase("Port");  // linkOf found it there
      ++versions_[uri];
      dropped = true;
    }
  return dropped;
}

void RedfishEmulator::setLatency(Duration latency) {
  std::lock_guard lock(mutex_);
  latency_ = latency;
}

void RedfishEmulator::dropNext(int n) {
  std::lock_guard lock(mutex_);
  dropNext_ = n;
}

void RedfishEmulator::failNext(int n, int status, std::string method) {
  std::lock_guard lock(mutex_);
  failNext_ = n;
  failStatus_ = status;
  failMethod_ = std::move(method);
}

bool RedfishEmulator::setHealth(const std::string& uri, const std::string& health) {
  std::lock_guard lock(mutex_);
  auto it = resources_.find(trimmed(uri));
  if (it == resources_.end()) return false;
  it->second["Status"]["Health"] = health;
  ++versions_[it->first];
  return true;
}

void RedfishEmulator::clearZones(const std::string& collection) {
  std::lock_guard lock(mutex_);
  auto& c = resources_[trimmed(collection)];
  for (const auto& m : c.value("Members", json::array())) resources_.erase(trimmed(m["@odata.id"].get<std::string>()));
  c["Members"] = json::array();
  c["Members@odata.count"] = 0;
  ++versions_[trimmed(collection)];
  bindVppbsToZones();
}

std::uint64_t RedfishEmulator::requests(const std::string& method) const {
  std::lock_guard lock(mutex_);
  auto it = requests_.find(method);
  return it == requests_.end() ? 0 : it->second;
}

std::string RedfishEmulator::etagOf(const std::string& uri) const {
  auto it = versions_.find(uri);
  return fmt::format("W/\"{}\"", it == versions_.end() ? 0 : it->second);
}

void RedfishEmulator::acceptLoop() {
  while (!stopping_) {
    auto connection = std::make_shared<Connection>(net_->io);
    beast::error_code ec;
    net_->acceptor.accept(connection->socket, ec);
    if (ec || stopping_) break;
    std::lock_guard lock(mutex_);
    open_.push_back(connection);
    workers_.emplace_back([this, connection] { serve(connection); });
  }
}

void RedfishEmulator::serve(std::shared_ptr<Connection> connection) {
  if (tls()) {
    asio::ssl::stream<tcp::socket&> stream(connection->socket, net_->tls);
    beast::error_code ec;
    stream.handshake(asio::ssl::stream_base::server, ec);  // a client that does not trust us fails here
    if (!ec) serveOn(stream);
  } else {
    serveOn(connection->socket);
  }
  beast::error_code ignored;
  connection->socket.shutdown(tcp::socket::shutdown_both, ignored);
}

template <typename Stream>
void RedfishEmulator::serveOn(Stream& stream) {
  beast::flat_buffer buffer;
  while (!stopping_) {
    http::request<http::string_body> req;
    beast::error_code ec;
    http::read(stream, buffer, req, ec);
    if (ec) break;
    struct InFlight {  // requests being handled at once, and the most seen
      RedfishEmulator& e;
      explicit InFlight(RedfishEmulator& emulator) : e(emulator) {
        const int now = ++e.inFlight_;
        int most = e.maxInFlight_.load();
        while (now > most && !e.maxInFlight_.compare_exchange_weak(most, now)) {
        }
      }
      ~InFlight() { --e.inFlight_; }
    } inFlight(*this);
    {
      std::unique_lock lock(mutex_);
      ++requests_[std::string(req.method_string())];
      if (latency_.count() > 0) wake_.wait_for(lock, latency_, [this] { return stopping_.load(); });
      if (stopping_) break;
      if (dropNext_ > 0) {
        --dropNext_;
        break;  // close without an answer
      }
    }
    Reply reply = handle(std::string(req.method_string()), std::string(req.target()), std::string(req[http::field::authorization]),
                         std::string(req["X-Auth-Token"]), std::string(req[http::field::if_match]), req.body());
    http::response<http::string_body> res{static_cast<http::status>(reply.status), req.version()};
    res.set("OData-Version", "4.0");
    if (!reply.etag.empty()) res.set(http::field::etag, reply.etag);
    if (!reply.location.empty()) res.set(http::field::location, reply.location);
    if (!reply.token.empty()) res.set("X-Auth-Token", reply.token);
    if (!reply.body.is_null()) {
      res.set(http::field::content_type, "application/json");
      res.body() = reply.body.dump();
    }
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    http::write(stream, res, ec);
    if (ec || !res.keep_alive()) break;
  }
}

namespace {

// The levels a "$expand=.($levels=N)" or "$expand=." query asks for (1 by default); 0 without $expand; -1
// for an $expand this service does not do (links, "*", "~").
int expandLevels(const std::string& target) {
  const auto q = target.find('?');
  if (q == std::string::npos) return 0;
  const std::string query = target.substr(q + 1);
  const auto at = query.find("$expand=");
  if (at == std::string::npos) return 0;
  std::string value = query.substr(at + 8);
  if (auto amp = value.find('&'); amp != std::string::npos) value.resize(amp);
  if (value == ".") return 1;
  static const std::string kLevels = ".($levels=";
  if (value.rfind(kLevels, 0) != 0 || !value.ends_with(")")) return -1;
  const std::string digits = value.substr(kLevels.size(), value.size() - kLevels.size() - 1);
  if (digits.empty() || digits.size() > 1 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

bool isReference(const json& j) { return j.is_object() && j.size() == 1 && j.contains("@odata.id") && j["@odata.id"].is_string(); }

}  // namespace

// Subordinate resources (a collection's Members, navigation properties outside Links) replaced by their
// bodies, `levels` deep, as a service with ExpandQuery.NoLinks answers "$expand=.".
void RedfishEmulator::expand(json& node, int levels) const {
  if (levels <= 0 || !node.is_object()) return;
  auto inline_ = [&](json& ref) {
    if (!isReference(ref)) return expand(ref, levels);  // a complex property: its own references
    auto it = resources_.find(trimmed(ref["@odata.id"].get<std::string>()));
    if (it == resources_.end()) return;
    ref = it->second;
    expand(ref, levels - 1);
  };
  for (auto& [key, value] : node.items()) {
    if (key == "Links" || key.starts_with("@")) continue;
    if (value.is_array()) {
      for (auto& element : value) inline_(element);
    } else if (value.is_object()) {
      inline_(value);
    }
  }
}

RedfishEmulator::Reply RedfishEmulator::handle(const std::string& method, std::string path, const std::string& authorization,
                                               const std::string& token, const std::string& ifMatch, const std::string& body) {
  const int levels = expandLevels(path);
  path = trimmed(path);
  std::lock_guard lock(mutex_);
  if (method == "POST" && path == "/redfish/v1/SessionService/Sessions") return login(body);
  const bool session = !token.empty() && sessions_.contains(token);
  if (path != "/redfish" && path != "/redfish/v1" && !session) {
    if (authorization != "Basic " + encodeBase64(options_.user + ":" + options_.password)) return {401, errorBody("NoValidSession", "authentication required"), {}, {}};
  }
  if (failNext_ > 0 && (failMethod_.empty() || failMethod_ == method)) {
    --failNext_;
    return {failStatus_, errorBody("ServiceTemporarilyUnavailable", "injected fault"), {}, {}};
  }
  if (path == "/redfish") return {200, {{"v1", "/redfish/v1/"}}, {}, {}};
  if (method == "GET") {
    auto it = resources_.find(path);
    if (it == resources_.end()) return {404, errorBody("ResourceNotFound", fmt::format("no resource at {}", path)), {}, {}};
    if (levels == 0) return {200, it->second, etagOf(path), {}};
    // $expand only as the service root's ProtocolFeaturesSupported offers it.
    const json& offered = resources_.at("/redfish/v1").value("ProtocolFeaturesSupported", json::object()).value("ExpandQuery", json::object());
    const int most = offered.value("Levels", false) ? offered.value("MaxLevels", 1) : 1;
    if (levels < 0 || !offered.value("NoLinks", false) || levels > most)
      return {501, errorBody("QueryNotSupported", fmt::format("this service does not expand {}", path)), {}, {}};
    json expanded = it->second;
    expand(expanded, levels);
    return {200, std::move(expanded), etagOf(path), {}};
  }
  if (method == "DELETE" && path.rfind("/redfish/v1/SessionService/Sessions/", 0) == 0) {
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
      if (it->second == path) {
        sessions_.erase(it);
        return {204, nullptr, {}, {}, {}};
      }
    return {404, errorBody("ResourceNotFound", "no such session"), {}, {}, {}};
  }
  if (method == "POST" && path.ends_with("/Actions/ComputerSystem.Reset")) return resetSystem(path, body);
  const bool zones = path.ends_with("/Zones") || path.find("/Zones/") != std::string::npos;
  if (zones && (method == "POST" || method == "PATCH" || method == "DELETE")) return changeZone(method, path, ifMatch, body);
  return {405, errorBody("OperationNotAllowed", fmt::format("{} is not allowed on {}", method, path)), {}, {}};
}

RedfishEmulator::Reply RedfishEmulator::login(const std::string& body) {
  const json request = json::parse(body, nullptr, false);
  if (request.is_discarded() || !request.is_object() || !request.contains("UserName") || !request.contains("Password"))
    return {400, errorBody("PropertyMissing", "UserName and Password are required"), {}, {}, {}};
  if (request["UserName"] != options_.user || request["Password"] != options_.password)
    return {401, errorBody("NoValidSession", "authentication failed"), {}, {}, {}};
  const std::string uri = fmt::format("/redfish/v1/SessionService/Sessions/{}", nextSession_++);
  const std::string token = fmt::format("emulator-token-{}-{}", nextSession_, port_);
  sessions_[token] = uri;
  return {201, {{"@odata.id", uri}, {"@odata.type", "#Session.v1_8_0.Session"}, {"Id", uri.substr(uri.rfind('/') + 1)}, {"UserName", options_.user}},
          {}, uri, token};
}

RedfishEmulator::Reply RedfishEmulator::resetSystem(const std::string& path, const std::string& body) {
  const std::string systemUri = path.substr(0, path.find("/Actions/"));
  auto it = resources_.find(systemUri);
  if (it == resources_.end()) return {404, errorBody("ResourceNotFound", fmt::format("no system at {}", systemUri)), {}, {}, {}};
  const json request = json::parse(body, nullptr, false);
  if (request.is_discarded() || !request.is_object() || !request.contains("ResetType") || !request["ResetType"].is_string())
    return {400, errorBody("ActionParameterMissing", "ResetType is required"), {}, {}, {}};
  const std::string type = request["ResetType"].get<std::string>();
  const json allowed = it->second["Actions"]["#ComputerSystem.Reset"].value("ResetType@Redfish.AllowableValues", json::array());
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), type) == allowed.end())
    return {400, errorBody("ActionParameterValueNotInList", fmt::format("ResetType {} is not allowed", type)), {}, {}, {}};
  if (type == "ForceOff" || type == "GracefulShutdown") it->second["PowerState"] = "Off";
  else if (type != "Nmi") it->second["PowerState"] = "On";
  ++versions_[systemUri];
  ++resets_;
  return {204, nullptr, {}, {}, {}};
}

int RedfishEmulator::resets() const {
  std::lock_guard lock(mutex_);
  return resets_;
}

std::size_t RedfishEmulator::sessions() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

std::string RedfishEmulator::zonedElsewhere(const std::vector<std::string>& endpoints, const std::string& except) const {
  for (const auto& e : endpoints) {
    auto endpoint = resources_.find(e);
    if (endpoint == resources_.end()) continue;
    const json& entities = endpoint->second.value("ConnectedEntities", json::array());
    if (entities.empty() || entities[0].value("EntityRole", "") != "Target") continue;
    for (const auto& [uri, resource] : resources_) {
      if (uri == except || resource.value("@odata.type", "").find("#Zone.") != 0) continue;
      const auto in = endpointLinks(resource);
      if (std::find(in.begin(), in.end(), e) != in.end()) return e;
    }
  }
  return {};
}

RedfishEmulator::Reply RedfishEmulator::changeZone(const std::string& method, const std::string& path, const std::string& ifMatch,
                                                   const std::string& body) {
  json request;
  if (method != "DELETE") {
    request = json::parse(body, nullptr, false);
    if (request.is_discarded() || !request.is_object()) return {400, errorBody("MalformedJSON", "the body is not a JSON object"), {}, {}};
    for (const auto& [key, value] : request.items())
      if (key != "Links" && key != "Name" && key != "ZoneType" && key != "Description")
        return {400, errorBody("PropertyUnknown", fmt::format("the property {} is unknown or read-only", key)), {}, {}};
  }
  std::vector<std::string> endpoints;
  if (method != "DELETE") {
    endpoints = endpointLinks(request);
    for (const auto& e : endpoints)
      if (!resources_.contains(e)) return {400, errorBody("ResourceNotFound", fmt::format("no endpoint {}", e)), {}, {}};
  }
  if (method == "POST") {
    if (!path.ends_with("/Zones")) return {405, errorBody("OperationNotAllowed", "POST a zone to the Zones collection"), {}, {}};
    if (auto busy = zonedElsewhere(endpoints, ""); !busy.empty())
      return {409, errorBody("ResourceInUse", fmt::format("{} is already in a zone", busy)), {}, {}};
    json& collection = resources_[path];
    int next = 1;
    for (const auto& m : collection.value("Members", json::array())) {
      const std::string id = m["@odata.id"].get<std::string>().substr(path.size() + 1);
      if (id.find_first_not_of("0123456789") == std::string::npos && !id.empty()) next = std::max(next, std::stoi(id) + 1);
    }
    const std::string uri = fmt::format("{}/{}", path, next);
    json zone{{"@odata.id", uri},
              {"@odata.type", "#Zone.v1_6_3.Zone"},
              {"Id", std::to_string(next)},
              {"Name", request.value("Name", "Zone " + std::to_string(next))},
              {"ZoneType", request.value("ZoneType", "ZoneOfEndpoints")},
              {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
              {"Links", {{"Endpoints", request["Links"].value("Endpoints", json::array())}}}};
    resources_[uri] = zone;
    versions_[uri] = 1;
    collection["Members"].push_back({{"@odata.id", uri}});
    collection["Members@odata.count"] = collection["Members"].size();
    ++versions_[path];
    bindVppbsToZones();
    return {201, zone, etagOf(uri), uri};
  }
  auto it = resources_.find(path);
  if (it == resources_.end()) return {404, errorBody("ResourceNotFound", fmt::format("no zone at {}", path)), {}, {}};
  if (!ifMatch.empty() && ifMatch != etagOf(path))
    return {412, errorBody("PreconditionFailed", fmt::format("{} changed since its ETag {}", path, ifMatch)), {}, {}};
  if (method == "DELETE") {
    resources_.erase(it);
    const std::string collectionUri = path.substr(0, path.rfind('/'));
    json& collection = resources_[collectionUri];
    json kept = json::array();
    for (const auto& m : collection["Members"])
      if (trimmed(m["@odata.id"].get<std::string>()) != path) kept.push_back(m);
    collection["Members"] = kept;
    collection["Members@odata.count"] = kept.size();
    ++versions_[collectionUri];
    bindVppbsToZones();
    return {204, nullptr, {}, {}};
  }
  if (auto busy = zonedElsewhere(endpoints, path); !busy.empty())
    return {409, errorBody("ResourceInUse", fmt::format("{} is already in another zone", busy)), {}, {}};
  if (request.contains("Links")) it->second["Links"]["Endpoints"] = request["Links"].value("Endpoints", json::array());
  ++versions_[path];
  bindVppbsToZones();
  return {200, it->second, etagOf(path), {}};
}

}  // namespace switchyard::testing

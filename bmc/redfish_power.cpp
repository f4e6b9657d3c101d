// ComputerSystem.Reset: a host's power, through the host's own BMC. yardd has no power of its own over a host; where
// it reaches the host's BMC (the bmc-reset policy's --host-bmc) it passes the reset on, for the physical host or for
// a system composed on it. A tenant resets its own systems; the pool's hosts need the Operator or Administrator role.
// The reset waits on the BMC on the service's power thread, never on the threads that answer reads.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <expected>

#include "bmc/redfish_protocol.h"
#include "bmc/redfish_service.h"
#include "composer/model/access.h"

namespace switchyard::bmc {

using namespace redfish_protocol;

namespace {

// The host a Reset of `id` reaches and the system it is for ("" for the host itself); an error response when none.
struct ResetTarget {
  HostId host;
  std::string system;
};

std::expected<ResetTarget, HttpResponse> targetOf(const std::vector<HostView>& hosts, const std::vector<System>& systems, const Caller& caller,
                                                  const std::string& id) {
  auto notFound = [&] { return std::unexpected(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", fmt::format("no system {}", id))); };
  ResetTarget target;
  for (const auto& s : systems)
    if (s.id == id && s.state != SystemState::kDecomposed) {
      if (!maySee(caller, s.tenant)) return notFound();
      if (s.state == SystemState::kQueued)
        return std::unexpected(error(http::status::bad_request, std::string(kBase) + "ActionNotSupported",
                                     fmt::format("{} is queued: it has no host to reset yet", id)));
      target = {s.hostId, s.id};
    }
  if (target.host.empty()) {
    bool isHost = false;
    for (const auto& h : hosts) isHost = isHost || h.host.id == id;
    if (!isHost) return notFound();
    if (caller.role != Role::kAdmin && caller.role != Role::kOperator)
      return std::unexpected(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege",
                                   fmt::format("resetting the pool's host {} needs the Operator or Administrator role", id)));
    target.host = id;
  }
  for (const auto& h : hosts)
    if (h.host.id == target.host && h.policy != HostPolicy::kBmcReset)
      return std::unexpected(error(http::status::bad_request, std::string(kBase) + "ActionNotSupported",
                                   fmt::format("host {} has no BMC that yardd reaches, so {} cannot be reset through Redfish: start yardd with "
                                               "--host-policy {}=bmc-reset --host-bmc {}=https://BMC, or reset it at its own BMC",
                                               target.host, id, target.host, target.host)));
  // A change under way on the host: its own steps may be power-cycling it.
  for (const auto& s : systems)
    if (s.hostId == target.host && (s.state == SystemState::kComposing || s.state == SystemState::kDecomposing))
      return std::unexpected(error(http::status::conflict, std::string(kBase) + "ResourceInUse",
                                   fmt::format("{} on host {} is {}: reset once that ends", s.name, target.host,
                                               s.state == SystemState::kComposing ? "being composed" : "being decomposed")));
  return target;
}

}  // namespace

void RedfishService::resetSystem(const std::shared_ptr<Call>& call, const std::string& id) {
  auto bad = [&](const std::string& messageId, const std::string& message) {
    call->reply(error(http::status::bad_request, std::string(kBase) + messageId, message));
  };
  const json body = json::parse(call->request->body(), nullptr, false);
  if (body.is_discarded() || !body.is_object()) return bad("MalformedJSON", "the request body is not a JSON object");
  for (const auto& [key, value] : body.items())
    if (key != "ResetType") return bad("ActionParameterUnknown", fmt::format("ComputerSystem.Reset has no parameter {}", key));
  if (!body.contains("ResetType")) return bad("ActionParameterMissing", fmt::format("ResetType is required (one of {})", fmt::join(kResetTypes, ", ")));
  if (!body["ResetType"].is_string() || std::find(kResetTypes.begin(), kResetTypes.end(), body["ResetType"].get<std::string>()) == kResetTypes.end())
    return bad("ActionParameterValueNotInList",
               fmt::format("ResetType {} is not one of {}", body["ResetType"].dump(-1, ' ', false, json::error_handler_t::replace), fmt::join(kResetTypes, ", ")));
  const std::string type = body["ResetType"].get<std::string>();
  boost::asio::post(power_, [this, call, id, type] {
    auto hosts = engine_.listHosts();
    auto systems = engine_.listSystems();
    if (!hosts || !systems) return call->reply(engineError(hosts ? systems.error() : hosts.error(), false));
    auto target = targetOf(*hosts, *systems, call->caller, id);
    if (!target) return call->reply(std::move(target.error()));
    if (!hostReset_)
      return call->reply(error(http::status::bad_request, std::string(kBase) + "ActionNotSupported", "this service resets no host"));
    spdlog::info("Redfish: {} asks {} of host {}{}", call->caller.identity, type, target->host,
                 target->system.empty() ? "" : fmt::format(" (system {})", target->system));
    if (auto done = hostReset_(target->host, type); !done) {
      if (done.error().code == Code::kInvalidArgument)  // the BMC does not allow this ResetType
        return call->reply(error(http::status::bad_request, std::string(kBase) + "ActionParameterValueNotInList", done.error().message));
      return call->reply(engineError(done.error(), false));
    }
    call->reply(respond(http::status::no_content, nullptr));
  });
}

}  // namespace switchyard::bmc

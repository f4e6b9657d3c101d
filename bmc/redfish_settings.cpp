// PATCH of the service's own settings: CompositionService.ReservationDuration (how long PreviewReserve
// holds blocks) and SessionService.SessionTimeout. Every property is checked before any is changed; a
// read-only or unknown one is refused with the Base registry's words; If-Match guards against a stale read.
// The settings last until yardd restarts (its flags set them at start).
#include <fmt/format.h>

#include "bmc/redfish_protocol.h"

namespace switchyard::bmc {

using namespace redfish_protocol;

void RedfishService::patchSettings(const std::shared_ptr<Call>& call) {
  const bool composition = call->path.ends_with("/CompositionService");
  auto current = [&] { return composition ? compositionService(reservationDuration()) : sessionService(accounts_.sessionTimeout()); };
  auto bad = [&](const std::string& id, const std::string& message) { call->reply(error(http::status::bad_request, std::string(kBase) + id, message)); };
  const json body = json::parse(call->request->body(), nullptr, false);
  if (body.is_discarded() || !body.is_object()) return bad("MalformedJSON", "the request body is not a JSON object");
  if (body.empty()) return bad("NoOperation", "the request body names no property to change");
  const json before = current();
  if (auto tag = (*call->request)[http::field::if_match]; !tag.empty() && tag != "*" && std::string(tag) != etagOf(before))
    return call->reply(error(http::status::precondition_failed, std::string(kBase) + "PreconditionFailed",
                             fmt::format("{} changed since it was read (If-Match {} no longer matches)", call->path, std::string(tag))));
  const std::string writable = composition ? "ReservationDuration" : "SessionTimeout";
  std::optional<std::chrono::seconds> value;
  for (const auto& [key, v] : body.items()) {
    if (key != writable) {
      if (before.contains(key)) return bad("PropertyNotWritable", fmt::format("the property {} is read-only (only {} can be changed here)", key, writable));
      return bad("PropertyUnknown", fmt::format("the property {} is not a property of {}", key, call->path));
    }
    if (composition) {
      const auto d = v.is_string() ? parseIsoDuration(v.get<std::string>()) : std::nullopt;
      if (!v.is_string()) return bad("PropertyValueTypeError", "ReservationDuration must be an ISO 8601 duration such as \"PT10M\"");
      if (!d) return bad("PropertyValueFormatError", fmt::format("ReservationDuration {} is not an ISO 8601 duration such as \"PT10M\"", text(v)));
      if (*d < std::chrono::seconds(1) || *d > std::chrono::hours(24))
        return bad("PropertyValueOutOfRange", fmt::format("ReservationDuration {} must be a duration from PT1S to P1D (for example PT10M)", text(v)));
      value = d;
    } else {
      if (!v.is_number_integer()) return bad("PropertyValueTypeError", "SessionTimeout must be a whole number of seconds");
      const auto seconds = v.get<long long>();
      if (seconds < 30 || seconds > 86400) return bad("PropertyValueOutOfRange", fmt::format("SessionTimeout {} must be from 30 to 86400 seconds", seconds));
      value = std::chrono::seconds(seconds);
    }
  }
  if (composition) setReservationDuration(*value);
  else accounts_.setSessionTimeout(*value);
  call->reply(resource(current(), "GET, HEAD, PATCH"));
}

}  // namespace switchyard::bmc

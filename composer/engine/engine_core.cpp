// EngineCore: each call is the engine's own, made on the control thread, where it answers inline.
#include "composer/engine/engine_core.h"

#include <spdlog/spdlog.h>

#include "composer/engine/engine.h"

namespace switchyard {

// Checked in every build, not only with assertions on: a call off the control thread would race with
// everything the engine owns. It is refused (kInternal) and logged, and changes nothing.
#define SY_CORE_CALL(expr)                                                                                             \
  do {                                                                                                                \
    if (!engine_.onControlThread()) {                                                                                 \
      spdlog::error("an engine call was made off the control thread ({}): refused; this is a bug in yardd", #expr);   \
      return fail(Code::kInternal, "an engine call was made off the control thread (a bug in yardd): refused");        \
    }                                                                                                                 \
    return engine_.expr;                                                                                              \
  } while (0)

Result<Operation> EngineCore::compose(const Caller& caller, const ComposeRequest& request) { SY_CORE_CALL(composeOnControl(caller, request)); }
Result<Operation> EngineCore::decompose(const Caller& caller, const std::string& system, const std::string& requestId) {
  SY_CORE_CALL(decomposeOnControl(caller, system, requestId));
}
Result<Operation> EngineCore::attach(const Caller& caller, const AttachRequest& request) { SY_CORE_CALL(attachOnControl(caller, request)); }
Result<Operation> EngineCore::detach(const Caller& caller, const DetachRequest& request) { SY_CORE_CALL(detachOnControl(caller, request)); }
Result<Operation> EngineCore::cancelQueued(const Caller& caller, const std::string& idOrName) { SY_CORE_CALL(cancelQueuedOnControl(caller, idOrName)); }
Result<System> EngineCore::renewLease(const Caller& caller, const std::string& system, std::chrono::milliseconds lease) {
  SY_CORE_CALL(renewLeaseOnControl(caller, system, lease));
}
Result<System> EngineCore::forgetSystem(const Caller& caller, const std::string& system) { SY_CORE_CALL(forgetSystemOnControl(caller, system)); }
Result<PlanOutcome> EngineCore::plan(const PlacementRequest& request, std::string_view priorityClass) { SY_CORE_CALL(planOnControl(request, priorityClass)); }
Result<std::vector<Placement>> EngineCore::planSystems(const std::vector<ComposeRequest>& requests) { SY_CORE_CALL(planSystemsOnControl(requests)); }
Result<Reservation> EngineCore::reserve(const Caller& caller, const std::vector<ComposeRequest>& requests, Duration lifetime) {
  SY_CORE_CALL(reserveOnControl(caller, requests, lifetime));
}
Result<std::vector<Reservation>> EngineCore::listReservations() { SY_CORE_CALL(listReservationsOnControl()); }
Result<void> EngineCore::releaseReservation(const Caller& caller, const std::string& id) { SY_CORE_CALL(releaseReservationOnControl(caller, id)); }
Result<std::vector<Operation>> EngineCore::composeReserved(const Caller& caller, const std::string& id) { SY_CORE_CALL(composeReservedOnControl(caller, id)); }
Result<std::vector<Operation>> EngineCore::composeTogether(const Caller& caller, const std::vector<ComposeRequest>& requests) {
  SY_CORE_CALL(composeTogetherOnControl(caller, requests));
}
Result<Operation> EngineCore::getOperation(const OperationId& id) { SY_CORE_CALL(getOperationOnControl(id)); }
Result<std::optional<Operation>> EngineCore::operationForRequest(const Caller& caller, const std::string& requestId) {
  SY_CORE_CALL(operationForRequestOnControl(caller, requestId));
}
Result<System> EngineCore::getSystem(const std::string& idOrName) { SY_CORE_CALL(getSystem(idOrName)); }
Result<std::vector<System>> EngineCore::listSystems() { SY_CORE_CALL(listSystems()); }
Result<DeviceView> EngineCore::getDevice(const DeviceId& id) { SY_CORE_CALL(getDevice(id)); }
Result<std::vector<HostView>> EngineCore::listHosts() { SY_CORE_CALL(listHosts()); }

#undef SY_CORE_CALL

}  // namespace switchyard

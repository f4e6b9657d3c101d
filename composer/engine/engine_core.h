// The engine's core calls: what an adapter may ask of the engine on its control thread, where each call
// answers inline, never blocks and never waits for a switch (issue 36, item 1; ADR 0025).
//
// An EngineCore exists only inside EngineClient::run, on the control thread; no adapter can hold one
// elsewhere, so no adapter can block on the engine or call into it from the wrong thread. A call that
// needs several of these at once (look up the request's earlier operation, then compose) runs them in one
// `run`: nothing else happens on the pool between them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/engine/engine_requests.h"
#include "composer/engine/pool_view.h"
#include "composer/engine/reservation.h"
#include "composer/model/audit.h"
#include "composer/model/caller.h"
#include "composer/model/composition.h"
#include "composer/model/queue.h"
#include "composer/packing/packing.h"
#include "inventory/store.h"

namespace switchyard {

class Engine;
class EngineClient;

class EngineCore {
 public:
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Changes (engine.h says what each does): the operation is durable and running when they return.
  [[nodiscard]] Result<Operation> compose(const Caller& caller, const ComposeRequest& request);
  [[nodiscard]] Result<Operation> decompose(const Caller& caller, const std::string& system, const std::string& requestId = {});
  [[nodiscard]] Result<Operation> attach(const Caller& caller, const AttachRequest& request);
  [[nodiscard]] Result<Operation> detach(const Caller& caller, const DetachRequest& request);
  [[nodiscard]] Result<Operation> cancelQueued(const Caller& caller, const std::string& idOrName);
  [[nodiscard]] Result<System> renewLease(const Caller& caller, const std::string& system, std::chrono::milliseconds lease);
  // An admin drops a system whose devices no fabric reports (engine_forget.cpp): decomposed, nothing unbound.
  [[nodiscard]] Result<System> forgetSystem(const Caller& caller, const std::string& system);
  [[nodiscard]] Result<PlanOutcome> plan(const PlacementRequest& request, std::string_view priorityClass = {});
  [[nodiscard]] Result<std::vector<Placement>> planSystems(const std::vector<ComposeRequest>& requests);
  [[nodiscard]] Result<Reservation> reserve(const Caller& caller, const std::vector<ComposeRequest>& requests, Duration lifetime);
  [[nodiscard]] Result<std::vector<Reservation>> listReservations();
  [[nodiscard]] Result<void> releaseReservation(const Caller& caller, const std::string& id);
  [[nodiscard]] Result<std::vector<Operation>> composeReserved(const Caller& caller, const std::string& id);
  [[nodiscard]] Result<std::vector<Operation>> composeTogether(const Caller& caller, const std::vector<ComposeRequest>& requests);

  // An operation by id or by the client's request id (running ones included). Lists of the history are read
  // off the control thread: EngineClient::read.
  [[nodiscard]] Result<Operation> getOperation(const OperationId& id);
  [[nodiscard]] Result<std::optional<Operation>> operationForRequest(const Caller& caller, const std::string& requestId);

  // The published view, as the last commit point left it (what the change being made here does shows at
  // the end of this task, before the completion runs).
  [[nodiscard]] Result<System> getSystem(const std::string& idOrName);
  [[nodiscard]] Result<std::vector<System>> listSystems();
  [[nodiscard]] Result<DeviceView> getDevice(const DeviceId& id);
  [[nodiscard]] Result<std::vector<HostView>> listHosts();

 private:
  friend class EngineClient;
  explicit EngineCore(Engine& engine) : engine_(engine) {}
  Engine& engine_;
};

}  // namespace switchyard

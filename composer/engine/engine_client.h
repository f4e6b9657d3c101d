// How adapters (gRPC, Redfish, the operator endpoint, the resource provider) call the engine: a thin
// asynchronous client (issue 36, item 1; ADR 0025). Nothing here blocks.
//
//   - Changes and the reads only the control thread can answer go through run(): the function gets the
//     EngineCore on the control thread; its result comes back to `done` on the adapter's own executor
//     (the Deliver it named when it made the client), after the change is published in the view.
//     One way off the control thread, for every adapter.
//   - Reads of the pool answer on the caller's thread from the latest published view (pool_view.h): they
//     never wait for the control thread and the control thread never waits for them.
//   - Reads of the history (operations, events, the audit trail, usage) and capacity, which may take long,
//     go through read(): on the engine's read pool, never the control thread or the adapter's threads.
//
// Adapters include this header, never engine.h (tests/lint/check_layering.py checks it): the engine's
// blocking methods are for tests, tools and the daemon's start and stop.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "composer/engine/engine_core.h"
#include "composer/engine/engine_requests.h"
#include "composer/engine/history_reads.h"
#include "composer/engine/idle_tracker.h"
#include "composer/engine/pool_reads.h"
#include "composer/engine/pool_view.h"
#include "composer/model/machine_template.h"
#include "composer/engine/usage.h"
#include "composer/model/clock.h"
#include "composer/packing/capacity.h"

namespace switchyard {

class Engine;
class StepKindRegistry;

class EngineClient : public PoolReads {
 public:
  // Hands a completion to the adapter's executor (an Asio io_context or thread pool: post it there).
  using Deliver = std::function<void(std::function<void()>)>;

  // Each completion runs contained (composer/model/contain.h): one that throws is logged and ends, not the
  // adapter's thread.
  EngineClient(Engine& engine, Deliver deliver);
  // A client that only reads the view, or whose completions are small enough to run where the engine
  // answers them (the control thread).
  explicit EngineClient(Engine& engine) : EngineClient(engine, [](std::function<void()> done) { done(); }) {}

  // Runs `call` on the control thread, then `done` with its result on the adapter's executor. `done` runs
  // exactly once: with kAborted when the engine stopped before running `call`. The client is a handle:
  // it may be gone before `done` runs (nothing pending refers to it).
  template <typename T>
  void run(std::function<Result<T>(EngineCore&)> call, Completion<T> done) {
    auto result = std::make_shared<std::optional<Result<T>>>();
    onControl([result, call = std::move(call)](EngineCore& core) { result->emplace(call(core)); },
              [deliver = deliver_, result, done = std::move(done)](std::optional<Error> aborted) {
                deliver([result, done, aborted = std::move(aborted)] {
                  done(aborted ? Result<T>(std::unexpected(*aborted)) : std::move(**result));
                });
              });
  }

  // Runs `call` on the engine's read pool with the history, then `done` with its result on the adapter's
  // executor. `done` runs exactly once.
  template <typename T>
  void read(std::function<Result<T>(const HistoryReads&)> call, Completion<T> done) {
    offControl<Result<T>>(std::move(call), [done = std::move(done)](Result<T> result) { done(std::move(result)); });
  }
  // Usable capacity (as capacity() below), computed on the engine's read pool; `done` on the adapter's executor.
  void capacity(std::vector<RequestShape> shapes, std::vector<MigProfile> migProfiles, std::vector<int> shareMilli,
                Completion<CapacityReport> done);

  // The operation once finished, or as it stands when `timeout` passes first; on the adapter's executor.
  // The returned function cancels the wait (Engine::waitOperation): call it when the caller goes away.
  std::function<void()> waitOperation(const OperationId& id, std::chrono::milliseconds timeout, Completion<Operation> done);
  // A quarantined device back to the pool (Engine::releaseQuarantined); on the adapter's executor.
  void releaseQuarantined(const Caller& caller, const DeviceId& device, ReleaseAsked asked, Completion<DeviceView> done);
  // Live events after a replay of up to `replayLimit` of those after `lastSeen` (EngineCore::subscribeAfter); on
  // the adapter's executor.
  void subscribeAfter(std::optional<std::uint64_t> lastSeen, Completion<EventSubscription> done, std::size_t replayLimit = 10'000);
  // GPU-hours (HistoryReads::usage): the log is read and the report computed on the engine's read pool.
  void usage(const Caller& caller, Timestamp since, Timestamp until, Completion<UsageReport> done);

  // Reads of the pool (view, getSystem, listSystems, listDevices, getDevice, listHosts, topology, listQueue, idleGpus,
  // capacity): PoolReads's (pool_reads.h), from the published view, on the caller's thread.
  using PoolReads::capacity;
  // The machine templates a compose may start from (fixed for the engine's life).
  [[nodiscard]] const std::vector<MachineTemplate>& templates() const;

  // Safe on any thread.
  [[nodiscard]] std::string standbyLeader() const;  // a standby's leader (its refusals name it); empty otherwise
  [[nodiscard]] std::string storeFailure() const;   // why the engine stopped writing; empty while it can
  [[nodiscard]] const StepKindRegistry& stepKinds() const;
  [[nodiscard]] Timestamp now() const;

 private:
  // Runs `call` with the core on the control thread, then `after` there (nullopt), or only `after` with
  // why (kAborted) when the engine stopped first.
  void onControl(std::function<void(EngineCore&)> call, std::function<void(std::optional<Error>)> after);
  // Runs `call` on the engine's read pool, then hands what it made to `deliver` on the adapter's executor.
  template <typename Answer>
  void offControl(std::function<Answer(const HistoryReads&)> call, std::function<void(Answer)> deliver) {
    offControlErased([call = std::move(call), deliver = std::move(deliver), to = deliver_](const HistoryReads& history) mutable {
      auto answer = std::make_shared<Answer>(call(history));
      to([answer, deliver = std::move(deliver)]() mutable { deliver(std::move(*answer)); });
    });
  }
  void offControlErased(std::function<void(const HistoryReads&)> work);

  Engine& engine_;
  Deliver deliver_;
};

}  // namespace switchyard

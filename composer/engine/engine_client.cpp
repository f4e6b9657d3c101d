#include "composer/engine/engine_client.h"

#include <spdlog/spdlog.h>

#include "composer/engine/engine.h"
#include "composer/model/contain.h"

namespace switchyard {

EngineClient::EngineClient(Engine& engine, Deliver deliver)
    : PoolReads(engine.reads()), engine_(engine), deliver_([deliver = std::move(deliver)](std::function<void()> completion) {
        deliver([completion = std::move(completion)] {
          runContained(completion, [](const std::string& what) { spdlog::error("an engine reply failed in its adapter and was dropped: {}", what); });
        });
      }) {}

void EngineClient::onControl(std::function<void(EngineCore&)> call, std::function<void(std::optional<Error>)> after) {
  engine_.async<bool>(
      [&engine = engine_, call = std::move(call)]() -> Result<bool> {
        EngineCore core(engine);
        call(core);
        return true;
      },
      [after = std::move(after)](Result<bool> ran) { after(ran ? std::nullopt : std::optional<Error>(ran.error())); });
}

// A completion that hands its result to the adapter's executor.
template <typename T>
static Completion<T> deliverVia(const EngineClient::Deliver& deliver, Completion<T> done) {
  return [deliver, done = std::move(done)](Result<T> result) {
    deliver([done, result = std::move(result)]() mutable { done(std::move(result)); });
  };
}

std::function<void()> EngineClient::waitOperation(const OperationId& id, std::chrono::milliseconds timeout, Completion<Operation> done) {
  return engine_.waitOperation(id, timeout, deliverVia(deliver_, std::move(done)));
}

void EngineClient::releaseQuarantined(const Caller& caller, const DeviceId& device, ReleaseAsked asked, Completion<DeviceView> done) {
  engine_.releaseQuarantined(caller, device, asked, deliverVia(deliver_, std::move(done)));
}

void EngineClient::subscribeAfter(std::optional<std::uint64_t> lastSeen, Completion<EventSubscription> done, std::size_t replayLimit) {
  // On the control thread subscribeAfter subscribes and reads the log inline.
  engine_.async<EventSubscription>([&engine = engine_, lastSeen, replayLimit] {
    return EngineCore(engine).subscribeAfter(lastSeen, replayLimit);
  },
                                   deliverVia<EventSubscription>(deliver_, [done = std::move(done)](Result<EventSubscription> s) {
                                     if (!s && s.error().code == Code::kAborted) s = fail(Code::kUnavailable, "yardd is starting or stopping; retry shortly");
                                     done(std::move(s));
                                   }));
}

void EngineClient::offControlErased(std::function<void(const HistoryReads&)> work) {
  engine_.offControl([&history = engine_.history(), work = std::move(work)] { work(history); });
}

void EngineClient::usage(const Caller& caller, Timestamp since, Timestamp until, Completion<UsageReport> done) {
  // A read of up to 100,000 operations (docs/operations.md gives its cost), and the GPU-hours computed from it.
  offControl<Result<UsageReport>>([caller, since, until](const HistoryReads& history) { return history.usage(caller, since, until); },
                                  [done = std::move(done)](Result<UsageReport> report) { done(std::move(report)); });
}

void EngineClient::capacity(std::vector<RequestShape> shapes, std::vector<MigProfile> migProfiles, std::vector<int> shareMilli,
                            Completion<CapacityReport> done) {
  offControl<Result<CapacityReport>>(
      [&engine = engine_, shapes = std::move(shapes), mig = std::move(migProfiles), shares = std::move(shareMilli)](const HistoryReads&) {
        return engine.reads().capacity(shapes, mig, shares);
      },
      [done = std::move(done)](Result<CapacityReport> report) { done(std::move(report)); });
}

const std::vector<MachineTemplate>& EngineClient::templates() const { return engine_.options_.templates; }
std::string EngineClient::standbyLeader() const { return engine_.standbyLeader(); }
std::string EngineClient::storeFailure() const { return engine_.storeFailure(); }
const StepKindRegistry& EngineClient::stepKinds() const { return engine_.stepKinds(); }
Timestamp EngineClient::now() const { return engine_.now(); }

}  // namespace switchyard

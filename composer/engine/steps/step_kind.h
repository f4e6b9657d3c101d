// Step kinds: what one entry of an operation's step log does. Each kind is one small unit that declares
// which component it calls, its undo, its retry class and how it describes itself; the engine runs any
// registered kind without knowing it by name. A new kind (host-rescan, bmc-reset) is a new file with a
// StepKind subclass plus one line in StepKindRegistry::builtIn().
//
// A step's payload is its bindings (Step::bindings): the devices it binds, unbinds, checks or, for the
// host agent later, rescans; the operation supplies the host and system. The payload is typed the same
// everywhere: in the step log, in the store's operation_step_bindings table and in the proto's Step.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/composition.h"
#include "composer/model/error.h"
#include "fabric/fabric_driver.h"
#include "agent/host_agents.h"

namespace switchyard {

// Which component a step calls. Remote steps run off the engine's control thread (they may block for
// as long as a switch takes); local steps change the engine's own state, on the control thread.
enum class StepComponent { kLocal, kFabric, kHost };

// What a remote step's failure does to a forward step (compensations always converge).
enum class RetryClass {
  kRollBack,  // fail the operation at once and undo (bind, verify: the request can still be given up)
  kConverge,  // retry UNAVAILABLE / DEADLINE_EXCEEDED up to EngineOptions::maxStepAttempts, then undo (unbind)
};

// The components a remote step may call.
struct StepTargets {
  FabricDriver& fabric;
  CallOptions fabricCall;  // each switch call's limits (EngineOptions::switchCallTimeout)
  HostAgents* hosts = nullptr;  // null when the engine has no host side (every host trusts the fabric)
  CallOptions hostCall;         // each host call's limits (EngineOptions::hostCallTimeout)
};

// What a remote call reports besides success: the identities a host side saw (host-admit), the devices
// it removed without their reset (host-release).
struct StepReport {
  std::vector<HostDeviceIdentity> identities;
  std::vector<DeviceNotReset> notReset;
};

// What a step may change in the engine, on the control thread. The engine stores what it changed, in the
// same transaction as the step's outcome.
class StepEffects {
 public:
  using EmitEvent = std::function<void(std::string type, std::string subject, std::string message)>;
  explicit StepEffects(EmitEvent emit) : emit_(std::move(emit)) {}
  virtual ~StepEffects() = default;
  // Appends an audit event (type, subject, a sentence an operator can read).
  void event(std::string type, std::string subject, std::string message) { emit_(std::move(type), std::move(subject), std::move(message)); }

 private:
  EmitEvent emit_;
};

class LocalStepContext : public StepEffects {
 public:
  using StepEffects::StepEffects;
  // The operation's system as the step leaves it; the engine stores it after the step.
  [[nodiscard]] virtual System& system() = 0;
  virtual void setAllocation(const std::vector<DeviceId>& devices, DeviceAllocation allocation, const std::string& owner) = 0;
  [[nodiscard]] virtual DeviceAllocation allocation(const DeviceId& device) const = 0;
};

class StepKind {
 public:
  virtual ~StepKind() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual StepComponent component() const = 0;
  [[nodiscard]] virtual RetryClass retry() const { return RetryClass::kRollBack; }
  // Whether a forward call that failed with `error` is tried again (up to EngineOptions::maxStepAttempts)
  // before the operation rolls back: by default, converge-class kinds retry UNAVAILABLE and DEADLINE_EXCEEDED.
  [[nodiscard]] virtual bool retries(const Error& error) const {
    return retry() == RetryClass::kConverge && (error.code == Code::kUnavailable || error.code == Code::kDeadlineExceeded);
  }
  // The compensation that undoes `applied` (a step that took effect, or may have); none when the step
  // changes nothing outside the engine.
  [[nodiscard]] virtual std::optional<Step> undo(const Step& applied) const;
  // Whether a forward call that failed with `error` is undone too: by default unless the component said
  // it changed nothing (changedNothing(): NOT_FOUND, INVALID_ARGUMENT, FAILED_PRECONDITION).
  [[nodiscard]] virtual bool undoWhenFailed(const Error& error) const { return !changedNothing(error.code); }
  // What a system whose operation is at this step is doing, in a word or two ("binding", "verifying on the
  // host"); empty for steps too quick to show.
  [[nodiscard]] virtual std::string_view activity() const { return {}; }
  // One line for progress output, logs and the proto's Step.description.
  [[nodiscard]] virtual std::string describe(const Step& step) const;

  // Remote kinds: the call. Runs on a driver thread with a copy of the operation.
  [[nodiscard]] virtual Result<StepReport> call(StepTargets& targets, const Operation& op, const Step& step) const;
  // Remote kinds: what a successful call records, on the control thread: audit events, and what it
  // changes in the operation's system (stored in the same transaction as the step's outcome).
  virtual void succeeded(LocalStepContext& context, const Operation& op, const Step& step, const StepReport& report) const;
  // Remote kinds: what a forward call that failed for good records (audit events), before the rollback.
  virtual void failed(StepEffects& effects, const Operation& op, const Step& step, const Error& error) const;
  // Local kinds: the change, on the control thread. Local steps cannot fail: what can fail is a remote step.
  virtual void apply(LocalStepContext& context, const Operation& op, const Step& step) const;
};

// The step kinds an engine knows, by name. Lookups are by the name stored in the step log, so a log
// written by a newer yardd with an unknown kind is refused at start with its name.
class StepKindRegistry {
 public:
  // Registers a kind; fails when its name is taken.
  [[nodiscard]] Result<void> add(std::unique_ptr<StepKind> kind);
  [[nodiscard]] const StepKind* find(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> names() const;
  // reserve, bind, verify, commit, unbind, release, host-admit, host-release.
  [[nodiscard]] static std::shared_ptr<const StepKindRegistry> builtIn();

 private:
  std::map<std::string, std::unique_ptr<StepKind>, std::less<>> kinds_;
};

// The built-in kinds' names, for the code that builds step logs (engine_accept.cpp).
namespace step {
inline constexpr std::string_view kReserve = "reserve";  // local: the reservation made at acceptance
inline constexpr std::string_view kBind = "bind";        // fabric: bind a set of devices, one switch call
inline constexpr std::string_view kVerify = "verify";    // fabric: read the binding table back
inline constexpr std::string_view kCommit = "commit";    // local: the system takes the bound devices
inline constexpr std::string_view kUnbind = "unbind";    // fabric: unbind a set of devices, one switch call
inline constexpr std::string_view kRelease = "release";  // local: devices back to the pool
inline constexpr std::string_view kHostAdmit = "host-admit";      // host: rescan and verify the bound set on the host
inline constexpr std::string_view kHostRelease = "host-release";  // host: check unused, unbind the driver, remove
}  // namespace step

[[nodiscard]] Step makeStep(std::string_view kind, std::vector<Binding> bindings = {});
// The bindings of an operation's forward (not compensating) steps of one kind.
[[nodiscard]] std::vector<Binding> forwardBindings(const Operation& op, std::string_view kind);

// Registration of the built-in kinds (one function per file); fails when a name is taken.
[[nodiscard]] Result<void> registerFabricSteps(StepKindRegistry& registry);
[[nodiscard]] Result<void> registerLocalSteps(StepKindRegistry& registry);
[[nodiscard]] Result<void> registerHostSteps(StepKindRegistry& registry);

}  // namespace switchyard

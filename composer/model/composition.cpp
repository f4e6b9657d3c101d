#include "composer/model/composition.h"

#include <array>
#include <utility>

namespace switchyard {

std::size_t Operation::cursor() const {
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i].state == StepState::kPending) return i;
  return steps.size();
}

namespace {

// One table per enum keeps toString and parse in agreement.
template <typename E, std::size_t N>
using Names = std::array<std::pair<E, std::string_view>, N>;

constexpr Names<SystemState, 7> kSystemStates{{{SystemState::kComposing, "composing"},
                                                {SystemState::kComposed, "composed"},
                                                {SystemState::kDegraded, "degraded"},
                                                {SystemState::kDecomposing, "decomposing"},
                                                {SystemState::kDecomposed, "decomposed"},
                                                {SystemState::kFailed, "failed"},
                                                {SystemState::kQueued, "queued"}}};
constexpr Names<OperationKind, 4> kOperationKinds{{{OperationKind::kCompose, "compose"},
                                                   {OperationKind::kDecompose, "decompose"},
                                                   {OperationKind::kAttach, "attach"},
                                                   {OperationKind::kDetach, "detach"}}};
constexpr Names<OperationState, 5> kOperationStates{{{OperationState::kRunning, "running"},
                                                     {OperationState::kRollingBack, "rolling-back"},
                                                     {OperationState::kSucceeded, "succeeded"},
                                                     {OperationState::kFailed, "failed"},
                                                     {OperationState::kQueued, "queued"}}};
constexpr Names<StepState, 4> kStepStates{{{StepState::kPending, "pending"},
                                           {StepState::kDone, "done"},
                                           {StepState::kFailed, "failed"},
                                           {StepState::kSkipped, "skipped"}}};
constexpr Names<DeviceAllocation, 4> kAllocations{{{DeviceAllocation::kFree, "free"},
                                                   {DeviceAllocation::kReserved, "reserved"},
                                                   {DeviceAllocation::kAllocated, "allocated"},
                                                   {DeviceAllocation::kQuarantined, "quarantined"}}};
constexpr Names<Role, 4> kRoles{{{Role::kViewer, "viewer"}, {Role::kTenant, "tenant"}, {Role::kOperator, "operator"}, {Role::kAdmin, "admin"}}};

template <typename E, std::size_t N>
std::string_view nameOf(const Names<E, N>& names, E v) {
  for (const auto& [e, n] : names)
    if (e == v) return n;
  return "?";
}

template <typename E, std::size_t N>
std::optional<E> valueOf(const Names<E, N>& names, std::string_view s) {
  for (const auto& [e, n] : names)
    if (n == s) return e;
  return std::nullopt;
}

}  // namespace

std::string_view toString(SystemState v) { return nameOf(kSystemStates, v); }
std::string_view toString(OperationKind v) { return nameOf(kOperationKinds, v); }
std::string_view toString(OperationState v) { return nameOf(kOperationStates, v); }
std::string_view toString(StepState v) { return nameOf(kStepStates, v); }
std::string_view toString(DeviceAllocation v) { return nameOf(kAllocations, v); }
std::string_view toString(Role v) { return nameOf(kRoles, v); }
std::optional<SystemState> parseSystemState(std::string_view s) { return valueOf(kSystemStates, s); }
std::optional<OperationKind> parseOperationKind(std::string_view s) { return valueOf(kOperationKinds, s); }
std::optional<OperationState> parseOperationState(std::string_view s) { return valueOf(kOperationStates, s); }
std::optional<StepState> parseStepState(std::string_view s) { return valueOf(kStepStates, s); }
std::optional<DeviceAllocation> parseDeviceAllocation(std::string_view s) { return valueOf(kAllocations, s); }
std::optional<Role> parseRole(std::string_view s) { return valueOf(kRoles, s); }

}  // namespace switchyard

// Admission as a framework (issue 59, ADR 0032), shaped like the Kubernetes scheduling framework over yardd's queue.
// An admission pass (runPass, admission_pass.h; the engine starts one at a commit point, engine_queue.cpp) runs:
//
//   queue sort (the waiting composes in order)
//     -> for each request: pre-filter (each plugin may leave it out of this pass, with its reason)
//     -> place it (the placement framework: filter, score, select; composer/packing/)
//          fits     -> permit (each plugin may keep it waiting, with its reason) -> admitted (reserve, durable)
//          does not -> the first that does not is the head: post-filter (the first plugin that promises it a time
//                      and a place, e.g. by preemption, becomes its shadow, which the permits keep others off)
//
// A Profile names the plugins of each extension point, in order; profiles are rows of one table
// (admissionProfiles()), plugins rows of one table per extension point; yardd --admission-profile chooses a profile
// and --admission-queue-sort may replace its queue sort. The plugins decide; the engine holds every piece of state
// (the queue, the preemption in progress, the pool) and answers them through Handle (and the pass, through
// PassEngine: the placement and the admission).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "composer/engine/admission/queue_sort.h"
#include "composer/engine/admission/tenant_shares.h"
#include "composer/engine/request_queue.h"
#include "composer/model/composition.h"
#include "composer/model/queue.h"
#include "composer/packing/packing.h"

namespace switchyard::admission {

// What one pass's plugins share: the tenants' shares, whether a head waits yet, and what each tenant was let try
// beside it.
struct Pass {
  const TenantShares& shares;
  bool headWaits = false;
  std::vector<std::size_t> triedBeside;  // per tenant: requests tried since the head began to wait
};

// The GPUs a queued request asks for, as fair share counts them: whole GPUs (or named devices), a share as a part of
// one, MIG instances by their compute slices out of seven.
[[nodiscard]] double gpusAsked(const QueuedRequest& q);
[[nodiscard]] double gpusAsked(const PlacementRequest& r);

// What a post-filter promises the head: when and where it goes (backfill keeps off it), and, when it has more to
// say than the placement's refusal, why it waits.
struct Promise {
  RequestQueue::HeadShadow shadow;
  std::optional<std::string> why;
};

// What plugins may ask of the engine during a pass; the engine answers from its own state, on the control thread.
class Handle {
 public:
  virtual ~Handle() = default;
  // The tenant's quota with the placement's devices added.
  [[nodiscard]] virtual Result<void> quotaAllows(const Operation& op, const Placement& placement) const = 0;
  // The placement's host takes composes (not cordoned, its policy met).
  [[nodiscard]] virtual Result<void> hostAllows(const Placement& placement) const = 0;
  // Why the placement would delay the head's shadow, if it would.
  [[nodiscard]] virtual std::optional<std::string> delaysHead(const Operation& op, const Placement& placement) const = 0;
  // The preemption in progress for this head, or one planned for it now (its victims told) among the systems
  // `mayTake` allows (empty: any the rules allow); none when another head's preemption is in progress, the head's
  // class does not preempt, or no victims free enough.
  using VictimFilter = std::function<bool(const System& victim)>;
  [[nodiscard]] virtual std::optional<Promise> preemptFor(const Operation& head, const std::string& why, const VictimFilter& mayTake) = 0;
  // The moves in progress for this head, or moves planned for it now (their attaches started): idle GPUs of
  // systems that allow it, moved off where the head needs room; none when another head's moves run, a plan for
  // this one failed lately, or no such moves make it fit.
  [[nodiscard]] virtual std::optional<Promise> defragmentFor(const Operation& head, const std::string& why) = 0;
  // When and where the head fits as leased systems end (at 0: no lease frees enough).
  [[nodiscard]] virtual Promise leaseShadow(const Operation& head) = 0;
};

class PreFilterPlugin {
 public:
  virtual ~PreFilterPlugin() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Why the request is not tried in this pass; nothing: it is. It may count what it lets through in `pass`.
  [[nodiscard]] virtual std::optional<std::string> skip(const Operation& op, const Waiting& waiting, Pass& pass) const = 0;
};

class PermitPlugin {
 public:
  virtual ~PermitPlugin() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Why the request, placed, may not go now; nothing: it may.
  [[nodiscard]] virtual std::optional<std::string> refuse(const Operation& op, const Placement& placement, const Handle& engine) const = 0;
};

class PostFilterPlugin {
 public:
  virtual ~PostFilterPlugin() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // The head's promise; nothing: the next plugin is asked.
  [[nodiscard]] virtual std::optional<Promise> promise(const Operation& head, const Waiting& waiting, const std::string& why, const Pass& pass,
                                                       Handle& engine) const = 0;
};

// A post-filter that preempts. It says which systems it may take for a head, so that a dry run (yardctl plan) takes
// the same ones a pass would.
class PreemptingPostFilter : public PostFilterPlugin {
 public:
  // Which victims a head of `tenant` asking `waiting` may take in `pass` (empty: any the classes allow). The filter
  // reads `pass.shares`: use it while they live.
  [[nodiscard]] virtual Handle::VictimFilter mayTake(const std::string& tenant, const Waiting& waiting, const Pass& pass) const = 0;
  [[nodiscard]] std::optional<Promise> promise(const Operation& head, const Waiting& waiting, const std::string& why, const Pass& pass,
                                               Handle& engine) const final {
    return engine.preemptFor(head, why, mayTake(head.tenant, waiting, pass));
  }
};

struct Profile {
  std::string name;
  QueueSort queueSort;
  std::vector<std::shared_ptr<const PreFilterPlugin>> preFilters;
  std::vector<std::shared_ptr<const PermitPlugin>> permits;
  std::vector<std::shared_ptr<const PostFilterPlugin>> postFilters;

  [[nodiscard]] std::string describe() const;
  // The first post-filter that preempts; none: this profile never preempts.
  [[nodiscard]] const PreemptingPostFilter* preemption() const;
  // Whether a post-filter moves idle GPUs to make room (defragmentation, ADR 0033).
  [[nodiscard]] bool moves() const;  // "name: queue sort a, b; pre-filter c; permit d, e; post-filter f, g"
};

struct ProfileEntry {
  std::string_view name;
  std::string_view what;
  std::vector<std::string> queueSort, preFilters, permits, postFilters;
};
[[nodiscard]] std::span<const ProfileEntry> admissionProfiles();
[[nodiscard]] std::vector<std::string> admissionProfileNames();
inline constexpr std::string_view kDefaultAdmissionProfile = "switchyard-v1";

// The profile by name; `queueSort`, when not empty, replaces its queue sort.
[[nodiscard]] Result<std::shared_ptr<const Profile>> buildProfile(std::string_view name, std::span<const std::string> queueSort = {});

}  // namespace switchyard::admission

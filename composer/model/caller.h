// Who is asking: every mutating engine call carries a Caller, and every operation and event records it
// as its actor. With an identities file (composer/auth/identities.h) the API layers authenticate the
// caller (client certificate, bearer token, Redfish password or session) and the role and tenant come from
// that file; without one (a development daemon on loopback) the identity is what the client claims and
// the role is admin. The engine enforces what each role may change (composer/model/access.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard {

// viewer: reads everything, changes nothing. tenant: reads the pool, and sees and changes only its own
// tenant's systems. operator: changes any tenant's systems. admin: everything, including accounts.
enum class Role { kViewer, kTenant, kOperator, kAdmin };

struct Caller {
  std::string identity;      // a user or service name: "alice", "slurm-controller", "yardd"
  Role role = Role::kAdmin;  // what it may do
  std::string tenant;        // the tenant it acts for (a tenant role always has one); empty: any

  // The caller of a request that says nothing about itself (a local yardctl, a test).
  [[nodiscard]] static Caller local() { return {"local", Role::kAdmin, {}}; }
  // yardd itself: reconcile, fabric health, recovery at start.
  [[nodiscard]] static Caller daemon() { return {"yardd", Role::kAdmin, {}}; }

  friend bool operator==(const Caller&, const Caller&) = default;
};

// The actors of what yardd starts on its own: a lease's end, a preemption, an idle GPU taken back, an idle GPU
// moved to make room (defragmentation).
inline constexpr std::string_view kLeaseActor = "yardd (lease)";
inline constexpr std::string_view kPreemptionActor = "yardd (preemption)";
inline constexpr std::string_view kReclaimActor = "yardd (reclaim)";
inline constexpr std::string_view kDefragActor = "yardd (defragmentation)";

// Why devices leave a host, as the host's hooks are told (YARD_DETACH_REASON): "lease", "preemption",
// "reclaim", "move" for what yardd started on its own, "request" for everything asked for.
[[nodiscard]] inline std::string_view detachReason(std::string_view actor) {
  if (actor == kLeaseActor) return "lease";
  if (actor == kPreemptionActor) return "preemption";
  if (actor == kReclaimActor) return "reclaim";
  if (actor == kDefragActor) return "move";
  return "request";
}

[[nodiscard]] std::string_view toString(Role role);
[[nodiscard]] std::optional<Role> parseRole(std::string_view s);

}  // namespace switchyard

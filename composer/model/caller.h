// Who is asking: every mutating engine call carries a Caller, and every operation and event records it
// as its actor. Until authentication exists (mTLS or tokens: the security issue), the identity is what
// the client claims and the role is admin; the plumbing is what this type is for.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard {

enum class Role { kViewer, kOperator, kAdmin };

struct Caller {
  std::string identity;      // a user or service name: "alice", "slurm-controller", "yardd"
  Role role = Role::kAdmin;  // what it may do (not enforced yet)
  std::string tenant;        // the tenant it acts for; empty: any

  // The caller of a request that says nothing about itself (a local yardctl, a test).
  [[nodiscard]] static Caller local() { return {"local", Role::kAdmin, {}}; }
  // yardd itself: reconcile, fabric health, recovery at start.
  [[nodiscard]] static Caller daemon() { return {"yardd", Role::kAdmin, {}}; }

  friend bool operator==(const Caller&, const Caller&) = default;
};

[[nodiscard]] std::string_view toString(Role role);
[[nodiscard]] std::optional<Role> parseRole(std::string_view s);

}  // namespace switchyard

#include "composer/model/access.h"

#include <fmt/format.h>

namespace switchyard {

bool maySee(const Caller& caller, std::string_view tenant) {
  return caller.role != Role::kTenant || tenant.empty() || tenant == caller.tenant;
}

Result<void> mayChange(const Caller& caller, std::string_view tenant, std::string_view what) {
  switch (caller.role) {
    case Role::kAdmin:
    case Role::kOperator: return {};
    case Role::kViewer:
      return fail(Code::kPermissionDenied, fmt::format("'{}' has the viewer role, which may not {}", caller.identity, what));
    case Role::kTenant:
      if (tenant == caller.tenant) return {};
      return fail(Code::kPermissionDenied,
                  fmt::format("'{}' acts for tenant '{}' and may not {} for tenant '{}'", caller.identity, caller.tenant, what, tenant));
  }
  return fail(Code::kPermissionDenied, "unknown role");
}

}  // namespace switchyard

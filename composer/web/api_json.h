// How the operator endpoint writes the domain's objects as JSON (/api/v1/*, the console's pages and changes):
// one shape per object, whichever list or page shows it. Times are RFC 3339 UTC.
#pragma once

#include <nlohmann/json.hpp>

#include "composer/engine/pool_view.h"
#include "composer/engine/usage_groups.h"
#include "composer/model/composition.h"

namespace switchyard::web {

// A device as the pool lists it; `system` is the system it is in (null: none), `visible` whether the caller may
// see that system (else it is named "(another tenant)" and its host-side identity is left out).
[[nodiscard]] nlohmann::json deviceJson(const DeviceView& d, const System* system, bool visible);
[[nodiscard]] nlohmann::json systemJson(const System& s);
[[nodiscard]] nlohmann::json eventJson(const Event& e);
// An operation with its steps (what each acted on, its attempts and message, when it finished).
[[nodiscard]] nlohmann::json operationJson(const Operation& op);
[[nodiscard]] nlohmann::json usageGroupJson(const UsageGroup& g);

}  // namespace switchyard::web

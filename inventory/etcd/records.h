// The etcd store's values: each domain record as one JSON document. Parsing is strict about enums (an
// unknown state is an error naming the key), lenient about fields added later (absent means default).
#pragma once

#include <nlohmann/json.hpp>

#include "composer/model/audit.h"
#include "composer/model/composition.h"
#include "composer/model/demand.h"
#include "composer/model/error.h"
#include "composer/model/topology.h"

namespace switchyard::etcd {

[[nodiscard]] nlohmann::json toJson(const Topology& t);
[[nodiscard]] nlohmann::json toJson(const System& s);
[[nodiscard]] nlohmann::json toJson(const Operation& op);
[[nodiscard]] nlohmann::json toJson(const DeviceAssignment& a);
[[nodiscard]] nlohmann::json toJson(const Event& e);
[[nodiscard]] nlohmann::json toJson(const AuditRecord& a);
[[nodiscard]] nlohmann::json toJson(const DemandShape& d);
[[nodiscard]] nlohmann::json toJson(const IdleStretch& s);

// `what` names the record in errors (its key).
[[nodiscard]] Result<Topology> topologyFrom(std::string_view text, std::string_view what);
[[nodiscard]] Result<System> systemFrom(std::string_view text, std::string_view what);
[[nodiscard]] Result<Operation> operationFrom(std::string_view text, std::string_view what);
[[nodiscard]] Result<DeviceAssignment> assignmentFrom(std::string_view text, std::string_view what);
[[nodiscard]] Result<Event> eventFrom(std::string_view text, std::string_view what);
[[nodiscard]] Result<AuditRecord> auditFrom(std::string_view text, std::string_view what);
[[nodiscard]] Result<DemandShape> demandFrom(std::string_view text, std::string_view what);
[[nodiscard]] Result<IdleStretch> idleStretchFrom(std::string_view text, std::string_view what);

}  // namespace switchyard::etcd

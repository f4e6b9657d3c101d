// The stored form of a queued compose (composer/model/queue.h): one JSON object, written by both stores
// (a column of operations in SQLite, a field of the operation's record in etcd).
#pragma once

#include <nlohmann/json.hpp>

#include "composer/model/error.h"
#include "composer/model/queue.h"

namespace switchyard {

[[nodiscard]] nlohmann::json queuedToJson(const QueuedRequest& q);
// kInternal naming `what` when the object is damaged.
[[nodiscard]] Result<QueuedRequest> queuedFromJson(const nlohmann::json& j, std::string_view what);

}  // namespace switchyard

// Topology files (JSON): the simulated fabric's input and `yardd --topology`. Strict: unknown fields,
// wrong types and dangling references are errors that name the file, the line or field, and the problem.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "composer/model/error.h"
#include "composer/model/topology.h"

namespace switchyard {

[[nodiscard]] Result<Topology> parseTopologyJson(std::string_view text, std::string_view sourceName);
[[nodiscard]] Result<Topology> loadTopologyFile(const std::filesystem::path& path);
[[nodiscard]] nlohmann::json topologyToJson(const Topology& topology);

}  // namespace switchyard

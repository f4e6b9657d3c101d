// Where the project's shared reference data lives (../shared from the repository root: Redfish mockups,
// traces). SWITCHYARD_SHARED_DIR overrides it. Tests that need it skip, naming the path, when it is absent.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace switchyard::testing {

inline std::filesystem::path sharedDir() {
  if (const char* env = std::getenv("SWITCHYARD_SHARED_DIR"); env && *env) return env;
  return std::filesystem::path(SWITCHYARD_SOURCE_DIR) / ".." / "shared";
}

}  // namespace switchyard::testing

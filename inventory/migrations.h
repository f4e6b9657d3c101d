// Versioned schema migrations. Append only: a shipped migration is never edited; a new version adds one.
#pragma once

#include <string_view>
#include <vector>

namespace switchyard {

struct Migration {
  int version;
  std::string_view description;
  std::string_view sql;
};

[[nodiscard]] const std::vector<Migration>& schemaMigrations();

}  // namespace switchyard

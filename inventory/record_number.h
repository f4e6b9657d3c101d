// The number in a record id ("sys-000042", "op-7" -> 42, 7): what stores order systems and operations by
// and count from. 0 when the id has no number after its last dash.
#pragma once

#include <cstdint>
#include <string_view>

namespace switchyard {

[[nodiscard]] inline std::uint64_t numberFromId(std::string_view id) {
  const auto dash = id.rfind('-');
  if (dash == std::string_view::npos) return 0;
  std::uint64_t n = 0;
  for (char c : id.substr(dash + 1)) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

}  // namespace switchyard

// Files that hold secrets yardd reads at start: a password file's first line, and the rule that a file of
// secrets (the identities, etcd's password) anyone on the machine may read or write is refused.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "composer/model/error.h"

namespace switchyard {

// The first line of `file` (a password kept out of ps and shell history); `flag` names it in the error.
[[nodiscard]] Result<std::string> readPasswordFile(const std::filesystem::path& file, std::string_view flag);

// Refuses `file` when its mode lets others read or write it, saying how to fix it.
[[nodiscard]] Result<void> refuseIfOthersMayRead(const std::filesystem::path& file, std::string_view flag);

}  // namespace switchyard

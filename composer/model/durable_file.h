// Writing a state file so that it is either the old one or the whole new one, also on a full disk or a
// crash: write a temporary file beside it, fsync it, check that close succeeded (a full disk often shows
// only there), rename it over the old one, and fsync the directory so the rename itself survives power loss.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string_view>

#include "composer/model/error.h"

namespace switchyard {

// kUnavailable with the path and the system's reason when any step fails; the old file is then untouched.
[[nodiscard]] Result<void> writeFileDurably(const std::filesystem::path& path, std::string_view content, mode_t mode = 0644);

// A daemon's --port-file: the port it listens on, written whole (a reader never sees half a number); nothing
// when `path` is empty.
[[nodiscard]] Result<void> writePortFile(const std::filesystem::path& path, int port);

}  // namespace switchyard

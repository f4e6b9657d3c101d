// The --config files of yardd and yard-agent (TOML, as CLI11 reads it), checked line by line before they count:
// CLI11 skips keys it does not know and reads a broken line as some value, so a typo in a key or an unclosed
// quote would start a daemon on defaults the operator never meant.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "composer/model/error.h"

namespace switchyard {

// Accepts comments (#, ;), blank lines, [section] headers and `key = value` lines whose value is a closed
// quoted string ("..." with escapes, '...'), a [list] of values (it may span lines), or one bare word (a number,
// true, a name). Every key must satisfy `known` (given the key as written, section prefix included).
// The error names the line: "line 3: unknown key 'listen_typo'".
[[nodiscard]] Result<void> checkConfigSyntax(std::string_view text, const std::function<bool(const std::string& key)>& known);
// The value of --config (as `--config PATH` or `--config=PATH`) among a program's arguments; "" when absent.
// Checked before the arguments are parsed: CLI11 would read the file first and stop on some lines with its own words.
[[nodiscard]] std::string configArgument(int argc, const char* const* argv);
// checkConfigSyntax for a file: "--config PATH: line 3: ...", or that it cannot be read.
[[nodiscard]] Result<void> checkConfigFile(const std::filesystem::path& path, const std::function<bool(const std::string& key)>& known);

// The --config file among argv (if any) checked against a CLI11 App's options: a key is known when it is a long
// flag's name (or a one-letter short one). A template, so that this header does not need CLI11.
template <typename App>
[[nodiscard]] Result<void> checkConfigOf(App& app, int argc, const char* const* argv) {
  const std::string path = configArgument(argc, argv);
  if (path.empty()) return {};
  return checkConfigFile(path, [&app](const std::string& key) {
    return app.get_option_no_throw("--" + key) != nullptr || (key.size() == 1 && app.get_option_no_throw("-" + key) != nullptr);
  });
}

}  // namespace switchyard

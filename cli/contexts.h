// Named connections to yardd, like kubeconfig's contexts: a server and how to trust it and prove who you
// are, kept in ~/.config/switchyard/config.json (mode 0600; $YARD_CONFIG names another file). `yardctl
// context set/use/list/delete`, `--context NAME` or YARD_CONTEXT for one command. What a context says is
// overridden by the YARD_* variables, which the flags override in turn.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace yardctl {

struct Context {
  std::string server, ca, cert, key, tokenFile;
  bool plaintext = false;
};

struct ContextFile {
  std::string current;  // the context used when none is named
  std::map<std::string, Context> contexts;

  [[nodiscard]] static std::filesystem::path path();
  // The file's contexts; no file: none. `error` says what is wrong with a file that cannot be read.
  [[nodiscard]] static std::optional<ContextFile> load(std::string& error);
  // Written whole to a temporary file (0600) and renamed over the old one.
  [[nodiscard]] bool save(std::string& error) const;
  // Where `yardctl login` keeps the token of a context (0600).
  [[nodiscard]] static std::filesystem::path tokenPath(const std::string& context);
};

// The context a command runs with: --context NAME (found in argv before flags are parsed), else YARD_CONTEXT,
// else the file's current one; none when there is no file. A named context that does not exist is an error.
struct ChosenContext {
  std::string name;
  std::optional<Context> context;
};
[[nodiscard]] std::optional<ChosenContext> chooseContext(int argc, char** argv, std::string& error);

}  // namespace yardctl

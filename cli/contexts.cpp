#include "cli/contexts.h"
#include "cli/connection.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace yardctl {

namespace {

std::filesystem::path configDir() {
  if (auto xdg = env("XDG_CONFIG_HOME"); !xdg.empty()) return std::filesystem::path(xdg) / "switchyard";
  if (auto home = env("HOME"); !home.empty()) return std::filesystem::path(home) / ".config/switchyard";
  return std::filesystem::path(".switchyard");
}

}  // namespace

std::filesystem::path ContextFile::path() {
  if (auto file = env("YARD_CONFIG"); !file.empty()) return file;
  return configDir() / "config.json";
}

std::filesystem::path ContextFile::tokenPath(const std::string& context) { return path().parent_path() / "tokens" / (context + ".token"); }

std::optional<ContextFile> ContextFile::load(std::string& error) {
  ContextFile file;
  const auto p = path();
  std::ifstream in(p);
  if (!in) return file;  // no file yet: no contexts
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto doc = nlohmann::json::parse(text.str());
    file.current = doc.value("current-context", "");
    const nlohmann::json contexts = doc.contains("contexts") ? doc.at("contexts") : nlohmann::json::object();
    if (!contexts.is_object()) throw nlohmann::json::type_error::create(302, "contexts must be an object", nullptr);
    for (const auto& [name, c] : contexts.items()) {
      Context ctx;
      ctx.server = c.value("server", "");
      ctx.ca = c.value("ca", "");
      ctx.cert = c.value("cert", "");
      ctx.key = c.value("key", "");
      ctx.tokenFile = c.value("token-file", "");
      ctx.plaintext = c.value("plaintext", false);
      file.contexts[name] = ctx;
    }
  } catch (const nlohmann::json::exception& e) {
    error = fmt::format("{}: not a yardctl configuration ({}); fix or remove it", p.string(), e.what());
    return std::nullopt;
  }
  return file;
}

bool ContextFile::save(std::string& error) const {
  nlohmann::json doc;
  doc["current-context"] = current;
  doc["contexts"] = nlohmann::json::object();
  for (const auto& [name, c] : contexts) {
    nlohmann::json entry{{"server", c.server}};
    if (!c.ca.empty()) entry["ca"] = c.ca;
    if (!c.cert.empty()) entry["cert"] = c.cert;
    if (!c.key.empty()) entry["key"] = c.key;
    if (!c.tokenFile.empty()) entry["token-file"] = c.tokenFile;
    if (c.plaintext) entry["plaintext"] = true;
    doc["contexts"][name] = entry;
  }
  const auto p = path();
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  const auto tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) {
      error = fmt::format("cannot write {}", tmp);
      return false;
    }
    ::chmod(tmp.c_str(), 0600);
    out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!out.flush()) {
      error = fmt::format("cannot write {}", tmp);
      return false;
    }
  }
  std::filesystem::rename(tmp, p, ec);
  if (ec) {
    error = fmt::format("cannot replace {}: {}", p.string(), ec.message());
    return false;
  }
  return true;
}

std::optional<ChosenContext> chooseContext(int argc, char** argv, std::string& error) {
  std::string named;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--context" && i + 1 < argc) named = argv[i + 1];
    else if (arg.starts_with("--context=")) named = std::string(arg.substr(10));
  }
  if (named.empty()) named = env("YARD_CONTEXT");
  auto file = ContextFile::load(error);
  if (!file) return std::nullopt;
  const std::string name = named.empty() ? file->current : named;
  if (name.empty()) return ChosenContext{};
  auto it = file->contexts.find(name);
  if (it == file->contexts.end()) {
    if (named.empty()) return ChosenContext{};  // a current context that was deleted: none
    error = fmt::format("no context '{}' in {} (`yardctl context list`)", name, ContextFile::path().string());
    return std::nullopt;
  }
  return ChosenContext{name, it->second};
}

}  // namespace yardctl

#include "cli/session_commands.h"

#include <termios.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "composer/model/queue.h"

namespace yardctl {

namespace {

// A password from the terminal without echo, or the first line of stdin when it is not a terminal.
std::string readPassword(const std::string& prompt) {
  std::string password;
  if (!::isatty(STDIN_FILENO)) {
    std::getline(std::cin, password);
    return password;
  }
  std::cerr << prompt << std::flush;
  termios old{};
  ::tcgetattr(STDIN_FILENO, &old);
  termios quiet = old;
  quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
  ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  std::getline(std::cin, password);
  ::tcsetattr(STDIN_FILENO, TCSANOW, &old);
  std::cerr << "\n";
  return password;
}

bool writeToken(const std::filesystem::path& path, const std::string& token, std::string& error) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::filesystem::permissions(path.parent_path(), std::filesystem::perms::owner_all, ec);
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    std::filesystem::permissions(tmp, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ec);
    out << token << "\n";
    if (!out.flush()) {
      error = "cannot write " + tmp;
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) error = fmt::format("cannot write {}: {}", path.string(), ec.message());
  return !ec;
}

int saveFile(const ContextFile& file) {
  std::string error;
  if (file.save(error)) return kExitOk;
  std::cerr << "error: " << error << "\n";
  return kExitServer;
}

std::optional<ContextFile> loadFile(int& rc) {
  std::string error;
  auto file = ContextFile::load(error);
  if (!file) {
    std::cerr << "error: " << error << "\n";
    rc = kExitUsage;
  }
  return file;
}

}  // namespace

void addSessionCommands(CLI::App& app, Globals& globals, const std::function<Client&()>& client, const ChosenContext& chosenContext,
                        int& exitCode) {
  // The flags' values outlive this function (the callbacks run after parsing): they live here.
  struct Values {
    std::string loginName, ttlText = "12h", contextName;
  };
  auto v = std::make_shared<Values>();
  Globals* gp = &globals;
  int* rcp = &exitCode;
  const ChosenContext* cp = &chosenContext;
  app.add_subcommand("whoami", "Who yardd takes you for (identity, role, tenant), through which context and server")->callback([gp, rcp, cp, client] {
    Globals& g = *gp;
    int& rc = *rcp;
    const ChosenContext& chosen = *cp;
    pb::WhoAmIResponse r;
    if ((rc = client().call(&pb::Switchyard::Stub::WhoAmI, pb::WhoAmIRequest{}, r)) != kExitOk) return;
    if (g.format() == Format::kJson) {
      std::cout << toJson(r) << "\n";
      return;
    }
    std::cout << fmt::format("identity:  {}\nrole:      {}\n", r.identity(), r.role());
    if (!r.tenant().empty()) std::cout << fmt::format("tenant:    {}\n", r.tenant());
    if (!r.authenticated()) std::cout << "note:      yardd has no identities file: it takes you at your word (--as), and everyone is an admin\n";
    else if (r.token_expires_at().empty() && g.connection.tokenFile.empty() && g.connection.cert.empty())
      std::cout << "note:      a bearer token from YARD_TOKEN; an identity with a password logs in with `yardctl login NAME`\n";
    if (!r.token_expires_at().empty()) std::cout << fmt::format("token:     from `yardctl login`, expires {}\n", r.token_expires_at());
    std::cout << fmt::format("server:    {} ({})\n", g.connection.server, r.server_version());
    if (!chosen.name.empty()) std::cout << fmt::format("context:   {}\n", chosen.name);
  });

  auto* login = app.add_subcommand("login",
                                   "Trade a name and password from yardd's identities file for a short-lived token, kept for the context "
                                   "(made as 'default' when there is none) so that later commands use it");
  login->add_option("name", v->loginName, "Your identity's name (default: $USER)");
  login->add_option("--ttl", v->ttlText, "How long the token lasts (90s, 30m, 8h, 2d; at most 7d). yardd forgets tokens when it restarts")
      ->capture_default_str();
  login->callback([gp, rcp, cp, client, v] {
    Globals& g = *gp;
    int& rc = *rcp;
    const ChosenContext& chosen = *cp;
    std::string& ttlText = v->ttlText;
    std::string& loginName = v->loginName;
    const auto ttl = switchyard::parseDuration(ttlText);
    if (!ttl) {
      std::cerr << "error: --ttl '" << ttlText << "': a duration such as 90s, 30m, 8h or 2d\n";
      rc = kExitUsage;
      return;
    }
    if (loginName.empty()) loginName = std::getenv("USER") ? std::getenv("USER") : "";
    if (loginName.empty()) {
      std::cerr << "error: no name to log in as: $USER is not set; name your identity: `yardctl login NAME`\n";
      rc = kExitUsage;
      return;
    }
    pb::LoginRequest req;
    req.set_name(loginName);
    req.set_password(readPassword(fmt::format("Password for {} at {}: ", loginName, g.connection.server)));
    req.set_ttl_seconds(std::chrono::duration_cast<std::chrono::seconds>(*ttl).count());
    pb::LoginResponse r;
    if ((rc = client().call(&pb::Switchyard::Stub::Login, req, r)) != kExitOk) return;
    auto file = loadFile(rc);
    if (!file) return;
    const std::string name = chosen.name.empty() ? "default" : chosen.name;
    Context& ctx = file->contexts[name];
    if (chosen.name.empty()) {  // a new context: where this login went, and how
      ctx.server = g.connection.server;
      ctx.ca = g.connection.ca;
      ctx.plaintext = g.connection.plaintext;
      if (file->current.empty()) file->current = name;
    }
    const auto tokenPath = ContextFile::tokenPath(name);
    std::string error;
    if (!writeToken(tokenPath, r.token(), error)) {
      std::cerr << "error: " << error << "\n";
      rc = kExitServer;
      return;
    }
    ctx.tokenFile = tokenPath.string();
    if ((rc = saveFile(*file)) != kExitOk) return;
    std::cout << fmt::format("logged in as {} ({}{}) until {}; context '{}' uses the token ({})\n", r.identity(), r.role(),
                             r.tenant().empty() ? "" : ", tenant " + r.tenant(), r.expires_at(), name, tokenPath.string());
  });

  app.add_subcommand("logout", "Forget the context's login token (yardd forgets it when it expires)")->callback([rcp, cp] {
    int& rc = *rcp;
    const ChosenContext& chosen = *cp;
    auto file = loadFile(rc);
    if (!file) return;
    const std::string name = chosen.name.empty() ? "default" : chosen.name;
    auto it = file->contexts.find(name);
    if (it == file->contexts.end() || it->second.tokenFile.empty()) {
      std::cout << "not logged in (context '" << name << "' holds no token)\n";
      return;
    }
    std::error_code ec;
    std::filesystem::remove(it->second.tokenFile, ec);
    it->second.tokenFile.clear();
    if ((rc = saveFile(*file)) == kExitOk) std::cout << "logged out of context '" << name << "'\n";
  });

  auto* context = app.add_subcommand("context", "Named connections to yardd (server, trust, credentials), like kubeconfig contexts; "
                                                "`context` alone lists them");
  context->footer("The file: " + ContextFile::path().string() + " ($YARD_CONFIG names another). Precedence: flags, then YARD_* variables, "
                  "then the context.");
  auto* use = context->add_subcommand("use", "Make a context the current one");
  use->add_option("name", v->contextName, "The context")->required();
  use->callback([rcp, v] {
    int& rc = *rcp;
    const std::string& contextName = v->contextName;
    auto file = loadFile(rc);
    if (!file) return;
    if (!file->contexts.contains(contextName)) {
      std::cerr << "error: no context '" << contextName << "' (`yardctl context list`)\n";
      rc = kExitRefused;
      return;
    }
    file->current = contextName;
    if ((rc = saveFile(*file)) == kExitOk) std::cout << "current context: " << contextName << "\n";
  });
  auto* set = context->add_subcommand("set", "Create or change a context from the connection flags given with it "
                                             "(--server, --ca, --cert/--key, --token-file, --plaintext)");
  set->add_option("name", v->contextName, "The context")->required();
  set->callback([gp, rcp, v, set] {
    int& rc = *rcp;
    const std::string& contextName = v->contextName;
    const Globals& g = *gp;
    auto file = loadFile(rc);
    if (!file) return;
    Context& ctx = file->contexts[contextName];
    const Connection& c = g.connection;
    auto given = [set](const char* flag) {  // global flags count where they were given: on the command or above it
      for (const CLI::App* a = set; a != nullptr; a = a->get_parent())
        if (a->count(flag) > 0) return true;
      return false;
    };
    if (given("--server") || ctx.server.empty()) ctx.server = c.server;
    if (given("--ca")) ctx.ca = std::filesystem::absolute(c.ca).string();
    if (given("--cert")) ctx.cert = std::filesystem::absolute(c.cert).string();
    if (given("--key")) ctx.key = std::filesystem::absolute(c.key).string();
    if (given("--token-file")) ctx.tokenFile = std::filesystem::absolute(c.tokenFile).string();
    if (given("--plaintext")) ctx.plaintext = c.plaintext;
    if (file->current.empty()) file->current = contextName;
    if ((rc = saveFile(*file)) == kExitOk)
      std::cout << fmt::format("context '{}': server {}{}\n", contextName, ctx.server, file->current == contextName ? " (current)" : "");
  });
  auto* remove = context->add_subcommand("delete", "Delete a context (and its login token)");
  remove->add_option("name", v->contextName, "The context")->required();
  remove->callback([rcp, v] {
    int& rc = *rcp;
    const std::string& contextName = v->contextName;
    auto file = loadFile(rc);
    if (!file) return;
    auto it = file->contexts.find(contextName);
    if (it == file->contexts.end()) {
      std::cerr << "error: no context '" << contextName << "'\n";
      rc = kExitRefused;
      return;
    }
    std::error_code ec;
    if (it->second.tokenFile == ContextFile::tokenPath(contextName).string()) std::filesystem::remove(it->second.tokenFile, ec);
    file->contexts.erase(it);
    if (file->current == contextName) file->current.clear();
    if ((rc = saveFile(*file)) == kExitOk) std::cout << "deleted context '" << contextName << "'\n";
  });
  auto* list = context->add_subcommand("list", "List the contexts; * marks the current one");
  auto listContexts = [gp, rcp] {
    int& rc = *rcp;
    const Globals& g = *gp;
    auto file = loadFile(rc);
    if (!file) return;
    if (g.format() == Format::kJson) {
      nlohmann::json doc{{"current", file->current}, {"contexts", nlohmann::json::array()}};
      for (const auto& [name, c] : file->contexts)
        doc["contexts"].push_back({{"name", name}, {"server", c.server}, {"ca", c.ca}, {"cert", c.cert}, {"token_file", c.tokenFile},
                                   {"plaintext", c.plaintext}});
      std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return;
    }
    if (file->contexts.empty()) {
      std::cout << "no contexts (`yardctl context set NAME --server HOST:PORT --ca FILE`, or `yardctl login`)\n";
      return;
    }
    std::cout << fmt::format("  {:<16} {:<28} {}\n", "NAME", "SERVER", "CREDENTIALS");
    for (const auto& [name, c] : file->contexts) {
      std::string credentials = !c.tokenFile.empty() ? "token " + c.tokenFile : !c.cert.empty() ? "certificate " + c.cert : "-";
      std::cout << fmt::format("{} {:<16} {:<28} {}\n", name == file->current ? "*" : " ", name, c.server + (c.plaintext ? " (plaintext)" : ""),
                               credentials);
    }
  };
  list->callback(listContexts);
  context->callback([context, listContexts] {
    if (context->get_subcommands().empty()) listContexts();
  });
}

}  // namespace yardctl

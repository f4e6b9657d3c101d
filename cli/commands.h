// yardctl's commands, a file for each group: what each `add...` function adds to the command line, and what
// every command's callback shares (CommandContext).
#pragma once

#include <functional>
#include <memory>

#include "cli/client.h"

namespace CLI {
class App;
}

namespace yardctl {

// What a command's callback needs: the global flags, the client (connected on first use, once the flags
// are parsed) and where its exit code goes. Copied into the callbacks: g and rc outlive the parse.
struct CommandContext {
  Globals& g;
  std::function<Client&()> client;
  int& rc;

  // Every page of a list, merged into one response; yardctl's exit code.
  template <typename Method, typename Request, typename Response>
  int allPages(Method method, Request request, Response& out) const {
    while (true) {
      Response page;
      if (int r = client().call(method, request, page); r != kExitOk) return r;
      const std::string next = page.next_page_token();
      out.MergeFrom(page);
      out.clear_next_page_token();
      if (next.empty()) return kExitOk;
      request.set_page_token(next);
    }
  }
};

// hosts, devices (and `devices release`), systems, topology: cli/inventory_commands.cpp.
void addInventoryCommands(CLI::App& app, const CommandContext& ctx);
// compose, attach, detach, decompose, renew: cli/change_commands.cpp.
void addChangeCommands(CLI::App& app, const CommandContext& ctx);
// plan, capacity: cli/planning_commands.cpp.
void addPlanningCommands(CLI::App& app, const CommandContext& ctx);
// queue, `queue cancel`, usage: cli/queue_commands.cpp.
void addQueueCommands(CLI::App& app, const CommandContext& ctx);
// ops, `ops show`, `ops wait`, watch: cli/operation_commands.cpp.
void addOperationCommands(CLI::App& app, const CommandContext& ctx);

}  // namespace yardctl

// yardctl: the Switchyard command line. Talks to yardd over gRPC (switchyard.v1).
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fmt/format.h>
#include <iostream>

#include "cli/agents_command.h"
#include "cli/release_command.h"
#include "cli/audit_command.h"
#include "cli/idle_command.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/connection.h"
#include "cli/contexts.h"
#include "cli/safe_terminal.h"
#include "cli/session_commands.h"
#include "composer/model/version.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace pb = switchyard::v1;
using yardctl::Format;
using namespace yardctl;  // Globals, Client, emit and the exit codes (cli/client.h)

namespace {

// Adds the global flags to a command and to every command below it. Each copy writes the same variable, so
// the flag counts wherever it is given.
void addGlobalFlags(CLI::App* cmd, Globals& g) {
  const std::string group = "Global flags (before or after the command)";
  cmd->add_option("-o,--output", g.output, "table or json (and csv for `yardctl usage`)")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--timeout", g.timeoutSeconds, "Seconds to wait for each call")->check(CLI::PositiveNumber)->capture_default_str()->group(group);
  cmd->add_option("--context", g.context, "Connect as this named context says (`yardctl context`; YARD_CONTEXT)")->group(group);
  g.connection.addFlags(cmd, group);
  for (CLI::App* sub : cmd->get_subcommands([](CLI::App*) { return true; })) addGlobalFlags(sub, g);
}

}  // namespace

static int runYardctl(int argc, char** argv) {
  Globals g;
  // The context (cli/contexts.h) fills in what neither the YARD_* variables nor the flags say.
  std::string contextError;
  const auto chosen = yardctl::chooseContext(argc, argv, contextError);
  if (!chosen) {
    std::cerr << "error: " << contextError << "\n";
    return kExitUsage;
  }
  if (chosen->context) g.connection = Connection::fromEnvironment(&*chosen->context);
  CLI::App app{"yardctl: compose and inspect logical servers on a Switchyard fabric.\n\n"
               "Examples:\n"
               "  yardctl devices                          what is in the pool, and who holds it\n"
               "  yardctl devices --free --switch sw3      what a compose could take under one switch\n"
               "  yardctl plan --gpus 4 --p2p required     where 4 peer-to-peer GPUs would go, and why\n"
               "  yardctl compose train-a --gpus 4         bind 4 GPUs to a free host; waits, showing each step\n"
               "  yardctl attach train-a --gpus 2          grow it\n"
               "  yardctl detach train-a -d sw0-gpu3       shrink it\n"
               "  yardctl compose infer-b --mig 3g,1g,1g   fractional GPUs: MIG instances on MIG-capable GPUs\n"
               "  yardctl detach infer-b -i sw0-gpu5@4     drop one MIG instance (device@first-slice)\n"
               "  yardctl compose svc --gpu-share 0.25     a quarter of one GPU's time (time-sliced)\n"
               "  yardctl attach svc --gpu-share 0.5       another share: on the system's GPU when it has room\n"
               "  yardctl decompose train-a                give everything back\n"
               "  yardctl compose big --gpus 8 --queue     wait in the queue when 8 GPUs are not free now\n"
               "  yardctl compose job --gpus 2 --lease 8h  decomposed after 8 hours (`yardctl renew job --lease 2h`)\n"
               "  yardctl queue                            what waits, in admission order, and why\n"
               "  yardctl topology                         switches, ports and what is bound where\n"
               "  yardctl capacity                         how many 1/2/4/8/16-GPU requests still fit\n"
               "  yardctl -o json systems | jq .           the same data for scripts\n"};
  app.footer("Exit codes: 0 ok; 1 the operation failed and was rolled back; 2 usage or invalid request;\n"
             "3 not found, does not fit, busy, already exists, or not allowed (credentials, role, tenant, quota);\n"
             "4 yardd unreachable or failing.\n"
             "YARD_SERVER sets the default --server; YARD_CA, YARD_CERT/YARD_KEY, YARD_TOKEN_FILE (or YARD_TOKEN) and\n"
             "YARD_PLAINTEXT=1 set how to connect and authenticate; they override the context (`yardctl context`,\n"
             "--context NAME or YARD_CONTEXT), and the flags override them.");
  app.require_subcommand(1);
  app.set_version_flag("--version", switchyard::versionLine("yardctl"), "Print yardctl's version (and git commit) and exit");

  // Created on first use, after the global flags are parsed.
  std::unique_ptr<Client> clientHolder;
  auto client = [&]() -> Client& {
    if (!clientHolder) clientHolder = std::make_unique<Client>(g);
    return *clientHolder;
  };
  int rc = kExitOk;

  const CommandContext commands{g, client, rc};
  addInventoryCommands(app, commands);
  addChangeCommands(app, commands);
  addPlanningCommands(app, commands);
  addQueueCommands(app, commands);
  addOperationCommands(app, commands);
  yardctl::addSessionCommands(app, g, client, *chosen, rc);

  yardctl::addAuditCommand(app, [&](const pb::ListAuditRequest& req, pb::ListAuditResponse& r) {
    return client().call(&pb::Switchyard::Stub::ListAudit, req, r);
  }, [&] { return g.format(); }, rc);
  yardctl::addAgentsCommand(app,
                            {[&](pb::ListAgentsResponse& r) {
                               auto registry = client().stubOf<pb::AgentRegistry>();
                               return client().callOn(*registry, &pb::AgentRegistry::Stub::List, pb::ListAgentsRequest{}, r);
                             },
                             [&](const pb::DeregisterAgentRequest& req, pb::RegisteredAgent& gone) {
                               auto registry = client().stubOf<pb::AgentRegistry>();
                               return client().callOn(*registry, &pb::AgentRegistry::Stub::Deregister, req, gone);
                             }},
                            [&] { return g.format(); }, rc);
  yardctl::addIdleCommand(app, [&](const pb::ListIdleRequest& req, pb::ListIdleResponse& r) {
    return client().call(&pb::Switchyard::Stub::ListIdle, req, r);
  }, [&] { return g.format(); }, rc);

  // Global flags work before and after the command (`yardctl -o json hosts` and `yardctl hosts -o json`),
  // and every command's --help lists them.
  addGlobalFlags(&app, g);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "error: " << e.what() << "\nRun `yardctl --help` (or `yardctl COMMAND --help`) for usage.\n";
    return kExitUsage;
  }
  return rc;
}

int main(int argc, char** argv) {
  // Names, labels and messages can come from anyone: nothing printed may drive the terminal.
  yardctl::SafeTerminal safeOut(std::cout), safeErr(std::cerr);
  // gRPC's own log lines ("E1126 ... Handshake failed ...") repeat, rawly, what the error and its hint say;
  // GRPC_VERBOSITY set in the environment keeps them, for debugging.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
  // Every expected failure is an exit code with a message; this only keeps a bug from ending in abort().
  try {
    return runYardctl(argc, argv);
  } catch (const std::invalid_argument& e) {  // a connection flag that cannot work
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: internal error in yardctl: " << e.what() << "\nPlease report it with the command you ran.\n";
    return kExitServer;
  }
}

#include "cli/agents_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <memory>

namespace yardctl {

namespace pb = switchyard::v1;

namespace {

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string ago(std::int64_t thenMs, std::int64_t nowMs) {
  const std::int64_t s = std::max<std::int64_t>(0, (nowMs - thenMs) / 1000);
  if (s < 120) return fmt::format("{} s ago", s);
  if (s < 7200) return fmt::format("{} min ago", s / 60);
  return fmt::format("{} h ago", s / 3600);
}

}  // namespace

void printAgents(const pb::ListAgentsResponse& r, std::int64_t now, std::ostream& out) {
  if (r.agents_size() == 0) {
    out << "no yard-agent is registered (hosts served by the simulated fabric's own agents are not listed)\n";
    return;
  }
  Table t({"HOST", "ADDRESS", "LAST HEARD", "STATE"});
  for (const auto& a : r.agents())
    t.add({a.host_id(), a.address(), ago(a.last_heard_unix_ms(), now), a.alive() ? "alive" : "silent (no new work goes to this host)"});
  t.print(out);
}

void addAgentsCommand(CLI::App& app, AgentCalls calls, std::function<Format()> format, int& rc) {
  auto shared = std::make_shared<AgentCalls>(std::move(calls));
  auto* agents = app.add_subcommand("agents",
                                    "The yard-agents registered with yardd: where each listens and when it was last heard. A silent "
                                    "agent's host gets no new systems until it is heard again. Operators and admins");
  agents->callback([agents, shared, format, &rc] {
    if (!agents->get_subcommands().empty()) return;
    pb::ListAgentsResponse r;
    if ((rc = shared->list(r)) != 0) return;
    if (format() == Format::kJson)
      std::cout << toJson(r) << "\n";
    else
      printAgents(r, nowMs(), std::cout);
  });
  auto* remove = agents->add_subcommand("remove",
                                        "Forget a host's agent (a decommissioned host, an agent gone for good). Refused while the agent "
                                        "still heartbeats: stop it first. Audited");
  auto host = std::make_shared<std::string>();
  remove->add_option("host", *host, "The host whose agent to forget (see `yardctl agents`)")->required();
  remove->callback([shared, host, format, &rc] {
    pb::DeregisterAgentRequest req;
    req.set_host_id(*host);
    pb::RegisteredAgent gone;
    if ((rc = shared->deregister(req, gone)) != 0) return;
    if (format() == Format::kJson)
      std::cout << toJson(gone) << "\n";
    else
      std::cout << fmt::format("forgot the yard-agent of {} at {} (last heard {}); the host takes no work until an agent registers "
                               "for it or it gets another --host-policy\n",
                               gone.host_id(), gone.address(), ago(gone.last_heard_unix_ms(), nowMs()));
  });
}

}  // namespace yardctl

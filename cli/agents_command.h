// `yardctl agents`: the host agents registered with yardd (where each listens, when it was last heard),
// and `yardctl agents remove HOST` to forget a decommissioned host's agent.
#pragma once

#include <functional>
#include <ostream>

#include "cli/output.h"
#include "switchyard/v1/agent.grpc.pb.h"

namespace CLI {
class App;
}

namespace yardctl {

// The two calls, each returning yardctl's exit code (the caller prints errors).
struct AgentCalls {
  std::function<int(switchyard::v1::ListAgentsResponse&)> list;
  std::function<int(const switchyard::v1::DeregisterAgentRequest&, switchyard::v1::RegisteredAgent&)> deregister;
};

void addAgentsCommand(CLI::App& app, AgentCalls calls, std::function<Format()> format, int& rc);

// `now_ms`: the time the ages are counted to (Unix ms).
void printAgents(const switchyard::v1::ListAgentsResponse& r, std::int64_t nowMs, std::ostream& out);

}  // namespace yardctl

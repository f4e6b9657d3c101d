// yardctl's commands about who you are and where you connect: `whoami`, `login`/`logout` (a short-lived
// token for a password-only identity), and `context` (named servers with their credentials, cli/contexts.h).
#pragma once

#include <functional>

#include "cli/client.h"
#include "cli/contexts.h"

namespace CLI {
class App;
}

namespace yardctl {

void addSessionCommands(CLI::App& app, Globals& g, const std::function<Client&()>& client, const ChosenContext& chosen, int& rc);

}  // namespace yardctl

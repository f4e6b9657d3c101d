// -w/--watch on yardctl's list commands (issue 63, item 3): the list, then the list again each time yardd's event
// stream says something changed, until Ctrl-C or yardd ends the stream. A burst of events (one compose makes
// several) is one redraw. Table output puts a line with the time and what changed before each redraw; JSON
// output writes one document per redraw (a JSON-lines stream for scripts).
#pragma once

#include <functional>

#include "cli/commands.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace yardctl {

// Adds -w/--watch to a list command; `watch` is set when given.
CLI::Option* addWatchFlag(CLI::App* command, bool& watch);

// Runs `printList` (which prints the list once and returns yardctl's exit code), then again after each burst of
// events, for as long as the stream lasts. Returns the first failing exit code.
int watchList(const CommandContext& ctx, const std::function<int()>& printList);

}  // namespace yardctl

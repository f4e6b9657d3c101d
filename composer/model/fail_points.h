// Named fail points: places where a crash (or an injected error) tests what a real one would leave behind.
// Off unless configured (one relaxed atomic load per hit). The crash harness and the deterministic
// simulation (issue 24) set them; yardd takes `--fail-point NAME=ACTION`, any binary the environment
// variable SWITCHYARD_FAIL_POINTS="NAME=ACTION;NAME=ACTION".
//
// ACTION is crash (SIGKILL at once: no destructor, no flush, as a power cut or OOM kill would) or error
// (the hit returns kUnavailable), optionally @N: act on the N-th hit only (default the first).
//
// Points (docs/reliability.md lists them with what each one proves):
//   accept.after-persist          an operation and its reservation are durable; no step has run
//   queue.after-admit             a queued compose's admission is durable (host, reservation, steps); no step has run
//   step.<kind>.before            the previous outcome is durable; this step has not started
//   step.<kind>.after-call        a remote step's call returned (the switch or host did it); nothing is recorded
//   operation.after-finish        the operation's end is durable; waiters are not told yet
//   store.before-commit           inside a store transaction: written, not committed
//   store.after-commit            committed; the caller does not know yet
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "composer/model/error.h"

namespace switchyard::failpoints {

// Adds the points of `spec` ("NAME=ACTION[@N]", several separated by ';'); names must match a point
// above (step.<kind>.* for any kind). Returns what was set up, for the log.
[[nodiscard]] Result<std::string> configure(std::string_view spec);
// Reads SWITCHYARD_FAIL_POINTS, if set.
[[nodiscard]] Result<std::string> configureFromEnvironment();

// Whether any point is armed (cheap): callers that build a point's name check it first.
[[nodiscard]] bool armed();

// Acts if `name` is armed: kills the process, or returns kUnavailable. Otherwise (the usual case) nothing.
[[nodiscard]] Result<void> hit(std::string_view name);
// For a point whose caller cannot return an error: crash points act, error points are logged away.
void crashPoint(std::string_view name);

// The points with fixed names, and the per-step patterns, for the harness and --help.
[[nodiscard]] std::vector<std::string> fixedPoints();

}  // namespace switchyard::failpoints

// Deterministic simulation (issue 24): many clients (two tenants, an operator, a viewer) issue mixed
// requests against the real engine, SQLite store, simulated switch and simulated hosts, while every switch
// and host call is held at a Gate and given its fate by one seeded random stream: pass, fail, or apply and
// lose the reply; some replies come back late, after other calls ran and were answered; host agents restart;
// reconcile reads the switch, and host reconcile lists the hosts, among the steps; the clock is virtual. After every
// decision the simulation waits for the engine to settle and checks the invariants of
// ../shared/design/architecture-sketch.md. The same seed makes the same decisions in the same order, so a
// failing seed reproduces (its trace and digest are printed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::sim {

struct SimOptions {
  std::uint64_t seed = 1;
  int actions = 150;     // decisions before the drain
  bool trace = false;    // print every decision
  // "simulated" (the simulated switch and hosts) or "switchtec": the real Switchtec driver over loopback TCP
  // to the PAX emulator (two chips of 8 GPUs, four hosts with a port on each), hosts trusting the fabric.
  std::string driver = "simulated";
};

struct SimReport {
  std::uint64_t seed = 0;
  int accepted = 0, refused = 0, succeeded = 0, failed = 0;
  int queued = 0;        // composes that waited in the queue
  int faults = 0;        // calls failed or with lost replies, agent restarts
  int reconciles = 0;
  int checks = 0;        // invariant checks run
  std::vector<std::string> violations;
  // Why the seed could not be judged, if it could not: the third-party switch (cse) stopped answering for good
  // (it wedges now and then on a loaded machine). Not a violation; switchyard_sim fails when too many seeds are.
  std::string unjudged;
  std::uint64_t digest = 0;  // of the decisions and the final state: equal for equal seeds
  std::string trace;
};

[[nodiscard]] SimReport simulate(const SimOptions& options);

}  // namespace switchyard::sim

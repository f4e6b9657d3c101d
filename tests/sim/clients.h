// The simulation's four clients (tenants alice and bob, an operator, a viewer): the requests they make of the
// engine, through its client as the adapters make them (composes, attaches, detaches, decomposes, cancels, lease
// renewals, manifests and reservations, including ones they may not make), and what they were told. Invariant 6 is
// theirs: a request its caller may not make is refused with NOT_FOUND or PERMISSION_DENIED and changes nothing.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "composer/engine/engine_requests.h"
#include "composer/model/caller.h"
#include "composer/model/composition.h"
#include "tests/sim/simulation.h"

namespace switchyard {
class Engine;
}

namespace switchyard::sim {

inline const Caller kCallers[] = {{"alice", Role::kTenant, "team-a"}, {"bob", Role::kTenant, "team-b"}, {"ops", Role::kOperator, {}},
                                  {"watcher", Role::kViewer, {}}};
inline constexpr int kTeamAGpus = 6;
inline constexpr int kTeamASystems = 3;

// Live systems, as the engine has them.
[[nodiscard]] std::vector<System> liveSystems(Engine& engine);

class Clients {
 public:
  using Draw = std::function<int(int n)>;  // a number in [0, n), from the seed
  using Note = std::function<void(std::string line)>;
  // `migCapable`: the pool's GPUs make MIG instances (the simulated switch's; the Switchtec chips' do not).
  Clients(Engine& engine, bool migCapable, SimReport& report, Draw draw, Note note);

  // One client asks for one thing, answered on the control thread when the engine gets to it.
  void submit();

  // Requests asked and not yet answered: none once the engine settled.
  [[nodiscard]] int unanswered() const { return requests_; }
  // Operations accepted and not finished, with their tenant (queued ones too: once admitted they reserve devices).
  [[nodiscard]] const std::map<OperationId, std::string>& running() const { return running_; }
  // Every answer, in order (part of the run's digest).
  [[nodiscard]] const std::vector<std::string>& answers() const { return answers_; }
  // Invariant 6's violations since the last call.
  [[nodiscard]] std::vector<std::string> takeCrossings();

 private:
  int pick(int n) { return draw_(n); }
  void note(std::string line) { note_(std::move(line)); }
  [[nodiscard]] std::vector<ComposeRequest> twoSystems(const Caller& caller, int maxGpus);
  void composeTogether(const Caller& caller);
  void reserve(const Caller& caller);
  void useReservation(const Caller& caller);
  void renewLease(const Caller& caller, const System& target);
  void answered(const std::string& what, bool mustRefuse, Result<Operation> r);
  void answeredAll(const std::string& what, bool mustRefuse, Result<std::vector<Operation>> ops);
  void refusedAsSuch(const std::string& what, bool mustRefuse, const std::optional<Error>& refused);

  Engine& engine_;
  bool migCapable_;
  SimReport& report_;
  Draw draw_;
  Note note_;
  int requests_ = 0;  // asked and not yet answered
  std::map<OperationId, std::string> running_;
  std::vector<std::string> answers_;
  std::vector<std::string> crossings_;
  int names_ = 0;  // systems are named s1, s2, ...
};

}  // namespace switchyard::sim

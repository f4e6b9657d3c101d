// The placement framework: a pipeline of extension points in the spirit of the Kubernetes scheduling
// framework, over the composable pool (the cluster is the Pool, a request asks for GPUs, a candidate is a host).
//
//   pre-filter (once per request) -> candidates -> filter (each candidate) -> score (weighted sum)
//   -> select (highest total; ties go to the earlier candidate)
//
// Plugins come from an explicit Registry (no static-init magic); a Profile names the plugins and weights
// to run, so policies are chosen in configuration. Every candidate gets a diagnosis: which filter rejected
// it and why, or its score from each plugin. Pure: no I/O. Holding what was chosen is the engine's
// (PoolState), not a plugin's: the framework only decides.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/error.h"
#include "composer/packing/cycle_state.h"
#include "composer/packing/packing.h"
#include "composer/packing/pool.h"

namespace switchyard::placement {

// A host of the pool, by its index in Pool::hosts().
struct Candidate {
  int hostIndex;
};
// A candidate's name in diagnoses: its host's id.
[[nodiscard]] std::string describe(const Pool& pool, const Candidate& candidate);

// What a plugin's verdicts read (Plugin::reads()), for callers that keep verdicts across cycles
// (composable_model.h states the contract; placement_index.h relies on it).
enum Reads : unsigned {
  kHostSurroundings = 0,  // only the request, the host and its fabrics
  kDemandMix = 1u << 0,   // and the pool's demand mix
  // Any other bit: more of the pool than that; the placement index then runs the full cycle.
};

// "Does not fit" is an answer, not an error; kError is for broken plugins or inputs.
struct Status {
  enum Kind { kFits, kRejected, kError } kind = kFits;
  std::string reason;

  static Status fits() { return {}; }
  static Status rejected(std::string why) { return {kRejected, std::move(why)}; }
  static Status error(std::string why) { return {kError, std::move(why)}; }
  [[nodiscard]] bool ok() const { return kind == kFits; }
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // What this plugin's verdicts read besides the request and the candidate's own surroundings (Reads).
  // Callers that keep verdicts across cycles (Scheduler::evaluate) use it to know when a kept verdict may
  // have changed. The default claims every input, which is always safe.
  [[nodiscard]] virtual unsigned reads() const { return ~0u; }
};

class PreFilterPlugin : public virtual Plugin {
 public:
  virtual Status preFilter(CycleState& state, const Pool& pool, const PlacementRequest& request) = 0;
};

class CandidatePlugin : public virtual Plugin {
 public:
  virtual void candidates(CycleState& state, const Pool& pool, const PlacementRequest& request, std::vector<Candidate>& out) = 0;
};

class FilterPlugin : public virtual Plugin {
 public:
  virtual Status filter(CycleState& state, const Pool& pool, const PlacementRequest& request, const Candidate& candidate) = 0;
};

class ScorePlugin : public virtual Plugin {
 public:
  // Higher is better.
  virtual double score(CycleState& state, const Pool& pool, const PlacementRequest& request, const Candidate& candidate) = 0;
  // Rescales this plugin's scores over all feasible candidates; by default they are used as they are.
  virtual void normalize(std::vector<double>& /*scores*/) {}
  // Must be true when normalize() rescales: a candidate's score then depends on the others, and callers
  // that keep per-candidate verdicts across cycles (Scheduler::evaluate) cannot use the profile.
  [[nodiscard]] virtual bool normalizes() const { return false; }
};

// Scales scores linearly onto [0, 100] (all equal: all 0), as the Kubernetes framework's NormalizeScore.
inline void minMaxNormalize(std::vector<double>& scores) {
  if (scores.empty()) return;
  const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const double low = *lo, range = *hi - *lo;
  for (double& s : scores) s = range > 0 ? (s - low) * 100.0 / range : 0.0;
}

struct Profile {
  std::string name;
  std::vector<std::string> preFilters;
  std::string candidates;
  std::vector<std::string> filters;
  std::vector<std::pair<std::string, double>> scores;  // plugin, weight
};

struct CandidateDiagnosis {
  std::string candidate;                             // describe()
  bool feasible = false;
  std::string rejectedBy;                            // the filter that said no
  std::string reason;
  std::vector<std::pair<std::string, double>> scores;  // plugin, weighted (normalized) score
  double total = 0;
};

// True while every candidate must explain itself; plugins format reasons only then.
[[nodiscard]] inline bool explaining(const CycleState& state) { return state.explain; }

// A refusal not asked to explain every candidate explains this many of those each filter rejected (the first,
// in candidate order) and counts the rest: a person reads a few reasons of each kind, and formatting one per
// host made a refusal cost a thousand times a decision that fits at 10,000 hosts.
inline constexpr std::size_t kExplainedPerFilter = 8;

struct Decision {
  std::optional<Candidate> chosen;
  std::size_t chosenIndex = 0;  // into diagnoses, when explained
  // Explained: every candidate. A refusal otherwise: the first kExplainedPerFilter each filter rejected.
  std::vector<CandidateDiagnosis> diagnoses;
  std::vector<UnexplainedHosts> unexplained;  // a refusal: the candidates left out of diagnoses, per filter
  Status status;  // kRejected: nothing fits (see diagnoses); kError: a plugin or the input is broken
  CycleState state;  // what the plugins recorded (the chosen host's device plan among it)
};

class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Plugin>()>;
  void add(std::string name, Factory factory) { factories_[std::move(name)] = std::move(factory); }
  [[nodiscard]] Result<std::unique_ptr<Plugin>> make(const std::string& name) const;

 private:
  std::map<std::string, Factory> factories_;
};

class Scheduler {
 public:
  // Builds the plugins a profile names; an unknown plugin, or one at an extension point it does not
  // implement, is a configuration error.
  [[nodiscard]] static Result<std::shared_ptr<const Scheduler>> build(const Registry& registry, const Profile& profile);

  [[nodiscard]] const Profile& profile() const { return profile_; }

  // Pre-filter, candidates, filter, score, select. With `explain`, every candidate gets a diagnosis;
  // without it the hot path formats nothing, and a request that fits nowhere explains a few hosts per filter
  // (explainRefusal).
  [[nodiscard]] Decision schedule(const Pool& pool, const PlacementRequest& request, bool explain) const;

  // Per-candidate verdicts, for callers that keep them across cycles and re-evaluate only the candidates
  // whose inputs changed (placement_index.h). prepare() runs the pre-filters into a fresh cycle state;
  // evaluate() runs one candidate's filters and scores in that state and returns its weighted total,
  // summed as schedule() sums it. Only valid when perCandidate() (no score normalizes).
  struct Verdict {
    Status status;
    double total = 0;
    std::uint8_t rejectedBy = kNotRejected;  // the filter that said no, by its place in the profile
  };
  static constexpr std::uint8_t kNotRejected = 0xFF;
  [[nodiscard]] bool perCandidate() const;
  // What the profile's verdicts read (Plugin::reads() of every plugin it runs).
  [[nodiscard]] unsigned reads() const { return reads_; }
  Status prepare(CycleState& state, const Pool& pool, const PlacementRequest& request) const;
  [[nodiscard]] Verdict evaluate(CycleState& state, const Pool& pool, const PlacementRequest& request, const Candidate& candidate) const;
  // A refusal from verdicts already worked out: `rejectedBy` holds each host's rejecting filter (Verdict::
  // rejectedBy, by host index; kNotRejected for a host that was no candidate). The first kExplainedPerFilter
  // hosts of each filter are evaluated again, explained, in the prepared state of `d`; the rest are counted.
  void explainRefusal(Decision& d, const Pool& pool, const PlacementRequest& request, std::span<const std::uint8_t> rejectedBy) const;

 private:
  Scheduler() = default;

  template <typename Point>
  Result<Point*> instantiate(const Registry& registry, const std::string& name, std::string_view point);
  Decision run(const Pool& pool, const PlacementRequest& request, bool explain) const;

  Profile profile_;
  std::vector<std::unique_ptr<Plugin>> owned_;
  unsigned reads_ = 0;
  std::vector<PreFilterPlugin*> preFilters_;
  CandidatePlugin* candidates_ = nullptr;
  std::vector<FilterPlugin*> filters_;
  std::vector<std::pair<ScorePlugin*, double>> scores_;
};

}  // namespace switchyard::placement

// The placement framework: a pipeline of extension points in the spirit of the Kubernetes scheduling
// framework, generic over a cluster model (the composable pool today; the static-node model of the
// packing benchmark next).
//
//   pre-filter (once per request) -> candidates -> filter (each candidate) -> score (weighted sum)
//   -> select (highest total; ties go to the earlier candidate) -> reserve (unreserve in reverse on failure)
//
// A Model supplies four types: Cluster, Request, Candidate and a `describe(cluster, candidate)` for
// diagnoses. Plugins come from an explicit Registry (no static-init magic); a Profile names the plugins
// and weights to run, so policies are chosen in configuration. Every candidate gets a diagnosis: which
// filter rejected it and why, or its score from each plugin. Pure: no I/O.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/error.h"
#include "composer/placement/cycle_state.h"

namespace switchyard::placement {

// "Does not fit" is an answer, not an error; kError is for broken plugins or inputs.
struct Status {
  enum Kind { kFits, kRejected, kError } kind = kFits;
  std::string reason;

  static Status fits() { return {}; }
  static Status rejected(std::string why) { return {kRejected, std::move(why)}; }
  static Status error(std::string why) { return {kError, std::move(why)}; }
  [[nodiscard]] bool ok() const { return kind == kFits; }
};

template <typename Model>
class Plugin {
 public:
  virtual ~Plugin() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // What this plugin's verdicts read besides the request and the candidate's own surroundings, as bits
  // the Model defines (Model::Reads). Callers that keep verdicts across cycles (Scheduler::evaluate) use
  // it to know when a kept verdict may have changed. The default claims every input, which is always safe.
  [[nodiscard]] virtual unsigned reads() const { return ~0u; }
};

template <typename Model>
class PreFilterPlugin : public virtual Plugin<Model> {
 public:
  virtual Status preFilter(CycleState& state, const typename Model::Cluster& cluster, const typename Model::Request& request) = 0;
};

template <typename Model>
class CandidatePlugin : public virtual Plugin<Model> {
 public:
  virtual void candidates(CycleState& state, const typename Model::Cluster& cluster, const typename Model::Request& request,
                          std::vector<typename Model::Candidate>& out) = 0;
};

template <typename Model>
class FilterPlugin : public virtual Plugin<Model> {
 public:
  virtual Status filter(CycleState& state, const typename Model::Cluster& cluster, const typename Model::Request& request,
                        const typename Model::Candidate& candidate) = 0;
};

template <typename Model>
class ScorePlugin : public virtual Plugin<Model> {
 public:
  // Higher is better.
  virtual double score(CycleState& state, const typename Model::Cluster& cluster, const typename Model::Request& request,
                       const typename Model::Candidate& candidate) = 0;
  // Rescales this plugin's scores over all feasible candidates; by default they are used as they are.
  virtual void normalize(std::vector<double>& /*scores*/) {}
  // Must be true when normalize() rescales: a candidate's score then depends on the others, and callers
  // that keep per-candidate verdicts across cycles (Scheduler::evaluate) cannot use the profile.
  [[nodiscard]] virtual bool normalizes() const { return false; }
};

template <typename Model>
class ReservePlugin : public virtual Plugin<Model> {
 public:
  virtual Status reserve(CycleState& state, typename Model::Cluster& cluster, const typename Model::Request& request,
                         const typename Model::Candidate& candidate) = 0;
  // Must be idempotent: it runs for every plugin whose reserve ran, in reverse order.
  virtual void unreserve(CycleState& state, typename Model::Cluster& cluster, const typename Model::Request& request,
                         const typename Model::Candidate& candidate) = 0;
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
  std::vector<std::string> reserves;
};

struct CandidateDiagnosis {
  std::string candidate;                             // Model::describe
  bool feasible = false;
  std::string rejectedBy;                            // the filter that said no
  std::string reason;
  std::vector<std::pair<std::string, double>> scores;  // plugin, weighted (normalized) score
  double total = 0;
};

// True while every candidate must explain itself; plugins format reasons only then.
[[nodiscard]] inline bool explaining(const CycleState& state) { return state.explain; }

template <typename Model>
struct Decision {
  std::optional<typename Model::Candidate> chosen;
  std::size_t chosenIndex = 0;  // into diagnoses, when explained
  std::vector<CandidateDiagnosis> diagnoses;
  Status status;  // kRejected: nothing fits (see diagnoses); kError: a plugin or the input is broken
  CycleState state;  // what the plugins recorded; reserve() reads it
};

template <typename Model>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Plugin<Model>>()>;
  void add(std::string name, Factory factory) { factories_[std::move(name)] = std::move(factory); }
  [[nodiscard]] Result<std::unique_ptr<Plugin<Model>>> make(const std::string& name) const {
    auto it = factories_.find(name);
    if (it == factories_.end()) {
      std::string known;
      for (const auto& [n, f] : factories_) known += (known.empty() ? "" : ", ") + n;
      return fail(Code::kInvalidArgument, fmt::format("unknown placement plugin '{}' (known: {})", name, known));
    }
    return it->second();
  }

 private:
  std::map<std::string, Factory> factories_;
};

template <typename Model>
class Scheduler {
 public:
  using Cluster = typename Model::Cluster;
  using Request = typename Model::Request;
  using Candidate = typename Model::Candidate;

  // Builds the plugins a profile names; an unknown plugin, or one at an extension point it does not
  // implement, is a configuration error.
  [[nodiscard]] static Result<std::shared_ptr<const Scheduler>> build(const Registry<Model>& registry, const Profile& profile) {
    auto s = std::shared_ptr<Scheduler>(new Scheduler());
    s->profile_ = profile;
    for (const auto& n : profile.preFilters) {
      SY_ASSIGN(auto* p, s->template instantiate<PreFilterPlugin<Model>>(registry, n, "pre-filter"));
      s->preFilters_.push_back(p);
    }
    SY_ASSIGN(s->candidates_, s->template instantiate<CandidatePlugin<Model>>(registry, profile.candidates, "candidate"));
    for (const auto& n : profile.filters) {
      SY_ASSIGN(auto* p, s->template instantiate<FilterPlugin<Model>>(registry, n, "filter"));
      s->filters_.push_back(p);
    }
    for (const auto& [n, w] : profile.scores) {
      SY_ASSIGN(auto* p, s->template instantiate<ScorePlugin<Model>>(registry, n, "score"));
      s->scores_.push_back({p, w});
    }
    for (const auto& n : profile.reserves) {
      SY_ASSIGN(auto* p, s->template instantiate<ReservePlugin<Model>>(registry, n, "reserve"));
      s->reserves_.push_back(p);
    }
    for (const auto& p : s->owned_) s->reads_ |= p->reads();
    return std::shared_ptr<const Scheduler>(std::move(s));
  }

  [[nodiscard]] const Profile& profile() const { return profile_; }

  // Pre-filter, candidates, filter, score, select. With `explain`, every candidate gets a diagnosis;
  // without it the hot path formats nothing, and only a request that fits nowhere is re-run explained.
  [[nodiscard]] Decision<Model> schedule(const Cluster& cluster, const Request& request, bool explain) const {
    Decision<Model> d = run(cluster, request, explain);
    if (!explain && d.status.kind == Status::kRejected) d = run(cluster, request, true);
    return d;
  }

  // Per-candidate verdicts, for callers that keep them across cycles and re-evaluate only the candidates
  // whose inputs changed (composer/packing/placement_index.h). prepare() runs the pre-filters into a
  // fresh cycle state; evaluate() runs one candidate's filters and scores in that state and returns its
  // weighted total, summed as schedule() sums it. Only valid when perCandidate() (no score normalizes).
  struct Verdict {
    Status status;
    double total = 0;
  };
  [[nodiscard]] bool perCandidate() const {
    return std::none_of(scores_.begin(), scores_.end(), [](const auto& s) { return s.first->normalizes(); });
  }
  // What the profile's verdicts read (Plugin::reads() of every plugin it runs).
  [[nodiscard]] unsigned reads() const { return reads_; }
  Status prepare(CycleState& state, const Cluster& cluster, const Request& request) const {
    for (auto* p : preFilters_)
      if (Status st = p->preFilter(state, cluster, request); !st.ok()) return st;
    return Status::fits();
  }
  [[nodiscard]] Verdict evaluate(CycleState& state, const Cluster& cluster, const Request& request, const Candidate& candidate) const {
    for (auto* f : filters_)
      if (Status st = f->filter(state, cluster, request, candidate); !st.ok()) return {std::move(st), 0};
    double total = 0;
    for (const auto& [plugin, weight] : scores_) total += weight * plugin->score(state, cluster, request, candidate);
    return {Status::fits(), total};
  }

  // Reserves the chosen candidate in every reserve plugin; on a failure, unreserves what ran, in reverse.
  Status reserve(Decision<Model>& d, Cluster& cluster, const Request& request) const {
    for (std::size_t i = 0; i < reserves_.size(); ++i) {
      Status st = reserves_[i]->reserve(d.state, cluster, request, *d.chosen);
      if (!st.ok()) {
        for (std::size_t j = i + 1; j-- > 0;) reserves_[j]->unreserve(d.state, cluster, request, *d.chosen);
        return st;
      }
    }
    return Status::fits();
  }

 private:
  Scheduler() = default;

  template <typename Point>
  Result<Point*> instantiate(const Registry<Model>& registry, const std::string& name, std::string_view point) {
    SY_ASSIGN(auto plugin, registry.make(name));
    auto* typed = dynamic_cast<Point*>(plugin.get());
    if (!typed) return fail(Code::kInvalidArgument, fmt::format("placement plugin '{}' is not a {} plugin", name, point));
    owned_.push_back(std::move(plugin));
    return typed;
  }

  Decision<Model> run(const Cluster& cluster, const Request& request, bool explain) const {
    Decision<Model> d;
    d.state.explain = explain;
    for (auto* p : preFilters_) {
      Status st = p->preFilter(d.state, cluster, request);
      if (!st.ok()) {
        d.status = std::move(st);
        return d;
      }
    }
    std::vector<Candidate> all;
    candidates_->candidates(d.state, cluster, request, all);
    std::vector<std::size_t> feasible;
    std::vector<CandidateDiagnosis> rejected;
    for (std::size_t i = 0; i < all.size(); ++i) {
      bool ok = true;
      for (auto* f : filters_) {
        Status st = f->filter(d.state, cluster, request, all[i]);
        if (st.kind == Status::kError) {
          d.status = std::move(st);
          return d;
        }
        if (!st.ok()) {
          ok = false;
          if (explain) rejected.push_back({Model::describe(cluster, all[i]), false, std::string(f->name()), std::move(st.reason), {}, 0});
          break;
        }
      }
      if (ok) feasible.push_back(i);
    }
    if (feasible.empty()) {
      d.status = Status::rejected(all.empty() ? "there is no candidate" : "no candidate passed the filters");
      d.diagnoses = std::move(rejected);
      return d;
    }
    // Score: one column per plugin, normalized by that plugin, then weighted and summed.
    std::vector<double> totals(feasible.size(), 0.0);
    std::vector<std::vector<double>> columns;
    for (const auto& [plugin, weight] : scores_) {
      std::vector<double> column(feasible.size());
      for (std::size_t k = 0; k < feasible.size(); ++k) column[k] = plugin->score(d.state, cluster, request, all[feasible[k]]);
      plugin->normalize(column);
      for (std::size_t k = 0; k < feasible.size(); ++k) totals[k] += weight * column[k];
      if (explain) columns.push_back(std::move(column));
    }
    std::size_t best = 0;
    for (std::size_t k = 1; k < feasible.size(); ++k)
      if (totals[k] > totals[best]) best = k;
    if (explain) {
      // Diagnoses in candidate order.
      std::size_t r = 0, k = 0;
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (k < feasible.size() && feasible[k] == i) {
          CandidateDiagnosis diag{Model::describe(cluster, all[i]), true, {}, {}, {}, totals[k]};
          for (std::size_t c = 0; c < scores_.size(); ++c)
            diag.scores.emplace_back(std::string(scores_[c].first->name()), scores_[c].second * columns[c][k]);
          if (k == best) d.chosenIndex = d.diagnoses.size();
          d.diagnoses.push_back(std::move(diag));
          ++k;
        } else {
          d.diagnoses.push_back(std::move(rejected[r++]));
        }
      }
    }
    d.chosen = std::move(all[feasible[best]]);
    return d;
  }

  Profile profile_;
  std::vector<std::unique_ptr<Plugin<Model>>> owned_;
  unsigned reads_ = 0;
  std::vector<PreFilterPlugin<Model>*> preFilters_;
  CandidatePlugin<Model>* candidates_ = nullptr;
  std::vector<FilterPlugin<Model>*> filters_;
  std::vector<std::pair<ScorePlugin<Model>*, double>> scores_;
  std::vector<ReservePlugin<Model>*> reserves_;
};

}  // namespace switchyard::placement

#include "composer/packing/placement_framework.h"

#include <fmt/format.h>

namespace switchyard::placement {

std::string describe(const Pool& pool, const Candidate& candidate) {
  return pool.hosts()[static_cast<std::size_t>(candidate.hostIndex)].id;
}

Result<std::unique_ptr<Plugin>> Registry::make(const std::string& name) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& [n, f] : factories_) known += (known.empty() ? "" : ", ") + n;
    return fail(Code::kInvalidArgument, fmt::format("unknown placement plugin '{}' (known: {})", name, known));
  }
  return it->second();
}

template <typename Point>
Result<Point*> Scheduler::instantiate(const Registry& registry, const std::string& name, std::string_view point) {
  SY_ASSIGN(auto plugin, registry.make(name));
  auto* typed = dynamic_cast<Point*>(plugin.get());
  if (!typed) return fail(Code::kInvalidArgument, fmt::format("placement plugin '{}' is not a {} plugin", name, point));
  owned_.push_back(std::move(plugin));
  return typed;
}

Result<std::shared_ptr<const Scheduler>> Scheduler::build(const Registry& registry, const Profile& profile) {
  auto s = std::shared_ptr<Scheduler>(new Scheduler());
  s->profile_ = profile;
  for (const auto& n : profile.preFilters) {
    SY_ASSIGN(auto* p, s->instantiate<PreFilterPlugin>(registry, n, "pre-filter"));
    s->preFilters_.push_back(p);
  }
  SY_ASSIGN(s->candidates_, s->instantiate<CandidatePlugin>(registry, profile.candidates, "candidate"));
  if (profile.filters.size() >= kNotRejected)
    return fail(Code::kInvalidArgument, fmt::format("profile '{}' names {} filters; at most {}", profile.name, profile.filters.size(), kNotRejected - 1));
  for (const auto& n : profile.filters) {
    SY_ASSIGN(auto* p, s->instantiate<FilterPlugin>(registry, n, "filter"));
    s->filters_.push_back(p);
  }
  for (const auto& [n, w] : profile.scores) {
    SY_ASSIGN(auto* p, s->instantiate<ScorePlugin>(registry, n, "score"));
    s->scores_.push_back({p, w});
  }
  for (const auto& p : s->owned_) s->reads_ |= p->reads();
  return std::shared_ptr<const Scheduler>(std::move(s));
}

Decision Scheduler::schedule(const Pool& pool, const PlacementRequest& request, bool explain) const {
  return run(pool, request, explain);
}

bool Scheduler::perCandidate() const {
  return std::none_of(scores_.begin(), scores_.end(), [](const auto& s) { return s.first->normalizes(); });
}

Status Scheduler::prepare(CycleState& state, const Pool& pool, const PlacementRequest& request) const {
  for (auto* p : preFilters_)
    if (Status st = p->preFilter(state, pool, request); !st.ok()) return st;
  return Status::fits();
}

Scheduler::Verdict Scheduler::evaluate(CycleState& state, const Pool& pool, const PlacementRequest& request,
                                       const Candidate& candidate) const {
  for (std::size_t f = 0; f < filters_.size(); ++f)
    if (Status st = filters_[f]->filter(state, pool, request, candidate); !st.ok()) return {std::move(st), 0, static_cast<std::uint8_t>(f)};
  double total = 0;
  for (const auto& [plugin, weight] : scores_) total += weight * plugin->score(state, pool, request, candidate);
  return {Status::fits(), total};
}

void Scheduler::explainRefusal(Decision& d, const Pool& pool, const PlacementRequest& request, std::span<const std::uint8_t> rejectedBy) const {
  std::vector<std::size_t> explained(filters_.size(), 0), left(filters_.size(), 0);
  const bool was = d.state.explain;
  d.state.explain = true;
  for (std::size_t h = 0; h < rejectedBy.size(); ++h) {
    const std::uint8_t f = rejectedBy[h];
    if (f >= filters_.size()) continue;
    if (explained[f] == kExplainedPerFilter) {
      ++left[f];
      continue;
    }
    ++explained[f];
    const Candidate candidate{static_cast<int>(h)};
    Verdict v = evaluate(d.state, pool, request, candidate);
    if (v.status.kind == Status::kError) {
      d.status = std::move(v.status);
      break;
    }
    // Evaluated again in the same pool, a host is rejected by the same filter; should a plugin disagree with
    // itself, its own answer now is what the host is told.
    const std::uint8_t by = v.status.ok() ? f : v.rejectedBy;
    d.diagnoses.push_back({describe(pool, candidate), false, std::string(filters_[by]->name()),
                           v.status.ok() ? std::string("passed every filter when explained") : std::move(v.status.reason), {}, 0});
  }
  d.state.explain = was;
  for (std::size_t f = 0; f < filters_.size(); ++f)
    if (left[f] > 0) d.unexplained.push_back({std::string(filters_[f]->name()), left[f]});
}

Decision Scheduler::run(const Pool& pool, const PlacementRequest& request, bool explain) const {
  Decision d;
  d.state.explain = explain;
  for (auto* p : preFilters_) {
    Status st = p->preFilter(d.state, pool, request);
    if (!st.ok()) {
      d.status = std::move(st);
      return d;
    }
  }
  std::vector<Candidate> all;
  candidates_->candidates(d.state, pool, request, all);
  std::vector<std::size_t> feasible;
  std::vector<CandidateDiagnosis> rejected;
  std::vector<std::uint8_t> rejectedBy;  // unexplained: per host, for a refusal to explain a few of each
  if (!explain) rejectedBy.assign(pool.hosts().size(), kNotRejected);
  for (std::size_t i = 0; i < all.size(); ++i) {
    bool ok = true;
    for (std::size_t f = 0; f < filters_.size(); ++f) {
      Status st = filters_[f]->filter(d.state, pool, request, all[i]);
      if (st.kind == Status::kError) {
        d.status = std::move(st);
        return d;
      }
      if (!st.ok()) {
        ok = false;
        if (explain) rejected.push_back({describe(pool, all[i]), false, std::string(filters_[f]->name()), std::move(st.reason), {}, 0});
        else rejectedBy[static_cast<std::size_t>(all[i].hostIndex)] = static_cast<std::uint8_t>(f);
        break;
      }
    }
    if (ok) feasible.push_back(i);
  }
  if (feasible.empty()) {
    d.status = Status::rejected(all.empty() ? "there is no candidate" : "no candidate passed the filters");
    if (explain) d.diagnoses = std::move(rejected);
    else explainRefusal(d, pool, request, rejectedBy);
    return d;
  }
  // Score: one column per plugin, normalized by that plugin, then weighted and summed.
  std::vector<double> totals(feasible.size(), 0.0);
  std::vector<std::vector<double>> columns;
  for (const auto& [plugin, weight] : scores_) {
    std::vector<double> column(feasible.size());
    for (std::size_t k = 0; k < feasible.size(); ++k) column[k] = plugin->score(d.state, pool, request, all[feasible[k]]);
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
        CandidateDiagnosis diag{describe(pool, all[i]), true, {}, {}, {}, totals[k]};
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
  d.chosen = all[feasible[best]];
  return d;
}

}  // namespace switchyard::placement

#include "composer/engine/admission/admission_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "composer/model/endpoint_demand.h"
#include "composer/model/mig.h"
#include "composer/model/queue.h"

namespace switchyard::admission {

namespace {

// Requests with the same key get the same answer from the packing core on the same pool.
std::string shapeKey(const QueuedRequest& q, const std::string& tenant) {
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", q.gpuCount, q.model, q.minMemoryGiB, q.pooledMemoryGiB, q.peerToPeer, q.host,
                                q.migCapable, q.gpuShareMilli, tenant, q.devices.size());
  for (const auto& d : q.devices) key += "|" + d;
  for (MigProfile p : q.gpuInstances) key += fmt::format("|{}", toString(p));
  for (const auto& e : q.endpoints)
    key += fmt::format("|{}:{}:{}:{}:{}:{}", kindName(e), e.count, e.model, e.minCapacityGiB, toString(e.affinity), e.minSpeedGbps);
  return key;
}

// The first answer any of `plugins` gives (`ask` puts the question to one), in the profile's order; nothing: none had one.
template <typename Plugins, typename Ask>
std::optional<std::string> firstAnswer(const Plugins& plugins, Ask&& ask) {
  for (const auto& plugin : plugins)
    if (auto answer = ask(*plugin)) return answer;
  return std::nullopt;
}

}  // namespace

std::vector<Admittable> admissionOrder(const QueueSort& sort, const RequestQueue& queue, const TenantShares& shares) {
  std::vector<Admittable> entries;
  entries.reserve(queue.size());
  for (const auto& [id, op] : queue.waiting())
    entries.push_back({id, {shares.index(op.tenant), op.queued->priority, op.queued->enqueuedAt, gpusAsked(*op.queued)}});
  auto before = [&](const Admittable& a, const Admittable& b) {
    if (const int c = sort.compare(a.waiting, b.waiting, shares); c != 0) return c < 0;
    return a.id < b.id;
  };
  if (!sort.readsSize()) {
    std::sort(entries.begin(), entries.end(), before);
    return entries;
  }
  // An order that weighs each request's size is no order over all requests (a tenant's small request may go
  // before another's, that one before the first tenant's large one, and that before the small one by age): each
  // tenant's requests are put in order apart, and the pass takes, each time, the tenant's next that goes first.
  std::vector<std::vector<Admittable>> lines(shares.size());
  for (Admittable& e : entries) lines[e.waiting.tenant].push_back(std::move(e));
  for (auto& line : lines) std::sort(line.begin(), line.end(), before);
  std::vector<Admittable> ordered;
  ordered.reserve(entries.size());
  std::vector<std::size_t> next(lines.size(), 0);
  while (ordered.size() < entries.size()) {
    std::optional<std::size_t> pick;
    for (std::size_t t = 0; t < lines.size(); ++t)
      if (next[t] < lines[t].size() && (!pick || before(lines[t][next[t]], lines[*pick][next[*pick]]))) pick = t;
    ordered.push_back(std::move(lines[*pick][next[*pick]++]));
  }
  return ordered;
}

PassOutcome runPass(const Profile& profile, std::span<const Admittable> order, RequestQueue& queue, Pass& pass, PassEngine& engine) {
  PassOutcome outcome;
  std::map<std::string, std::string> failedShapes;  // shape -> why it does not fit: the same answer for the same shape
  for (const auto& [id, waiting] : order) {
    const Operation* queued = queue.find(id);
    if (queued == nullptr) continue;  // admitted or dropped earlier in this pass
    const Operation& op = *queued;
    if (auto skipped = firstAnswer(profile.preFilters, [&](const PreFilterPlugin& p) { return p.skip(op, waiting, pass); })) {
      queue.setWhy(id, std::move(*skipped));
      continue;
    }
    const std::string key = shapeKey(*op.queued, op.tenant);
    if (auto failed = failedShapes.find(key); failed != failedShapes.end()) {
      queue.setWhy(id, failed->second);
      continue;
    }
    PlacementDecision decision = engine.place(op);
    if (!decision.placement) {
      const std::string why = decision.error ? shortReason(decision.error->message, unexplainedHosts(decision)) : "it does not fit";
      failedShapes.emplace(key, why);
      queue.setWhy(id, why);
      // The first that does not fit is the head: the post-filters promise it a time and a place.
      pass.headWaits = true;
      if (!queue.shadow())
        for (const auto& postFilter : profile.postFilters)
          if (auto promise = postFilter->promise(op, waiting, why, pass, engine)) {
            queue.setShadow(std::move(promise->shadow));
            if (promise->why) queue.setWhy(id, std::move(*promise->why));
            break;
          }
      continue;
    }
    const Placement& placement = *decision.placement;
    if (auto refused = firstAnswer(profile.permits, [&](const PermitPlugin& p) { return p.refuse(op, placement, engine); })) {
      queue.setWhy(id, std::move(*refused));
      continue;
    }
    if (auto r = engine.admit(op, placement); !r) {
      if (r.error().code == Code::kUnavailable) {
        outcome.halted = true;
        return outcome;
      }
      queue.setWhy(id, r.error().message);
      continue;
    }
    ++outcome.admitted;
  }
  return outcome;
}

}  // namespace switchyard::admission

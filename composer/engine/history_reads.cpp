#include "composer/engine/history_reads.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "composer/model/access.h"

namespace switchyard {

Result<std::vector<Operation>> HistoryReads::listOperations(const OperationQuery& query) const { return from_.store.queryOperations(query); }

Result<std::optional<Operation>> HistoryReads::getOperation(const OperationId& id) const { return from_.store.getOperation(id); }

Result<std::map<SystemId, SystemIdentity>> HistoryReads::systemIdentities(const std::set<SystemId>& ids) const {
  return from_.store.systemIdentities(ids);
}

Result<std::vector<Event>> HistoryReads::listEvents(std::uint64_t afterSequence, std::size_t limit) const {
  return from_.store.listEvents(afterSequence, limit);
}

Result<std::vector<Event>> HistoryReads::recentEvents(std::size_t limit) const {
  const std::uint64_t last = from_.events.storedSequence();
  return from_.store.listEvents(last > limit ? last - limit : 0, limit);
}

Result<std::vector<AuditRecord>> HistoryReads::listAudit(const AuditQuery& query) const { return from_.store.listAudit(query); }

Result<UsageReport> HistoryReads::usage(const Caller& caller, Timestamp since, Timestamp until) const {
  const Timestamp now = from_.clock.now();
  if (until == 0) until = now;
  if (since < 0 || until <= since) return fail(Code::kInvalidArgument, "usage: --since must be before --until");
  SY_ASSIGN(auto view, from_.pool.readableView());
  // What is in memory only (open stretches, ended ones not yet written), read on this thread: it waits for a
  // sampling round's recording, if one is under way, without holding the control thread.
  std::vector<IdleStretch> unwritten = from_.idle.unwritten(now);
  SY_ASSIGN(auto idle, from_.store.listIdleStretches(since, until));
  {
    // The memory's copy of a stretch replaces what is stored of the same (it is as long or longer).
    std::map<std::pair<DeviceId, Timestamp>, IdleStretch> merged;
    for (auto& s : idle) merged[{s.deviceId, s.from}] = std::move(s);
    for (auto& s : unwritten) {
      auto& kept = merged[{s.deviceId, s.from}];
      if (kept.to < s.to) kept = std::move(s);
    }
    idle.clear();
    for (auto& [key, s] : merged) idle.push_back(std::move(s));
  }
  SY_ASSIGN(auto ops, from_.store.listOperations(kUsageHistory));
  std::reverse(ops.begin(), ops.end());  // oldest first
  UsageReport report = computeUsage(
      ops,
      [&](const DeviceId& id) {
        const DeviceView* d = view->device(id);
        return d && d->device.kind == DeviceKind::kGpu ? (d->device.model.empty() ? std::string("GPU") : d->device.model) : std::string();
      },
      since, until, now, idle,
      [&](const DeviceId& id) {
        const DeviceView* d = view->device(id);
        return d && d->device.kind == DeviceKind::kCxlMemory ? d->device.memoryGiB : 0;
      },
      [&](const DeviceId& id) {
        const DeviceView* d = view->device(id);
        return d && isEndpointKind(d->device.kind) ? std::string(kindName(d->device)) : std::string();
      });
  std::erase_if(report.rows, [&](const UsageRow& r) { return !maySee(caller, r.tenant); });
  // No start asked for: the period is all the log knows, from its oldest operation (not "from 1970").
  if (since == 0) report.since = report.historyFrom > 0 ? std::min(report.historyFrom, until) : until;
  // Each row names its system and carries its labels: a live one's from the view, one that ended (decomposed,
  // forgotten) from the store, which keeps ended systems as long as it keeps their operations (a bill names what
  // it charges for, and groups by what its systems were labelled).
  std::set<SystemId> ended;
  for (auto& r : report.rows) {
    if (const auto s = view->systems.find(r.systemId)) r.systemName = s->name, r.labels = s->labels;
    else ended.insert(r.systemId);
  }
  if (!ended.empty()) {
    SY_ASSIGN(auto identities, from_.store.systemIdentities(ended));
    for (auto& r : report.rows)
      if (auto it = identities.find(r.systemId); r.systemName.empty() && it != identities.end()) r.systemName = it->second.name, r.labels = it->second.labels;
  }
  return report;
}

}  // namespace switchyard

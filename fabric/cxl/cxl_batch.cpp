// What the CXL driver's worker runs: a batch of the calls that were waiting, on one FM session. Reads and
// the bind and unbind sets of every call share three round trips: one read of the VCSs (another FM may have
// changed them), every change sent pipelined, and reads of the touched VCSs until each change shows (a
// switch runs binds in the background; one that answers "busy" runs one at a time, and the busy ones are
// sent again once the others are done). Calls are planned in the order they came, each against the state
// the calls before it leave, and each is checked whole before anything of it is sent.
#include <algorithm>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "fabric/cxl/cxl_fabric.h"

namespace switchyard {

std::vector<std::pair<CxlFabric::Slot, DeviceId>> CxlFabric::boundDevices(const std::vector<cxl::VirtualSwitch>& vcss) const {
  std::vector<std::pair<Slot, DeviceId>> out;
  for (const auto& v : vcss)
    for (std::size_t k = 0; k < v.vppbs.size(); ++k) {
      const auto& b = v.vppbs[k];
      if (!b.bound()) continue;
      const std::uint16_t ld = b.status == static_cast<std::uint8_t>(cxl::VppbBinding::kBoundLd) ? b.ld : cxl::kNoLd;
      const auto device = fabric_.deviceAt.find({b.port, ld});
      if (device != fabric_.deviceAt.end()) out.push_back({{v.id, static_cast<std::uint8_t>(k)}, device->second});
    }
  return out;
}

Result<std::vector<CxlFabric::Change>> CxlFabric::plan(const ChangeJob& job, std::size_t index, PlanState& state) const {
  SY_TRY(checkNames(job.bindings));
  PlanState next = state;  // applied only when the whole call passes
  std::vector<Change> changes;
  for (const auto& b : job.bindings) {
    const std::uint8_t vcs = fabric_.vcsOfHostPort.at(b.upstreamPortId);
    const auto at = next.boundAt.find(b.deviceId);
    if (at != next.boundAt.end() && at->second.vcs != vcs)
      return fail(Code::kFailedPrecondition, fmt::format("device '{}' is bound to {} (VCS {}), not '{}'", b.deviceId,
                                                         fabric_.hostPortOfVcs.at(at->second.vcs), at->second.vcs, b.upstreamPortId));
    if (!job.bind) {
      if (at == next.boundAt.end()) continue;  // not bound: unbinds are idempotent
      changes.push_back({at->second, fabric_.devices.at(b.deviceId), b.deviceId, index});
      next.boundAt.erase(at);  // its vPPB stays taken until the switch shows it free
      continue;
    }
    if (at != next.boundAt.end()) continue;  // already there: binds are idempotent
    auto& used = next.taken[vcs];
    const auto free = std::find(used.begin(), used.end(), false);
    if (free == used.end())
      return fail(Code::kFailedPrecondition, fmt::format("VCS {} of '{}' has no unbound vPPB left for '{}'", vcs, b.upstreamPortId, b.deviceId));
    *free = true;
    const Slot slot{vcs, static_cast<std::uint8_t>(free - used.begin())};
    changes.push_back({slot, fabric_.devices.at(b.deviceId), b.deviceId, index});
    next.boundAt[b.deviceId] = slot;
  }
  state = std::move(next);
  return changes;
}

std::vector<std::optional<Error>> CxlFabric::apply(cxl::FmClient& c, const std::vector<Change>& changes, bool bind, cxl::Deadline deadline,
                                                   bool& broken) {
  std::vector<std::optional<Error>> errors(changes.size());
  const std::string_view verb = bind ? "binding" : "unbinding";
  auto where = [&](const Change& ch) { return fmt::format("{} '{}' at VCS {} vPPB {}", verb, ch.device, ch.slot.vcs, ch.slot.vppb); };
  std::vector<std::size_t> toSend(changes.size()), awaiting;
  for (std::size_t i = 0; i < changes.size(); ++i) toSend[i] = i;
  // The switch stopped answering: every change not yet confirmed ends with that (outcome unknown).
  auto abandon = [&](const Error& e) {
    broken = true;
    for (const auto i : toSend) errors[i] = e.wrap(where(changes[i]));
    for (const auto i : awaiting) errors[i] = e.wrap(where(changes[i]));
    return errors;
  };
  auto pause = std::chrono::milliseconds(1);
  while (!toSend.empty() || !awaiting.empty()) {
    if (!toSend.empty()) {
      std::vector<cxl::FmRequest> requests;
      for (const auto i : toSend) {
        const auto& ch = changes[i];
        requests.push_back(bind ? cxl::FmRequest{cxl::Opcode::kBindVppb, cxl::bindVppbRequest(ch.slot.vcs, ch.slot.vppb, ch.target.port, ch.target.ld)}
                                : cxl::FmRequest{cxl::Opcode::kUnbindVppb, cxl::unbindVppbRequest(ch.slot.vcs, ch.slot.vppb, options_.unbindOption)});
      }
      auto codes = c.startAll(requests, deadline);
      if (!codes) return abandon(codes.error());
      std::vector<std::size_t> busy;
      for (std::size_t k = 0; k < codes->size(); ++k) {
        const auto code = (*codes)[k];
        if (code == cxl::rc::kSuccess || code == cxl::rc::kBackgroundStarted) awaiting.push_back(toSend[k]);
        else if (code == cxl::rc::kBusy) busy.push_back(toSend[k]);
        else errors[toSend[k]] = c.refused(requests[k].opcode, code).wrap(where(changes[toSend[k]]));
      }
      toSend = std::move(busy);
    }
    if (!awaiting.empty()) {
      std::vector<std::uint8_t> touched;
      for (const auto i : awaiting) touched.push_back(changes[i].slot.vcs);
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      auto now = c.virtualSwitches(touched, deadline);
      if (!now) return abandon(now.error());
      std::map<std::uint8_t, const cxl::VirtualSwitch*> byId;
      for (const auto& v : *now) byId[v.id] = &v;
      std::vector<std::size_t> still;
      std::optional<std::string> why;  // asked once per round, when a change did not show
      for (const auto i : awaiting) {
        const auto& ch = changes[i];
        const auto& vppbs = byId.at(ch.slot.vcs)->vppbs;
        if (ch.slot.vppb >= vppbs.size()) {
          errors[i] = Error{Code::kUnavailable, fmt::format("{}: VCS {} no longer has vPPB {}", where(ch), ch.slot.vcs, ch.slot.vppb)};
          continue;
        }
        const auto& v = vppbs[ch.slot.vppb];
        if (v.status == static_cast<std::uint8_t>(cxl::VppbBinding::kInProgress)) {
          still.push_back(i);
          continue;
        }
        const bool there = v.bound() && v.port == ch.target.port &&
                           (ch.target.ld == cxl::kNoLd ? v.status == static_cast<std::uint8_t>(cxl::VppbBinding::kBoundPort) : v.ld == ch.target.ld);
        if (there == bind) continue;  // done
        if (!why) {  // the background operation ended without the change: ask the switch why
          why = "the switch's background operation ended without it";
          if (auto op = c.backgroundOperation(deadline); op && op->returnCode != cxl::rc::kSuccess)
            why = fmt::format("background operation {:04x}h answered {}", op->opcode, cxl::describeReturnCode(op->returnCode));
        }
        errors[i] = Error{Code::kUnavailable, fmt::format("{}: {}", where(ch), *why)};
      }
      awaiting = std::move(still);
    }
    if (toSend.empty() && awaiting.empty()) break;
    if (std::chrono::steady_clock::now() + pause >= deadline)
      return abandon(Error{Code::kDeadlineExceeded, "the switch did not finish it before the call's deadline"});
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  return errors;
}

void CxlFabric::runBatch(cxl::FmClient& c, std::span<const std::shared_ptr<cxl::FmWorker::Job>> jobs, cxl::Deadline deadline) {
  if (jobs.size() == 1 && jobs.front()->exclusive) {
    auto& job = static_cast<ExclusiveJob&>(*jobs.front());
    job.result = job.work(c, deadline);
    return;
  }
  // One read of every VCS a call needs: all of them when a call changes bindings (a device may be bound
  // to any host), else those the reads ask for.
  bool changes = false;
  std::set<std::uint8_t> wanted;
  for (const auto& j : jobs) {
    if (auto* r = dynamic_cast<ReadJob*>(j.get())) wanted.insert(r->vcss.begin(), r->vcss.end());
    else changes = true;
  }
  if (changes) {
    std::lock_guard lock(mutex_);
    for (const auto& [vcs, port] : fabric_.hostPortOfVcs) wanted.insert(vcs);
  }
  const std::vector<std::uint8_t> ids(wanted.begin(), wanted.end());
  auto vcss = c.virtualSwitches(ids, deadline);
  if (!vcss) {
    for (const auto& j : jobs) j->result = fail(vcss.error());
    return;
  }
  // Reads are answered from it; each call's changes are planned against it, in the order the calls came.
  std::vector<Change> binds, unbinds;
  {
    std::lock_guard lock(mutex_);
    const auto bound = boundDevices(*vcss);
    PlanState state;
    for (const auto& [slot, device] : bound) state.boundAt[device] = slot;
    for (const auto& v : *vcss) {
      auto& used = state.taken[v.id];
      for (const auto& b : v.vppbs) used.push_back(b.status != static_cast<std::uint8_t>(cxl::VppbBinding::kUnbound));
    }
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (auto* r = dynamic_cast<ReadJob*>(jobs[i].get())) {
        r->bindings.clear();
        for (const auto& [slot, device] : bound)
          if (std::find(r->vcss.begin(), r->vcss.end(), slot.vcs) != r->vcss.end()) r->bindings.push_back({device, fabric_.hostPortOfVcs.at(slot.vcs)});
        r->result = {};
        continue;
      }
      const auto& job = static_cast<const ChangeJob&>(*jobs[i]);
      auto planOf = plan(job, i, state);
      if (!planOf) {
        jobs[i]->result = fail(planOf.error());
        continue;
      }
      jobs[i]->result = {};
      auto& into = job.bind ? binds : unbinds;
      into.insert(into.end(), planOf->begin(), planOf->end());
    }
  }
  // Unbinds first: a call that frees a vPPB or a device another call of the batch takes runs before it.
  bool broken = false;
  for (const bool bind : {false, true}) {
    const auto& list = bind ? binds : unbinds;
    if (list.empty() || broken) continue;
    const auto errors = apply(c, list, bind, deadline, broken);
    std::vector<bool> appliedSome(jobs.size(), false), failed(jobs.size(), false);
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (!errors[k]) appliedSome[list[k].job] = true;
      else if (!failed[list[k].job]) {
        failed[list[k].job] = true;
        jobs[list[k].job]->result = fail(*errors[k]);
      }
    }
    // A call some of whose changes were made must not read as "changed nothing".
    for (std::size_t i = 0; i < jobs.size(); ++i)
      if (failed[i] && appliedSome[i] && changedNothing(jobs[i]->result.error().code)) jobs[i]->result.error().code = Code::kUnavailable;
  }
  if (broken && !unbinds.empty())  // the switch stopped answering during the unbinds: the binds were not sent
    for (const auto& ch : binds)
      if (jobs[ch.job]->result) jobs[ch.job]->result = fail(Code::kUnavailable, fmt::format("{}: the switch stopped answering before '{}' was bound", switchId_, ch.device));
}

}  // namespace switchyard

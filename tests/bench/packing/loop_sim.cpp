#include "tests/bench/packing/loop_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <stdexcept>

#include "composer/engine/admission/admission_profile.h"
#include "tests/bench/packing/fair_share.h"
#include "tests/bench/packing/loop_moves.h"
#include "tests/bench/packing/sim_pool.h"

namespace switchyard::bench {

namespace {

using sharing::SharePlacement;
using sharing::ShareRequest;

constexpr size_t kProduction = 0, kBatch = 1, kSpot = 2;
constexpr std::array<double, 7> kLeaseLadder{1800, 3600, 7200, 14'400, 28'800, 43'200, 86'400};

double leaseFor(double duration) {
  for (double l : kLeaseLadder)
    if (duration <= l) return l;
  return duration;
}

struct Job {
  enum class State : uint8_t { kWaiting, kRunning, kGone };
  size_t pod = 0;
  size_t tenant = 0, cls = 0;
  bool overprovisioned = false, measured = false;
  double arrival = 0, since = 0;  // since: queued (again) at
  bool started = false;           // started at least once
  bool counted = false;           // its GPU time counts as served now
  State state = State::kWaiting;
};

struct Running {
  size_t job = 0;
  SimPool::Holding holding;
  double start = 0, leaseEnd = 0;
  uint32_t generation = 0;
  bool active = false;  // holds resources now (a freed slot keeps its last holding until reused)
  bool preempting = false;
};

struct Event {
  enum class Kind : uint8_t { kDeparture, kPreemption };
  double at = 0;
  Kind kind = Kind::kDeparture;
  size_t index = 0;  // departure: the running slot; preemption: the preemptions table
  uint32_t generation = 0;
  bool operator>(const Event& o) const { return at > o.at; }
};

// Where and when the head will fit; backfill keeps off it.
struct Shadow {
  size_t head = 0;
  double at = std::numeric_limits<double>::infinity();  // infinity: no lease lets it in, nothing is protected
  size_t view = 0;
  double plannedAt = 0;
};
constexpr double kReplanSeconds = 60;

struct Preemption {
  std::vector<std::pair<size_t, uint32_t>> victims;  // slot, generation
};

// The queue sort of yardd's admission profile (composer/engine/admission/admission_profile.cpp's table):
// share-first, or switchyard-v1.
admission::QueueSort queueSortOf(const LoopRules& r) {
  return (*admission::buildProfile(r.shareFirst ? "share-first" : admission::kDefaultAdmissionProfile))->queueSort;
}

class LoopSim {
 public:
  LoopSim(SimPool& pool, const std::vector<TracePod>& pods, sharing::SharePolicy& policy, const LoopOptions& o)
      : pool_(pool), pods_(pods), policy_(policy), o_(o), a_(o.arrivals), r_(o.rules),
        fairShare_(o.workload.tenantWeights, o.rules.fairShareHalfLifeSeconds), shares_(fairShare_), sort_(queueSortOf(o.rules)) {
    const size_t tenants = o.workload.tenantWeights.size();
    if (tenants == 0 || o.workload.tenantDemand.size() != tenants) throw std::invalid_argument("one weight and one demand per tenant");
    for (auto& perTenant : queues_) perTenant.resize(tenants);
    result_.byTenant.resize(tenants);
    besideMilli_.assign(tenants, 0.0);
  }

  LoopResult run();

 private:
  [[nodiscard]] const ShareRequest& request(size_t job) const { return pods_[jobs_[job].pod].request; }
  [[nodiscard]] double duration(size_t pod) const { return std::min(static_cast<double>(pods_[pod].durationSeconds), a_.maxDurationSeconds); }
  [[nodiscard]] double gpuTime(size_t job) const { return static_cast<double>(request(job).totalGpuMilli()) * duration(jobs_[job].pod); }
  // How long a system works before it idles (its whole life unless over-provisioned).
  [[nodiscard]] double busyFor(size_t job) const {
    const double d = duration(jobs_[job].pod);
    return jobs_[job].overprovisioned ? (1 - o_.workload.idleShare) * d : d;
  }
  [[nodiscard]] bool reclaimable(size_t job) const {
    return r_.fullLoop && jobs_[job].overprovisioned && (request(job).wholeGpus() || (r_.reclaimShares && request(job).sharesGpu()));
  }
  template <typename F>
  void forGroups(size_t job, F&& f) {
    const Job& j = jobs_[job];
    f(result_.all);
    f(result_.byClass[j.cls]);
    f(result_.byTenant[j.tenant]);
    f(result_.bySize[loopSizeOf(request(job))]);
  }

  void account(double t) {  // time-weighted allocation while measuring
    if (measuredSince_ >= 0) allocationArea_ += static_cast<double>(pool_.allocated()) * (t - lastChange_);
    lastChange_ = t;
  }
  void advanceHistory() { fairShare_.advanceTo(now_); }
  [[nodiscard]] double charge(size_t t) const { return fairShare_.charge(t); }
  // The class a request is ordered as: its own, or batch for a spot request of a tenant below the fair line
  // (LoopRules::fairShareLiftsSpot).
  [[nodiscard]] size_t orderClass(size_t cls, size_t t) const {
    return r_.fairShareLiftsSpot && cls == kLoopClasses - 1 && fairShare_.belowFairLine(t) ? cls - 1 : cls;
  }

  std::optional<SharePlacement> choose(size_t job) {
    const auto begin = std::chrono::steady_clock::now();
    auto p = policy_.choose(pool_.view(), request(job));
    spent_ += std::chrono::steady_clock::now() - begin;
    return p;
  }
  void start(size_t job, const SharePlacement& p);
  void finish(size_t slot, bool preempted);
  void accountHolding(const Running& run, double until);
  void enqueue(size_t job);
  void giveUp(size_t job);
  void serveFifo();
  void serveLoop();
  void serveByShare();
  bool tryAdmit(size_t job);
  // Makes `job` the pass's head and plans for it (moves, preemption, else the lease shadow); true when moves made room
  // for it now.
  bool establishHead(size_t job);
  [[nodiscard]] bool allowedBeside(const SharePlacement& p, size_t job) const;
  // allowedBeside, and when it is, counts what the job takes against its tenant's cap (LoopRules::backfillGpusAboveShare).
  bool admitBeside(const SharePlacement& p, size_t job);
  [[nodiscard]] bool orderedBefore(size_t job, size_t other) const;
  // A job as the queue sort sees it: classes as yardd's values (production highest), age in nanoseconds.
  [[nodiscard]] admission::Waiting waitingOf(size_t tenant, size_t cls, double since, std::int64_t milli) const {
    return {tenant, static_cast<int>(kLoopClasses - cls), std::llround(since * 1e9), static_cast<double>(milli) / 1000};
  }
  bool planPreemption(size_t head);
  // Moves idle systems off one enclosure so that the head fits there (LoopRules::defragment); the view it fits on.
  std::optional<size_t> moveForHead(size_t head);
  [[nodiscard]] Shadow leaseShadow(size_t head);
  void arrive(size_t job);
  [[nodiscard]] bool queueEmpty() const { return waiting_ == 0; }

  SimPool& pool_;
  const std::vector<TracePod>& pods_;
  sharing::SharePolicy& policy_;
  const LoopOptions& o_;
  const DynamicOptions& a_;
  const LoopRules& r_;

  std::vector<Job> jobs_;
  std::vector<Running> running_;
  std::vector<size_t> freeSlots_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<Preemption> preemptions_;
  std::deque<size_t> fifo_;
  std::array<std::vector<std::deque<size_t>>, kLoopClasses> queues_;  // [class][tenant], each in age order
  size_t waiting_ = 0;
  std::optional<size_t> passHead_;  // the first request in order that did not fit at the last pass
  std::optional<Shadow> shadow_;
  std::vector<ShareRequest> failedShapes_;  // this pass: the same shape on the same pool gets the same answer
  size_t besideHead_ = std::numeric_limits<size_t>::max();  // the head the caps below count for
  std::vector<double> besideMilli_;                           // per tenant: GPU-thousandths started beside it
  FairShareLedger fairShare_;
  LedgerShares shares_;
  admission::QueueSort sort_;

  LoopResult result_;
  std::chrono::steady_clock::duration spent_{};
  double now_ = 0, measuredSince_ = -1, allocationArea_ = 0, lastChange_ = 0;
};

void LoopSim::accountHolding(const Running& run, double until) {
  if (measuredSince_ < 0) return;
  const double milli = static_cast<double>(request(run.job).totalGpuMilli());
  const double from = std::max(run.start, measuredSince_);
  const double workEnd = run.start + busyFor(run.job);
  result_.busyGpuTime += milli * std::max(0.0, std::min(until, workEnd) - from);
  result_.idleGpuTime += milli * std::max(0.0, until - std::max(from, workEnd));
}

void LoopSim::start(size_t job, const SharePlacement& p) {
  Job& j = jobs_[job];
  advanceHistory();
  account(now_);
  Running run{job, pool_.place(p, request(job)), now_, now_ + leaseFor(duration(j.pod)), 0, true, false};
  size_t slot;
  if (!freeSlots_.empty()) {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
    run.generation = running_[slot].generation + 1;
    running_[slot] = std::move(run);
  } else {
    slot = running_.size();
    running_.push_back(std::move(run));
  }
  double hold = duration(j.pod);
  if (reclaimable(job) && busyFor(job) + r_.reclaimAfterSeconds < hold) {
    hold = busyFor(job) + r_.reclaimAfterSeconds;
    if (j.measured) {
      ++result_.reclaims;
      result_.reclaimedGpuTime += static_cast<double>(request(job).totalGpuMilli()) * (duration(j.pod) - hold);
    }
  }
  events_.push({now_ + hold, Event::Kind::kDeparture, slot, running_[slot].generation});
  fairShare_.take(j.tenant, request(job).totalGpuMilli());
  j.state = Job::State::kRunning;
  if (j.measured) {
    if (!j.started) forGroups(job, [&](LoopGroup& g) {
        ++g.accepted;
        g.waits.push_back(now_ - j.arrival);
      });
    if (!j.counted) forGroups(job, [&](LoopGroup& g) { g.servedGpuTime += gpuTime(job); });
  }
  j.started = true;
  j.counted = true;
}

void LoopSim::finish(size_t slot, bool preempted) {
  Running& run = running_[slot];
  const size_t job = run.job;
  Job& j = jobs_[job];
  advanceHistory();
  account(now_);
  accountHolding(run, now_);
  pool_.remove(run.holding, request(job));
  fairShare_.give(j.tenant, request(job).totalGpuMilli());
  freeSlots_.push_back(slot);
  run.active = false;
  ++run.generation;  // a departure scheduled for it is stale now
  const bool workDone = now_ >= run.start + busyFor(job);
  if (!preempted || workDone) {
    j.state = Job::State::kGone;
    return;
  }
  // Preempted before its work was done: the work is lost and the request queues again.
  if (j.measured) {
    const double lost = static_cast<double>(request(job).totalGpuMilli()) * (now_ - run.start);
    forGroups(job, [&](LoopGroup& g) {
      ++g.preemptions;
      g.preemptedGpuTime += lost;
      if (j.counted) g.servedGpuTime -= gpuTime(job);
    });
  }
  j.counted = false;
  enqueue(job);
}

void LoopSim::enqueue(size_t job) {
  Job& j = jobs_[job];
  j.state = Job::State::kWaiting;
  j.since = now_;
  ++waiting_;
  if (r_.fullLoop) queues_[j.cls][j.tenant].push_back(job);
  else fifo_.push_back(job);
}

void LoopSim::giveUp(size_t job) {
  jobs_[job].state = Job::State::kGone;
  --waiting_;
  if (jobs_[job].measured) forGroups(job, [](LoopGroup& g) { ++g.gaveUp; });
}

// dynamic_sim.h's protocol, step for step.
void LoopSim::serveFifo() {
  size_t tried = 0;
  for (auto it = fifo_.begin(); it != fifo_.end() && tried < a_.backfillDepth;) {
    if (now_ - jobs_[*it].since > a_.patienceSeconds) {
      giveUp(*it);
      it = fifo_.erase(it);
      continue;
    }
    ++tried;
    auto p = choose(*it);
    if (p) {
      --waiting_;
      start(*it, *p);
      it = fifo_.erase(it);
    } else {
      ++it;
    }
  }
}

bool LoopSim::orderedBefore(size_t job, size_t other) const {
  const Job& a = jobs_[job];
  const Job& b = jobs_[other];
  if (!r_.fairShareLiftsSpot)
    return sort_.before(waitingOf(a.tenant, a.cls, a.since, request(job).totalGpuMilli()),
                        waitingOf(b.tenant, b.cls, b.since, request(other).totalGpuMilli()), shares_);
  // The experiment orders a class as another for some tenants: not a profile of yardd's.
  const size_t ca = orderClass(a.cls, a.tenant), cb = orderClass(b.cls, b.tenant);
  if (ca != cb) return ca < cb;
  if (a.tenant != b.tenant) return charge(a.tenant) < charge(b.tenant);
  if (a.cls != b.cls) return a.cls < b.cls;
  return a.since < b.since;
}

bool LoopSim::allowedBeside(const SharePlacement& p, size_t job) const {
  if (r_.fairShareGatesBackfill && passHead_ && jobs_[job].tenant != jobs_[*passHead_].tenant && !fairShare_.belowFairLine(jobs_[job].tenant))
    return false;  // the experiment: over its share, it waits its turn
  if (!shadow_ || !passHead_ || shadow_->head != *passHead_ || std::isinf(shadow_->at)) return true;
  if (now_ + leaseFor(duration(jobs_[job].pod)) <= shadow_->at) return true;  // gone before the head's time
  return !pool_.overlaps(p.node, shadow_->view);
}

bool LoopSim::admitBeside(const SharePlacement& p, size_t job) {
  if (!allowedBeside(p, job)) return false;
  if (!r_.shareFirst || r_.backfillGpusAboveShare <= 0 || !passHead_) return true;
  const size_t t = jobs_[job].tenant;
  if (t == jobs_[*passHead_].tenant || fairShare_.belowFairLine(t)) return true;
  if (besideHead_ != *passHead_) {  // a new head: the caps start again
    besideHead_ = *passHead_;
    std::fill(besideMilli_.begin(), besideMilli_.end(), 0.0);
  }
  const double milli = static_cast<double>(request(job).totalGpuMilli());
  if (besideMilli_[t] + milli > r_.backfillGpusAboveShare * 1000) return false;
  besideMilli_[t] += milli;
  return true;
}

Shadow LoopSim::leaseShadow(size_t head) {
  Shadow s{head, std::numeric_limits<double>::infinity(), 0, now_};
  std::vector<size_t> slots;
  for (size_t i = 0; i < running_.size(); ++i)
    if (running_[i].active && !running_[i].preempting) slots.push_back(i);
  std::sort(slots.begin(), slots.end(), [&](size_t x, size_t y) { return running_[x].leaseEnd < running_[y].leaseEnd; });
  SimPool copy = pool_;
  const ShareRequest& r = request(head);
  for (size_t slot : slots) {
    const Running& run = running_[slot];
    copy.remove(run.holding, request(run.job));
    bool found = false;
    copy.forEachViewAround(run.holding.placement.node, [&](size_t v) {
      if (!found && sharing::fits(copy.view().node(v), r)) {
        found = true;
        s.view = v;
      }
    });
    if (found) {
      s.at = run.leaseEnd;
      break;
    }
  }
  return s;
}

bool LoopSim::planPreemption(size_t head) {
  const size_t cls = jobs_[head].cls;
  if (cls == kSpot || (cls == kBatch && !r_.batchPreempts)) return false;
  std::vector<size_t> candidates;
  const size_t tenant = jobs_[head].tenant;
  const double preemptorCharge = fairShare_.chargeWith(tenant, request(head).totalGpuMilli());
  // Fair share first: another tenant's system only when taking it does not put the preemptor above that tenant.
  auto invertsShares = [&](size_t victim) {
    const size_t v = jobs_[victim].tenant;
    if (!r_.shareFirst || v == tenant) return false;
    return preemptorCharge * (1 + r_.preemptionHysteresis) > fairShare_.chargeWith(v, -request(victim).totalGpuMilli());
  };
  for (size_t i = 0; i < running_.size(); ++i)
    if (running_[i].active && !running_[i].preempting && jobs_[running_[i].job].cls == kSpot && !invertsShares(running_[i].job))
      candidates.push_back(i);
  if (candidates.empty()) return false;
  std::sort(candidates.begin(), candidates.end(), [&](size_t x, size_t y) {
    const int32_t gx = request(running_[x].job).gpuCount, gy = request(running_[y].job).gpuCount;
    if (gx != gy) return gx < gy;
    return running_[x].start > running_[y].start;  // the youngest loses least
  });
  SimPool copy = pool_;
  const ShareRequest& r = request(head);
  std::vector<size_t> victims;
  std::optional<size_t> place;
  for (size_t slot : candidates) {
    const Running& run = running_[slot];
    copy.remove(run.holding, request(run.job));
    victims.push_back(slot);
    copy.forEachViewAround(run.holding.placement.node, [&](size_t v) {
      if (!place && sharing::fits(copy.view().node(v), r)) place = v;
    });
    if (place) break;
  }
  if (!place) return false;
  // Only the victims on the place's host or enclosure freed anything it needs.
  std::erase_if(victims, [&](size_t slot) { return !pool_.overlaps(running_[slot].holding.placement.node, *place); });
  Preemption p;
  for (size_t slot : victims) {
    running_[slot].preempting = true;
    p.victims.emplace_back(slot, running_[slot].generation);
  }
  preemptions_.push_back(std::move(p));
  events_.push({now_ + r_.preemptionGraceSeconds, Event::Kind::kPreemption, preemptions_.size() - 1, 0});
  shadow_ = Shadow{head, now_ + r_.preemptionGraceSeconds, *place, now_};
  return true;
}

std::optional<size_t> LoopSim::moveForHead(size_t head) {
  const ComposablePool* composable = pool_.composable();
  const ShareRequest& r = request(head);
  if (composable == nullptr || composable->mirror() || !r.wholeGpus()) return std::nullopt;
  if (measuredSince_ >= 0) ++result_.moveLooks;
  // The candidates: systems of whole GPUs in their idle end.
  std::vector<LoopMovable> movable;
  for (size_t i = 0; i < running_.size(); ++i) {
    const Running& run = running_[i];
    if (!run.active || run.preempting || !jobs_[run.job].overprovisioned || now_ < run.start + busyFor(run.job)) continue;
    if (request(run.job).wholeGpus()) movable.push_back({i, &run.holding, &request(run.job)});
  }
  bool chance = false;
  const auto best = planLoopMoves(pool_, movable, r, r_.mostMovedGpus, chance);
  if (chance && measuredSince_ >= 0) ++result_.moveChances;
  if (!best) return std::nullopt;
  account(now_);
  for (const auto& [slot, to] : best->moves) {
    Running& run = running_[slot];
    const ShareRequest& q = request(run.job);
    pool_.remove(run.holding, q);
    run.holding = pool_.place({to, sharing::pickExclusiveGpus(pool_.view().node(to), q)}, q);
    if (measuredSince_ >= 0) {
      ++result_.moves;
      result_.movedGpus += q.gpuCount;
    }
  }
  return best->view;
}

bool LoopSim::establishHead(size_t job) {
  passHead_ = job;
  const auto begin = std::chrono::steady_clock::now();
  // Moves are looked for at every pass while the head waits (as yardd's post-filter is asked at every pass): what
  // departed since may have made a destination.
  if (r_.defragment)
    if (auto view = moveForHead(job)) {  // the moves emptied a place for it: it goes now
      shadow_ = Shadow{job, now_, *view, now_};
      spent_ += std::chrono::steady_clock::now() - begin;
      return true;
    }
  // A shadow stays valid while its head waits: whatever started since ends before it or keeps off its place.
  // It is planned again once its time has passed, and a head no lease lets in looks again every minute.
  if (shadow_ && shadow_->head == job && now_ <= shadow_->at &&
      (!std::isinf(shadow_->at) || now_ - shadow_->plannedAt < kReplanSeconds)) {
    spent_ += std::chrono::steady_clock::now() - begin;
    return false;
  }
  shadow_.reset();
  if (!planPreemption(job)) shadow_ = leaseShadow(job);
  spent_ += std::chrono::steady_clock::now() - begin;
  return false;
}

bool LoopSim::tryAdmit(size_t job) {
  const ShareRequest& r = request(job);
  std::optional<SharePlacement> p;
  if (std::find(failedShapes_.begin(), failedShapes_.end(), r) == failedShapes_.end()) {
    p = choose(job);
    if (!p) failedShapes_.push_back(r);
  }
  if (!p) {
    if (passHead_ || !establishHead(job)) return false;
    p = choose(job);  // moves made room for it
    if (!p) return false;
    passHead_.reset();
  }
  if (passHead_ && !admitBeside(*p, job)) return false;
  --waiting_;
  start(job, *p);
  return true;
}

// Fair share first: each tenant's queue in class and age order, merged across tenants by orderedBefore (the
// charges move as requests start, so the next tenant is picked afresh each time).
void LoopSim::serveByShare() {
  const size_t tenants = fairShare_.tenants();
  std::vector<std::vector<size_t>> line(tenants);
  for (size_t t = 0; t < tenants; ++t)
    for (size_t cls = 0; cls < kLoopClasses; ++cls) {
      auto& q = queues_[cls][t];
      std::erase_if(q, [&](size_t job) { return jobs_[job].state != Job::State::kWaiting; });
      for (auto it = q.begin(); it != q.end();) {
        if (now_ - jobs_[*it].since > a_.patienceSeconds) {
          giveUp(*it);
          it = q.erase(it);
          continue;
        }
        line[t].push_back(*it);
        ++it;
      }
    }
  std::vector<size_t> next(tenants, 0), beside(tenants, 0);
  for (size_t tried = 0; tried < a_.backfillDepth;) {
    std::optional<size_t> pick;
    for (size_t t = 0; t < tenants; ++t) {
      if (next[t] == line[t].size() || (passHead_ && beside[t] >= r_.backfillPerTenant)) continue;
      if (!pick || orderedBefore(line[t][next[t]], line[*pick][next[*pick]])) pick = t;
    }
    if (!pick) break;
    const size_t job = line[*pick][next[*pick]++];
    ++tried;
    if (passHead_) ++beside[*pick];
    (void)tryAdmit(job);  // a started request leaves its queue at the next pass
  }
}

void LoopSim::serveLoop() {
  advanceHistory();
  failedShapes_.clear();
  passHead_.reset();
  if (r_.shareFirst) {
    serveByShare();
    return;
  }
  size_t tried = 0;
  std::vector<size_t> tenants(fairShare_.tenants());
  std::iota(tenants.begin(), tenants.end(), 0);
  std::stable_sort(tenants.begin(), tenants.end(), [&](size_t x, size_t y) { return charge(x) < charge(y); });
  // The queues in order: by the class each is ordered as, then the tenant's charge, then the class itself.
  std::vector<std::pair<size_t, size_t>> order;  // (class, tenant), tenants by charge
  for (size_t cls = 0; cls < kLoopClasses; ++cls)
    for (size_t t : tenants) order.emplace_back(cls, t);
  std::vector<size_t> rank(tenants.size());
  for (size_t i = 0; i < tenants.size(); ++i) rank[tenants[i]] = i;
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
    // The queues of one class and tenant as the queue sort orders them (age apart: each queue is in age order).
    if (!r_.fairShareLiftsSpot) return sort_.before(waitingOf(x.second, x.first, 0, 0), waitingOf(y.second, y.first, 0, 0), shares_);
    const size_t cx = orderClass(x.first, x.second), cy = orderClass(y.first, y.second);
    if (cx != cy) return cx < cy;
    if (x.second != y.second) return rank[x.second] < rank[y.second];
    return x.first < y.first;
  });
  for (const auto& [cls, t] : order) {
    if (tried >= a_.backfillDepth) break;
    {
      auto& q = queues_[cls][t];
      for (auto it = q.begin(); it != q.end() && tried < a_.backfillDepth;) {
        if (jobs_[*it].state != Job::State::kWaiting) {
          it = q.erase(it);
          continue;
        }
        if (now_ - jobs_[*it].since > a_.patienceSeconds) {
          giveUp(*it);
          it = q.erase(it);
          continue;
        }
        ++tried;
        if (tryAdmit(*it)) it = q.erase(it);
        else ++it;
      }
    }
  }
}

void LoopSim::arrive(size_t job) {
  if (!r_.fullLoop) {  // a newcomer that fits is placed at once even when others wait (dynamic_sim.h)
    if (auto p = choose(job)) start(job, *p);
    else enqueue(job);
    return;
  }
  advanceHistory();
  // Ahead of the head in order: it may take what the head would (or become the head and preempt).
  if (queueEmpty() || !passHead_ || orderedBefore(job, *passHead_)) {
    if (auto p = choose(job)) {
      start(job, *p);
      return;
    }
    enqueue(job);
    if (!passHead_ || orderedBefore(job, *passHead_)) serveLoop();
    return;
  }
  // Behind the head: it goes now only if it cannot delay the head.
  if (auto p = choose(job); p && admitBeside(*p, job)) {
    start(job, *p);
    return;
  }
  enqueue(job);
}

LoopResult LoopSim::run() {
  const double rate = arrivalRate(pods_, a_, pool_.capacity());

  // The arrivals draw exactly as dynamic_sim.h does; tenants, classes and over-provisioning from their own stream.
  std::mt19937_64 rng(a_.seed);
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<size_t> pick(0, pods_.size() - 1);
  std::mt19937_64 traits(a_.seed ^ 0x5eed'100bULL);
  std::discrete_distribution<size_t> tenantOf(o_.workload.tenantDemand.begin(), o_.workload.tenantDemand.end());
  std::discrete_distribution<size_t> classOf(o_.workload.classShare.begin(), o_.workload.classShare.end());
  std::bernoulli_distribution overprovisioned(o_.workload.overprovisionedShare);

  const size_t total = a_.warmup + a_.arrivals;
  jobs_.reserve(total);
  for (size_t a = 0; a < total; ++a) {
    const double arrival = now_ + gap(rng);
    while (!events_.empty() && events_.top().at <= arrival) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.at;
      if (e.kind == Event::Kind::kDeparture) {
        if (!running_[e.index].active || running_[e.index].generation != e.generation) continue;  // preempted before
        finish(e.index, false);
      } else {
        for (auto [slot, generation] : preemptions_[e.index].victims)
          if (running_[slot].active && running_[slot].generation == generation) finish(slot, true);
        preemptions_[e.index].victims.clear();
      }
      if (r_.fullLoop) serveLoop();
      else serveFifo();
    }
    now_ = arrival;
    if (a == a_.warmup) {
      measuredSince_ = now_;
      lastChange_ = now_;
    }
    Job j;
    j.pod = pick(rng);
    j.tenant = tenantOf(traits);
    j.cls = classOf(traits);
    j.overprovisioned = overprovisioned(traits);
    j.measured = a >= a_.warmup;
    j.arrival = j.since = now_;
    jobs_.push_back(j);
    const size_t job = jobs_.size() - 1;
    policy_.observe(request(job));
    if (j.measured) forGroups(job, [&](LoopGroup& g) {
        ++g.arrived;
        g.offeredGpuTime += gpuTime(job);
      });
    arrive(job);
  }
  account(now_);
  for (const Running& run : running_)
    if (run.active) accountHolding(run, now_);  // still running: its GPU time so far
  for (const Job& j : jobs_)
    if (j.state == Job::State::kWaiting && j.measured && now_ - j.since > a_.patienceSeconds) {
      const size_t job = static_cast<size_t>(&j - jobs_.data());
      forGroups(job, [](LoopGroup& g) { ++g.gaveUp; });
    }

  const double span = now_ - measuredSince_;
  result_.meanAllocationPercent = span > 0 ? 100.0 * allocationArea_ / span / static_cast<double>(pool_.capacity()) : 0;
  result_.seconds = std::chrono::duration<double>(spent_).count();
  std::vector<double> demand, served;
  for (const auto& g : result_.byTenant) {
    demand.push_back(g.offeredGpuTime);
    served.push_back(g.servedGpuTime);
  }
  result_.tenantEntitlement = waterFill(demand, o_.workload.tenantWeights, result_.all.servedGpuTime);
  double sum = 0, squares = 0;
  size_t counted = 0;
  for (size_t t = 0; t < demand.size(); ++t) {
    const double ratio = result_.tenantEntitlement[t] > 0 ? served[t] / result_.tenantEntitlement[t] : 0;
    result_.tenantRatio.push_back(ratio);
    if (demand[t] <= 0) continue;
    sum += ratio;
    squares += ratio * ratio;
    ++counted;
  }
  result_.jain = squares > 0 ? sum * sum / (static_cast<double>(counted) * squares) : 0;
  return std::move(result_);
}

}  // namespace

const char* loopClassName(size_t cls) {
  static constexpr std::array<const char*, kLoopClasses> kNames{"production", "batch", "spot"};
  return cls < kLoopClasses ? kNames[cls] : "?";
}

const char* loopSizeName(size_t size) {
  static constexpr std::array<const char*, kLoopSizes> kNames{"cpu", "share", "1", "2", "3-4", "5-8"};
  return size < kLoopSizes ? kNames[size] : "?";
}

size_t loopSizeOf(const sharing::ShareRequest& r) {
  if (r.gpuCount == 0) return 0;
  if (r.sharesGpu()) return 1;
  if (r.gpuCount == 1) return 2;
  if (r.gpuCount == 2) return 3;
  return r.gpuCount <= 4 ? 4 : 5;
}

LoopResult runLoop(const sharing::ShareCluster& servers, const ComposableShape* shape, const std::vector<TracePod>& pods,
                   const PolicyForPool& makePolicy, const LoopOptions& options) {
  SimPool pool(servers, shape);
  auto policy = makePolicy(pool.composable());
  if (!policy) throw std::invalid_argument("no policy for this pool");
  LoopSim sim(pool, pods, *policy, options);
  LoopResult result = sim.run();
  if (const ComposablePool* c = pool.composable())  // what was placed and released adds up
    if (auto broken = c->violation()) throw std::logic_error("the loop simulation broke the pool: " + *broken);
  return result;
}

}  // namespace switchyard::bench

#include "tests/bench/packing/dynamic_sim.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <queue>
#include <random>
#include <stdexcept>

#include "tests/bench/packing/sim_pool.h"

namespace switchyard::bench {

namespace {

using Pool = SimPool;

struct Waiting {
  size_t pod;
  double since;
  bool measured;
};

struct Departure {
  double at;
  size_t running;  // index into the running table
  bool operator>(const Departure& o) const { return at > o.at; }
};

DynamicResult runOn(Pool& pool, const std::vector<TracePod>& pods, sharing::SharePolicy& policy, const DynamicOptions& o) {
  const double rate = arrivalRate(pods, o, pool.capacity());
  auto duration = [&](size_t pod) { return std::min(static_cast<double>(pods[pod].durationSeconds), o.maxDurationSeconds); };
  auto gpuTime = [&](size_t pod) { return static_cast<double>(pods[pod].request.totalGpuMilli()) * duration(pod); };

  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<size_t> pick(0, pods.size() - 1);

  struct Running {
    size_t pod;
    Pool::Holding holding;
  };
  std::vector<Running> running;
  std::vector<size_t> freeSlots;
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures;
  std::deque<Waiting> queue;
  std::vector<double> waits;
  DynamicResult result;
  std::chrono::steady_clock::duration spent{};
  double now = 0, measuredSince = -1, allocationArea = 0, lastChange = 0;
  size_t attachesAtStart = 0, detachesAtStart = 0;

  auto account = [&](double t) {  // time-weighted allocation while measuring
    if (measuredSince >= 0) allocationArea += static_cast<double>(pool.allocated()) * (t - lastChange);
    lastChange = t;
  };
  auto tryPlace = [&](size_t podIndex) -> bool {
    const sharing::ShareRequest& r = pods[podIndex].request;
    auto start = std::chrono::steady_clock::now();
    auto p = policy.choose(pool.view(), r);
    spent += std::chrono::steady_clock::now() - start;
    if (!p) return false;
    account(now);
    Running run{podIndex, pool.place(*p, r)};
    size_t slot;
    if (!freeSlots.empty()) {
      slot = freeSlots.back();
      freeSlots.pop_back();
      running[slot] = std::move(run);
    } else {
      slot = running.size();
      running.push_back(std::move(run));
    }
    departures.push({now + duration(podIndex), slot});
    return true;
  };
  auto noteAccepted = [&](size_t podIndex) {  // a measured arrival placed
    const auto k = static_cast<size_t>(kindOf(pods[podIndex].request));
    ++result.accepted;
    ++result.acceptedByKind[k];
    result.acceptedGpuTime += gpuTime(podIndex);
    result.acceptedGpuTimeByKind[k] += gpuTime(podIndex);
  };
  auto serveQueue = [&] {
    size_t tried = 0;
    for (auto it = queue.begin(); it != queue.end() && tried < o.backfillDepth;) {
      if (now - it->since > o.patienceSeconds) {
        if (it->measured) ++result.gaveUp;
        it = queue.erase(it);
        continue;
      }
      ++tried;
      if (tryPlace(it->pod)) {
        if (it->measured) {
          noteAccepted(it->pod);
          waits.push_back(now - it->since);
        }
        it = queue.erase(it);
      } else {
        ++it;
      }
    }
  };

  const size_t total = o.warmup + o.arrivals;
  for (size_t a = 0; a < total; ++a) {
    const double arrival = now + gap(rng);
    while (!departures.empty() && departures.top().at <= arrival) {
      const Departure d = departures.top();
      departures.pop();
      now = d.at;
      account(now);
      Running& run = running[d.running];
      pool.remove(run.holding, pods[run.pod].request);
      freeSlots.push_back(d.running);
      serveQueue();
    }
    now = arrival;
    if (a == o.warmup) {
      measuredSince = now;
      lastChange = now;
      attachesAtStart = pool.attaches();
      detachesAtStart = pool.detaches();
    }
    const bool measured = a >= o.warmup;
    const size_t podIndex = pick(rng);
    policy.observe(pods[podIndex].request);
    if (measured) {
      const auto k = static_cast<size_t>(kindOf(pods[podIndex].request));
      ++result.arrived;
      ++result.arrivedByKind[k];
      result.arrivedGpuTime += gpuTime(podIndex);
      result.arrivedGpuTimeByKind[k] += gpuTime(podIndex);
    }
    // A newcomer that fits is placed at once even when others wait (backfill); otherwise it queues.
    if (tryPlace(podIndex)) {
      if (measured) {
        ++result.acceptedAtOnce;
        noteAccepted(podIndex);
        waits.push_back(0);
      }
    } else {
      queue.push_back({podIndex, now, measured});
    }
  }
  account(now);
  for (const auto& w : queue)
    if (w.measured && now - w.since > o.patienceSeconds) ++result.gaveUp;
  result.attaches = pool.attaches() - attachesAtStart;
  result.detaches = pool.detaches() - detachesAtStart;
  if (!waits.empty()) {
    double sum = 0;
    for (double w : waits) sum += w;
    result.meanWaitSeconds = sum / static_cast<double>(waits.size());
    std::sort(waits.begin(), waits.end());
    result.p99WaitSeconds = waits[std::min(waits.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(waits.size())))];
  }
  const double span = now - measuredSince;
  result.meanAllocationPercent = span > 0 ? 100.0 * allocationArea / span / static_cast<double>(pool.capacity()) : 0;
  result.seconds = std::chrono::duration<double>(spent).count();
  return result;
}

}  // namespace

double arrivalRate(const std::vector<TracePod>& pods, const DynamicOptions& o, int64_t poolCapacityMilli) {
  if (pods.empty()) throw std::invalid_argument("no pods");
  double gpuSeconds = 0;  // mean over the pod list of milli-GPU x duration
  for (const auto& pod : pods)
    gpuSeconds += static_cast<double>(pod.request.totalGpuMilli()) * std::min(static_cast<double>(pod.durationSeconds), o.maxDurationSeconds);
  gpuSeconds /= static_cast<double>(pods.size());
  if (gpuSeconds <= 0) throw std::invalid_argument("the pod list has no GPU time (no durations?)");
  const double capacity = static_cast<double>(o.referenceCapacityMilli > 0 ? o.referenceCapacityMilli : poolCapacityMilli);
  return o.load * capacity / gpuSeconds;
}

RequestKind kindOf(const sharing::ShareRequest& r) {
  if (r.gpuCount == 0) return RequestKind::kCpuOnly;
  if (r.sharesGpu()) return RequestKind::kShare;
  if (r.gpuCount == 1) return RequestKind::kOneGpu;
  return r.gpuCount <= 4 ? RequestKind::kTwoToFourGpus : RequestKind::kFiveOrMoreGpus;
}

const char* csvName(RequestKind k) {
  switch (k) {
    case RequestKind::kCpuOnly: return "cpu_only";
    case RequestKind::kShare: return "share";
    case RequestKind::kOneGpu: return "1_gpu";
    case RequestKind::kTwoToFourGpus: return "2_to_4_gpus";
    case RequestKind::kFiveOrMoreGpus: return "5_plus_gpus";
  }
  return "?";
}

DynamicResult runDynamic(const sharing::ShareCluster& servers, const ComposableShape* shape, const std::vector<TracePod>& pods,
                         sharing::SharePolicy& policy, const DynamicOptions& options) {
  Pool pool(servers, shape);
  return runOn(pool, pods, policy, options);
}

DynamicResult runDynamic(const sharing::ShareCluster& servers, const ComposableShape* shape, const std::vector<TracePod>& pods,
                         const PolicyForPool& makePolicy, const DynamicOptions& options) {
  Pool pool(servers, shape);
  auto policy = makePolicy(pool.composable());
  if (!policy) throw std::invalid_argument("no policy for this pool");
  return runOn(pool, pods, *policy, options);
}

}  // namespace switchyard::bench

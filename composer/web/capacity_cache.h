// Usable capacity for /metrics without making a scrape wait for it. Capacity places requests one after
// another on a copy of the pool: microseconds at 16 GPUs, most of a second at 100,000. The cache answers
// with the report for the current view when it has one; when the pool changed, a report that is cheap to
// make (under `inlineBudget` last time) is made at once, so small pools are always exact; a costly one is
// served as it stands while a background thread makes the next (stale while revalidating), and the
// gauges say how old it is.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "composer/engine/engine_client.h"

namespace switchyard::web {

class CapacityCache {
 public:
  struct Entry {
    CapacityReport report;
    std::uint64_t version = 0;  // the view it was computed on
    std::chrono::steady_clock::time_point at;
  };
  CapacityCache(Engine& engine, std::vector<RequestShape> shapes, std::vector<MigProfile> migProfiles, std::vector<int> shareMilli,
                std::chrono::milliseconds inlineBudget = std::chrono::milliseconds(50));
  ~CapacityCache();
  CapacityCache(const CapacityCache&) = delete;
  CapacityCache& operator=(const CapacityCache&) = delete;

  [[nodiscard]] Result<std::shared_ptr<const Entry>> get();

 private:
  Result<std::shared_ptr<const Entry>> compute();
  void refreshLoop();

  EngineClient engine_;  // reads the view only
  const std::vector<RequestShape> shapes_;
  const std::vector<MigProfile> migProfiles_;
  const std::vector<int> shareMilli_;
  const std::chrono::milliseconds inlineBudget_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<const Entry> latest_;
  std::chrono::steady_clock::duration lastCost_{};
  bool refreshWanted_ = false;
  bool stopping_ = false;
  std::thread refresher_;  // started on first need
};

}  // namespace switchyard::web

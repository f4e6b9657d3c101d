// Usable capacity over time, for the dashboard: a sampler thread asks the engine every interval and keeps
// the last `keep` samples in memory (Prometheus keeps the long history; this is what the page shows
// without one).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "composer/engine/engine_client.h"

namespace switchyard::web {

struct CapacitySample {
  Timestamp at = 0;
  int freeGpus = 0;
  int strandedGpus = 0;
  std::vector<std::pair<int, int>> placeable;  // (gpus per request, how many fit), P2P required
};

class CapacityHistory {
 public:
  CapacityHistory(Engine& engine, Clock& clock, std::chrono::milliseconds interval, std::size_t keep = 1440);
  ~CapacityHistory();
  CapacityHistory(const CapacityHistory&) = delete;
  CapacityHistory& operator=(const CapacityHistory&) = delete;

  void start();  // takes a sample at once, then every interval
  void stop();
  [[nodiscard]] std::vector<CapacitySample> samples() const;
  [[nodiscard]] std::chrono::milliseconds interval() const { return interval_; }
  void sampleNow();

 private:
  EngineClient engine_;  // reads the view only
  Clock& clock_;
  std::chrono::milliseconds interval_;
  std::size_t keep_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<CapacitySample> samples_;
  std::thread thread_;
};

}  // namespace switchyard::web

#include "composer/web/capacity_history.h"

#include <spdlog/spdlog.h>

namespace switchyard::web {

CapacityHistory::CapacityHistory(Engine& engine, Clock& clock, std::chrono::milliseconds interval, std::size_t keep)
    : engine_(engine), clock_(clock), interval_(interval), keep_(keep) {}

CapacityHistory::~CapacityHistory() { stop(); }

void CapacityHistory::start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      sampleNow();
      lock.lock();
      wake_.wait_for(lock, interval_, [this] { return stopping_; });
    }
  });
}

void CapacityHistory::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CapacityHistory::sampleNow() {
  auto report = engine_.capacity(defaultShapes());
  if (!report) {
    spdlog::debug("capacity sample skipped: {}", report.error().message);
    return;
  }
  CapacitySample s{clock_.now(), report->freeGpus, report->strandedGpus, {}};
  for (const auto& c : report->shapes) s.placeable.emplace_back(c.shape.gpus, c.placeable);
  std::lock_guard lock(mutex_);
  samples_.push_back(std::move(s));
  while (samples_.size() > keep_) samples_.pop_front();
}

std::vector<CapacitySample> CapacityHistory::samples() const {
  std::lock_guard lock(mutex_);
  return {samples_.begin(), samples_.end()};
}

}  // namespace switchyard::web

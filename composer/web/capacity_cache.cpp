#include "composer/web/capacity_cache.h"

#include <spdlog/spdlog.h>

namespace switchyard::web {

CapacityCache::CapacityCache(Engine& engine, std::vector<RequestShape> shapes, std::vector<MigProfile> migProfiles,
                             std::vector<int> shareMilli, std::chrono::milliseconds inlineBudget)
    : engine_(engine),
      shapes_(std::move(shapes)),
      migProfiles_(std::move(migProfiles)),
      shareMilli_(std::move(shareMilli)),
      inlineBudget_(inlineBudget) {}

CapacityCache::~CapacityCache() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

Result<std::shared_ptr<const CapacityCache::Entry>> CapacityCache::compute() {
  const auto view = engine_.view();
  if (!view) return fail(Code::kUnavailable, "yardd is starting: the pool is not loaded yet");
  const auto started = std::chrono::steady_clock::now();
  SY_ASSIGN(auto report, engine_.capacity(shapes_, migProfiles_, shareMilli_));
  auto entry = std::make_shared<Entry>(Entry{std::move(report), view->version, started});
  std::lock_guard lock(mutex_);
  lastCost_ = std::chrono::steady_clock::now() - started;
  if (!latest_ || latest_->version < entry->version) latest_ = entry;
  return std::shared_ptr<const Entry>(latest_);
}

Result<std::shared_ptr<const CapacityCache::Entry>> CapacityCache::get() {
  const auto view = engine_.view();
  if (!view) return fail(Code::kUnavailable, "yardd is starting: the pool is not loaded yet");
  {
    std::unique_lock lock(mutex_);
    if (latest_ && latest_->version == view->version) return std::shared_ptr<const Entry>(latest_);
    if (latest_ && lastCost_ > inlineBudget_) {
      // Costly: serve the last report and let the refresher make the next one.
      if (!refresher_.joinable()) refresher_ = std::thread([this] { refreshLoop(); });
      refreshWanted_ = true;
      wake_.notify_one();
      return std::shared_ptr<const Entry>(latest_);
    }
  }
  return compute();
}

void CapacityCache::refreshLoop() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || refreshWanted_; });
    if (stopping_) return;
    refreshWanted_ = false;
    lock.unlock();
    if (auto r = compute(); !r) spdlog::debug("capacity for /metrics: {}", r.error().message);
    lock.lock();
  }
}

}  // namespace switchyard::web

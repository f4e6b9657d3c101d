#include "composer/engine/elastic_executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "composer/model/contain.h"

namespace switchyard {

ElasticExecutor::ElasticExecutor(std::size_t maxThreads) : maxThreads_(std::max<std::size_t>(1, maxThreads)) {}

std::unique_ptr<ElasticExecutor> ElasticExecutor::manual() { return std::unique_ptr<ElasticExecutor>(new ElasticExecutor(Manual{})); }

ElasticExecutor::~ElasticExecutor() { join(); }

bool ElasticExecutor::runOne(std::size_t index) {
  std::function<void()> work;
  {
    std::lock_guard lock(mutex_);
    if (!manual_ || index >= queue_.size()) return false;
    const auto at = queue_.begin() + static_cast<std::ptrdiff_t>(index);
    work = std::move(*at);
    queue_.erase(at);
  }
  work();
  return true;
}

std::size_t ElasticExecutor::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

void ElasticExecutor::post(std::function<void()> work) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  queue_.push_back(std::move(work));
  if (manual_) return;  // runOne() runs it
  // Every queued item beyond the idle threads wants a thread of its own.
  if (queue_.size() > idle_ && threads_.size() < maxThreads_)
    threads_.emplace_back([this] { run(); });
  else
    wake_.notify_one();
}

void ElasticExecutor::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    ++idle_;
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping, and nothing left to run
    auto work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    // The engine contains each call it posts; this is the last guard, so that a throw ends one piece of work and
    // never the thread (std::terminate).
    runContained(work, [](const std::string& what) { spdlog::error("a driver thread caught a failure ({}); it goes on", what); });
    work = nullptr;
    lock.lock();
  }
}

void ElasticExecutor::join() {
  std::vector<std::thread> threads;
  std::deque<std::function<void()>> dropped;  // a manual executor's: destroyed outside the lock
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    threads.swap(threads_);
    if (manual_) dropped.swap(queue_);
  }
  wake_.notify_all();
  for (auto& t : threads) t.join();
}

std::size_t ElasticExecutor::threads() const {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

std::size_t ElasticExecutor::idleThreads() const {
  std::lock_guard lock(mutex_);
  return idle_;
}

}  // namespace switchyard

#include "fabric/cxl/fm_worker.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace switchyard::cxl {

FmWorker::FmWorker(std::shared_ptr<FmEndpoint> endpoint, Dialect dialect, std::string switchName, Runner runner, Duration replyTimeout)
    : endpoint_(std::move(endpoint)),
      dialect_(dialect),
      name_(std::move(switchName)),
      runner_(std::move(runner)),
      replyTimeout_(replyTimeout),
      thread_([this] { loop(); }) {}

FmWorker::~FmWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  thread_.join();
  std::lock_guard lock(mutex_);
  for (auto& e : queue_) {
    e->job->result = fail(Code::kUnavailable, fmt::format("{}: the driver stopped before the call ran", name_));
    e->done = true;
  }
  finished_.notify_all();
}

Result<void> FmWorker::run(const std::shared_ptr<Job>& job) {
  auto entry = std::make_shared<Entry>(Entry{job});
  std::unique_lock lock(mutex_);
  if (stopping_) return fail(Code::kUnavailable, fmt::format("{}: the driver is stopping", name_));
  queue_.push_back(entry);
  queued_.notify_one();
  if (!finished_.wait_until(lock, job->deadline, [&] { return entry->done; })) {
    const auto at = std::find(queue_.begin(), queue_.end(), entry);
    const bool taken = at == queue_.end();
    if (!taken) queue_.erase(at);
    return fail(Code::kDeadlineExceeded, fmt::format("{}: {} before the call's deadline", name_,
                                                     taken ? "the switch did not finish the call" : "other calls held the switch's FM session"));
  }
  return job->result;
}

void FmWorker::loop() {
  for (;;) {
    std::vector<std::shared_ptr<Entry>> batch;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      // Every call waiting, up to the first exclusive one (which runs alone).
      if (queue_.front()->job->exclusive) {
        batch.push_back(queue_.front());
        queue_.pop_front();
      } else {
        while (!queue_.empty() && !queue_.front()->job->exclusive) {
          batch.push_back(queue_.front());
          queue_.pop_front();
        }
      }
    }
    Deadline deadline = batch.front()->job->deadline;
    std::vector<std::shared_ptr<Job>> jobs;
    for (const auto& e : batch) {
      deadline = std::max(deadline, e->job->deadline);
      jobs.push_back(e->job);
    }
    // A reply that never came (a request or its reply lost) ends the session; the batch runs once more on a
    // new one. That is safe because a batch is planned against what the switch shows when it starts: what the
    // lost request did (or did not do) is read back, and nothing is sent twice.
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto session = endpoint_->open(std::min(deadline, deadlineAfter(replyTimeout_)));
      if (!session) {
        for (auto& j : jobs) j->result = fail(session.error().wrap(name_));
        break;
      }
      FmClient client(**session, dialect_, name_, replyTimeout_);
      runner_(client, jobs, deadline);
      commands_ += client.commandsSent();
      if (!client.lostReply() || std::chrono::steady_clock::now() >= deadline) break;
      ++rerun_;
    }
    ++batches_;
    {
      std::lock_guard lock(mutex_);
      for (auto& e : batch) e->done = true;
    }
    finished_.notify_all();
  }
}

}  // namespace switchyard::cxl

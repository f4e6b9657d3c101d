// One switch's FM traffic, serialized and batched. Switches serve few fabric managers at once (cse one), so
// calls do not each open a connection: they queue, and one worker thread takes every call waiting, opens
// one session for them, runs them together (their commands pipelined in the same round trips) and closes
// it again, so that no connection is held idle and another FM (jack, a vendor tool) can query in between.
// Sixteen composes arriving together cost about two batches' round trips, not sixteen calls'.
//
// A caller waits for its call no longer than its own deadline: past it, it returns kDeadlineExceeded (the
// call may still run: the outcome is unknown, as the driver contract allows), and a call not yet taken is
// dropped from the queue.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "fabric/cxl/fm_client.h"
#include "fabric/cxl/fm_transport.h"

namespace switchyard::cxl {

class FmWorker {
 public:
  // A call, as the driver describes it; the runner fills in `result`.
  struct Job {
    virtual ~Job() = default;
    Deadline deadline;
    bool exclusive = false;  // runs in a batch of its own (discovery, an event poll)
    Result<void> result;
  };
  // Runs a batch on one session, and sets every job's result (a batch may run again after a lost reply).
  // The session's deadline is the latest of the batch's.
  using Runner = std::function<void(FmClient&, std::span<const std::shared_ptr<Job>>, Deadline)>;

  FmWorker(std::shared_ptr<FmEndpoint> endpoint, Dialect dialect, std::string switchName, Runner runner,
           Duration replyTimeout = FmClient::kDefaultReplyTimeout);
  ~FmWorker();
  FmWorker(const FmWorker&) = delete;
  FmWorker& operator=(const FmWorker&) = delete;

  // Queues the call and waits for it (or its deadline); the call's result.
  [[nodiscard]] Result<void> run(const std::shared_ptr<Job>& job);
  // FM-API commands sent so far.
  [[nodiscard]] std::uint64_t commandsSent() const { return commands_.load(); }
  // Batches run so far (each one session).
  [[nodiscard]] std::uint64_t batches() const { return batches_.load(); }
  // Batches run a second time because a reply never came.
  [[nodiscard]] std::uint64_t reruns() const { return rerun_.load(); }

 private:
  struct Entry {
    std::shared_ptr<Job> job;
    bool done = false;
  };
  void loop();

  std::shared_ptr<FmEndpoint> endpoint_;
  Dialect dialect_;
  std::string name_;
  Runner runner_;
  Duration replyTimeout_;
  std::mutex mutex_;
  std::condition_variable queued_, finished_;
  std::deque<std::shared_ptr<Entry>> queue_;
  bool stopping_ = false;
  std::atomic<std::uint64_t> commands_{0}, batches_{0}, rerun_{0};
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace switchyard::cxl

#include "composer/engine/control_loop.h"

#include <algorithm>

#include "composer/model/contain.h"

namespace switchyard {

ControlLoop::ControlLoop(bool stepped, int driverThreads, int readThreads)
    : stepped_(stepped),
      io_(std::make_unique<boost::asio::io_context>(1)),
      driverPool_(stepped ? ElasticExecutor::manual() : std::make_unique<ElasticExecutor>(static_cast<std::size_t>(std::max(1, driverThreads)))),
      readPool_(stepped ? nullptr : std::make_unique<ElasticExecutor>(static_cast<std::size_t>(std::max(1, readThreads)))) {}

ControlLoop::~ControlLoop() { joinAll(); }

void ControlLoop::start(std::function<void(const std::string& what)> onThrow) {
  if (stepped_) {
    controlThreadId_ = std::this_thread::get_id();
  } else {
    controlThread_ = std::thread([this, onThrow = std::move(onThrow)] {
      while (!runContained([this] { io_->run(); }, onThrow)) {
      }
    });
    controlThreadId_ = controlThread_.get_id();
  }
  running_.store(true, std::memory_order_release);
}

void ControlLoop::close() {
  running_.store(false, std::memory_order_release);
  if (controlThread_.joinable()) controlThread_.join();
  stopped_ = true;
  io_->restart();
  io_->poll();
}

void ControlLoop::callOff(std::function<std::function<void()>()> call) {
  ++callsInFlight_;
  driverPool_->post([this, call = std::move(call)] {
    std::function<void()> reply = call();
    if (late_.holdNext) return late_.held.push_back(std::move(reply));
    reply();
  });
}

void ControlLoop::read(std::function<void()> work) {
  if (!readPool_) return work();
  readPool_->post(std::move(work));
}

void ControlLoop::joinReads() {
  if (readPool_) readPool_->join();
}

void ControlLoop::joinAll() {
  joinReads();  // the reads in flight end first: they read the store and the view
  driverPool_->join();
}

bool ControlLoop::stepControl() {
  if (!stepped_ || !onControlThread()) return false;
  return asTask([this] { return io_->poll_one() > 0; });
}

std::size_t ControlLoop::runUntilIdle() {
  std::size_t steps = 0;
  while (step()) ++steps;
  return steps;
}

std::size_t ControlLoop::waitingCalls() const { return stepped_ ? driverPool_->queued() : 0; }

bool ControlLoop::runCall(std::size_t index, Reply reply) {
  if (!stepped_ || !onControlThread()) return false;
  late_.holdNext = reply == Reply::kLate;
  const bool ran = driverPool_->runOne(index);
  late_.holdNext = false;
  return ran;
}

bool ControlLoop::deliverReply(std::size_t index) {
  auto& held = late_.held;
  if (!stepped_ || !onControlThread() || index >= held.size()) return false;
  auto reply = std::move(held[index]);
  held.erase(held.begin() + static_cast<std::ptrdiff_t>(index));
  reply();
  return true;
}

}  // namespace switchyard

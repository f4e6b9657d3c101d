// yardd's signals: SIGTERM/SIGINT end it, SIGHUP reloads; waited for on a thread of their own.
#pragma once

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <csignal>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace switchyard {

// SIGTERM/SIGINT (leave) and SIGHUP (reload), caught on a thread of its own (they are blocked everywhere
// else), so that a standby waiting for leadership can be stopped as well as a running yardd.
class SignalWaiter {
 public:
  SignalWaiter() {
    thread_ = std::thread([this] {
      sigset_t signals;
      sigemptyset(&signals);
      sigaddset(&signals, SIGTERM);
      sigaddset(&signals, SIGINT);
      sigaddset(&signals, SIGHUP);
      int received = 0;
      while (sigwait(&signals, &received) == 0 && received == SIGHUP) {
        std::lock_guard reloading(reloadMutex_);
        if (reload_) reload_();
        else spdlog::info("SIGHUP received while starting or stopping: nothing reloaded");
      }
      std::lock_guard lock(mutex_);
      received_ = received;
      done_.notify_all();
    });
  }
  ~SignalWaiter() {
    if (!received()) pthread_kill(thread_.native_handle(), SIGTERM);  // wake its sigwait: yardd is leaving anyway
    thread_.join();
  }
  // What SIGHUP does from now on, run on the signal thread. Clear it before what it uses goes away: that
  // waits for a reload under way to finish.
  void onReload(std::function<void()> reload) {
    std::lock_guard reloading(reloadMutex_);
    reload_ = std::move(reload);
  }
  [[nodiscard]] int received() {
    std::lock_guard lock(mutex_);
    return received_;
  }
  int wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return received_ != 0 || exitStatus_ != 0; });
    return received_;
  }
  // Wakes wait() without a signal: yardd must leave with `status` (75: it can no longer write its store).
  void requestExit(int status, std::string why) {
    std::lock_guard lock(mutex_);
    if (exitStatus_ != 0) return;
    exitStatus_ = status;
    why_ = std::move(why);
    done_.notify_all();
  }
  [[nodiscard]] std::pair<int, std::string> exitRequest() {
    std::lock_guard lock(mutex_);
    return {exitStatus_, why_};
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  int received_ = 0;
  int exitStatus_ = 0;
  std::string why_;
  std::mutex reloadMutex_;  // held while a reload runs, and to change reload_
  std::function<void()> reload_;
  std::thread thread_;
};

}  // namespace switchyard

#include "composer/model/fail_points.h"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unistd.h>

namespace switchyard::failpoints {

namespace {

struct Armed {
  bool crash = true;
  int countdown = 1;  // acts when it reaches 0
};

std::atomic<bool> gArmed{false};
std::mutex gMutex;
std::map<std::string, Armed, std::less<>>& points() {
  static auto* p = new std::map<std::string, Armed, std::less<>>();  // never destroyed: hits may come during exit
  return *p;
}

bool knownName(std::string_view name) {
  for (const auto& p : fixedPoints())
    if (p == name) return true;
  // step.<kind>.before / step.<kind>.after-call
  if (name.substr(0, 5) != "step.") return false;
  for (std::string_view suffix : {".before", ".after-call"})
    if (name.size() > 5 + suffix.size() && name.substr(name.size() - suffix.size()) == suffix) return true;
  return false;
}

}  // namespace

std::vector<std::string> fixedPoints() {
  return {"accept.after-persist", "queue.after-admit", "operation.after-finish", "commit.deferred", "store.before-commit", "store.after-commit"};
}

Result<std::string> configure(std::string_view spec) {
  std::string described;
  while (!spec.empty()) {
    const auto end = spec.find(';');
    std::string_view item = spec.substr(0, end);
    spec = end == std::string_view::npos ? std::string_view{} : spec.substr(end + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      return fail(Code::kInvalidArgument, fmt::format("fail point '{}': expected NAME=crash or NAME=error, optionally @N", item));
    const std::string_view name = item.substr(0, eq);
    std::string_view action = item.substr(eq + 1);
    Armed armed;
    if (const auto at = action.find('@'); at != std::string_view::npos) {
      try {
        armed.countdown = std::stoi(std::string(action.substr(at + 1)));
      } catch (const std::exception&) {
        armed.countdown = 0;
      }
      if (armed.countdown < 1) return fail(Code::kInvalidArgument, fmt::format("fail point '{}': @N needs N >= 1", item));
      action = action.substr(0, at);
    }
    if (action != "crash" && action != "error")
      return fail(Code::kInvalidArgument, fmt::format("fail point '{}': the action is crash or error", item));
    if (!knownName(name))
      return fail(Code::kInvalidArgument, fmt::format("fail point '{}': no such point (accept.after-persist, queue.after-admit, step.<kind>.before, "
                                                      "step.<kind>.after-call, operation.after-finish, commit.deferred, "
                                                      "store.before-commit, store.after-commit)",
                                                      name));
    armed.crash = action == "crash";
    {
      std::lock_guard lock(gMutex);
      points()[std::string(name)] = armed;
    }
    described += fmt::format("{}{}={}@{}", described.empty() ? "" : ", ", name, action, armed.countdown);
  }
  if (!described.empty()) gArmed.store(true, std::memory_order_release);
  return described;
}

Result<std::string> configureFromEnvironment() {
  const char* spec = std::getenv("SWITCHYARD_FAIL_POINTS");
  if (!spec || !*spec) return std::string();
  return configure(spec);
}

bool armed() { return gArmed.load(std::memory_order_relaxed); }

Result<void> hit(std::string_view name) {
  if (!gArmed.load(std::memory_order_relaxed)) return {};
  bool crash = false;
  {
    std::lock_guard lock(gMutex);
    auto it = points().find(name);
    if (it == points().end() || it->second.countdown <= 0 || --it->second.countdown > 0) return {};
    crash = it->second.crash;
  }
  if (crash) {
    // Say where, unbuffered, so that a harness can tell which point killed the process.
    const std::string line = fmt::format("fail point {}: crashing (SIGKILL)\n", name);
    (void)!::write(STDERR_FILENO, line.data(), line.size());
    ::kill(::getpid(), SIGKILL);
  }
  return fail(Code::kUnavailable, fmt::format("fail point {}: injected error", name));
}

void crashPoint(std::string_view name) { (void)hit(name); }

}  // namespace switchyard::failpoints

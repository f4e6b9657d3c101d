// What switchyard_bench prints about a set of timings, and the process's peak memory.
#pragma once

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

namespace switchyard::bench {

// Milliseconds since `t` on the steady clock.
inline double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

struct Percentiles {
  double p50 = 0, p99 = 0, max = 0, mean = 0;
};

// Nearest-rank percentiles of `us` (any order; at least one value).
inline Percentiles summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<std::size_t>(q * static_cast<double>(us.size())))]; };
  double sum = 0;
  for (double v : us) sum += v;
  return {at(0.50), at(0.99), us.back(), sum / static_cast<double>(us.size())};
}

// The process's peak resident memory (VmHWM), in KiB; 0 where /proc does not say.
inline long peakRssKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

}  // namespace switchyard::bench

// Counters and histograms that the engine and its drivers update as they work, and that a scrape writes
// out. Families are registered once, at start; their series (one per distinct label values) appear on
// first use. Thread-safe: updates come from the control thread and the driver threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "composer/metrics/exposition.h"

namespace switchyard::metrics {

// A counter, or (type kGauge, from Registry::gauge) a gauge that is set rather than added to.
class CounterFamily {
 public:
  CounterFamily(std::string name, std::string help, std::vector<std::string> labelNames, Type type = Type::kCounter);
  // `values` in the order of labelNames.
  void add(const std::vector<std::string>& values, double amount = 1);
  void set(const std::vector<std::string>& values, double value);
  [[nodiscard]] double value(const std::vector<std::string>& values) const;
  void write(ExpositionWriter& out) const;

 private:
  std::string name_, help_;
  std::vector<std::string> labelNames_;
  Type type_;
  mutable std::mutex mutex_;
  std::map<std::vector<std::string>, double> series_;
};

class HistogramFamily {
 public:
  // `bounds`: the upper bounds of the buckets, ascending (the +Inf bucket is implied).
  HistogramFamily(std::string name, std::string help, std::vector<std::string> labelNames, std::vector<double> bounds);
  void observe(const std::vector<std::string>& values, double value);
  [[nodiscard]] std::uint64_t count(const std::vector<std::string>& values) const;
  void write(ExpositionWriter& out) const;

 private:
  struct Series {
    std::vector<std::uint64_t> buckets;  // per bucket, not cumulative
    std::uint64_t count = 0;
    double sum = 0;
  };
  std::string name_, help_;
  std::vector<std::string> labelNames_;
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::map<std::vector<std::string>, Series> series_;
};

// Bucket bounds in seconds for calls from sub-millisecond to a minute.
[[nodiscard]] std::vector<double> latencyBuckets();

class Registry {
 public:
  CounterFamily& counter(std::string name, std::string help, std::vector<std::string> labelNames);
  CounterFamily& gauge(std::string name, std::string help, std::vector<std::string> labelNames);
  HistogramFamily& histogram(std::string name, std::string help, std::vector<std::string> labelNames,
                             std::vector<double> bounds = latencyBuckets());
  // Every family, in the order registered.
  void write(ExpositionWriter& out) const;

 private:
  std::vector<std::unique_ptr<CounterFamily>> counters_;
  std::vector<std::unique_ptr<HistogramFamily>> histograms_;
  std::vector<std::pair<bool, std::size_t>> order_;  // (is histogram, index)
};

}  // namespace switchyard::metrics

#include "composer/metrics/registry.h"

#include <algorithm>
#include <stdexcept>

namespace switchyard::metrics {

namespace {
Labels labelsOf(const std::vector<std::string>& names, const std::vector<std::string>& values) {
  Labels labels;
  labels.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) labels.emplace_back(names[i], values[i]);
  return labels;
}

void checkArity(const std::string& family, const std::vector<std::string>& names, const std::vector<std::string>& values) {
  if (names.size() != values.size())
    throw std::logic_error(family + ": " + std::to_string(values.size()) + " label values for " + std::to_string(names.size()) + " labels");
}
}  // namespace

CounterFamily::CounterFamily(std::string name, std::string help, std::vector<std::string> labelNames, Type type)
    : name_(std::move(name)), help_(std::move(help)), labelNames_(std::move(labelNames)), type_(type) {}

void CounterFamily::set(const std::vector<std::string>& values, double value) {
  checkArity(name_, labelNames_, values);
  std::lock_guard lock(mutex_);
  series_[values] = value;
}

void CounterFamily::add(const std::vector<std::string>& values, double amount) {
  checkArity(name_, labelNames_, values);
  std::lock_guard lock(mutex_);
  series_[values] += amount;
}

double CounterFamily::value(const std::vector<std::string>& values) const {
  std::lock_guard lock(mutex_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second;
}

void CounterFamily::write(ExpositionWriter& out) const {
  out.family(name_, help_, type_);
  std::lock_guard lock(mutex_);
  for (const auto& [values, value] : series_) out.sample(labelsOf(labelNames_, values), value);
}

HistogramFamily::HistogramFamily(std::string name, std::string help, std::vector<std::string> labelNames, std::vector<double> bounds)
    : name_(std::move(name)), help_(std::move(help)), labelNames_(std::move(labelNames)), bounds_(std::move(bounds)) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end())) throw std::logic_error(name_ + ": bucket bounds must ascend");
}

void HistogramFamily::observe(const std::vector<std::string>& values, double value) {
  checkArity(name_, labelNames_, values);
  const auto bucket = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  std::lock_guard lock(mutex_);
  Series& s = series_[values];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size(), 0);
  if (bucket < bounds_.size()) ++s.buckets[bucket];
  ++s.count;
  s.sum += value;
}

std::uint64_t HistogramFamily::count(const std::vector<std::string>& values) const {
  std::lock_guard lock(mutex_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.count;
}

void HistogramFamily::write(ExpositionWriter& out) const {
  out.family(name_, help_, Type::kHistogram);
  std::lock_guard lock(mutex_);
  for (const auto& [values, s] : series_) {
    std::vector<std::uint64_t> cumulative(bounds_.size());
    std::uint64_t running = 0;
    for (std::size_t i = 0; i < bounds_.size(); ++i) cumulative[i] = running += s.buckets[i];
    out.histogram(labelsOf(labelNames_, values), bounds_, cumulative, s.count, s.sum);
  }
}

std::vector<double> latencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

CounterFamily& Registry::counter(std::string name, std::string help, std::vector<std::string> labelNames) {
  counters_.push_back(std::make_unique<CounterFamily>(std::move(name), std::move(help), std::move(labelNames)));
  order_.emplace_back(false, counters_.size() - 1);
  return *counters_.back();
}

CounterFamily& Registry::gauge(std::string name, std::string help, std::vector<std::string> labelNames) {
  counters_.push_back(std::make_unique<CounterFamily>(std::move(name), std::move(help), std::move(labelNames), Type::kGauge));
  order_.emplace_back(false, counters_.size() - 1);
  return *counters_.back();
}

HistogramFamily& Registry::histogram(std::string name, std::string help, std::vector<std::string> labelNames, std::vector<double> bounds) {
  histograms_.push_back(std::make_unique<HistogramFamily>(std::move(name), std::move(help), std::move(labelNames), std::move(bounds)));
  order_.emplace_back(true, histograms_.size() - 1);
  return *histograms_.back();
}

void Registry::write(ExpositionWriter& out) const {
  for (const auto& [isHistogram, index] : order_) {
    if (isHistogram) histograms_[index]->write(out);
    else counters_[index]->write(out);
  }
}

}  // namespace switchyard::metrics

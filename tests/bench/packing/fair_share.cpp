#include "tests/bench/packing/fair_share.h"

#include <cmath>

namespace switchyard::bench {

FairShareLedger::FairShareLedger(std::vector<double> weights, double halfLifeSeconds)
    : weights_(std::move(weights)), halfLife_(halfLifeSeconds), held_(weights_.size(), 0), history_(weights_.size(), 0) {}

void FairShareLedger::advanceTo(double now) {
  const double lambda = std::log(2.0) / halfLife_;
  const double dt = now - at_;
  if (dt <= 0) return;
  const double keep = std::exp(-lambda * dt);
  for (std::size_t i = 0; i < held_.size(); ++i) history_[i] = history_[i] * keep + static_cast<double>(held_[i]) * (1 - keep) / lambda;
  at_ = now;
}

double FairShareLedger::used(std::size_t tenant) const { return static_cast<double>(held_[tenant]) + history_[tenant] / halfLife_; }

double FairShareLedger::charge(std::size_t tenant) const { return used(tenant) / weights_[tenant]; }

double FairShareLedger::chargeWith(std::size_t tenant, std::int64_t milli) const {
  return (used(tenant) + static_cast<double>(milli)) / weights_[tenant];
}

bool FairShareLedger::belowFairLine(std::size_t tenant) const {
  double all = 0, weights = 0;
  for (std::size_t i = 0; i < held_.size(); ++i) {
    all += used(i);
    weights += weights_[i];
  }
  return weights > 0 && charge(tenant) < all / weights;
}

double LedgerShares::chargeWith(admission::TenantIndex t, double gpus) const { return ledger_.chargeWith(t, std::llround(gpus * 1000)); }

std::vector<double> waterFill(const std::vector<double>& demand, const std::vector<double>& weight, double total) {
  std::vector<double> share(demand.size(), 0);
  std::vector<bool> open(demand.size());
  for (size_t i = 0; i < demand.size(); ++i) open[i] = demand[i] > 0 && weight[i] > 0;
  double left = total;
  for (bool changed = true; changed && left > 0;) {
    changed = false;
    double weights = 0;
    for (size_t i = 0; i < demand.size(); ++i)
      if (open[i]) weights += weight[i];
    if (weights <= 0) break;
    // Give every open tenant its weighted part; those whose demand it covers are closed at their demand.
    const double level = left / weights;
    bool anyClosed = false;
    for (size_t i = 0; i < demand.size(); ++i)
      if (open[i] && share[i] + level * weight[i] >= demand[i]) {
        left -= demand[i] - share[i];
        share[i] = demand[i];
        open[i] = false;
        anyClosed = changed = true;
      }
    if (!anyClosed) {
      for (size_t i = 0; i < demand.size(); ++i)
        if (open[i]) share[i] += level * weight[i];
      left = 0;
    }
  }
  return share;
}

}  // namespace switchyard::bench

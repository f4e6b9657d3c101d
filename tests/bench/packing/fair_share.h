// The tenants' fair share in the loop simulation, as yardd's queue keeps it (engine_queue.cpp): what each tenant
// holds now plus what it held recently (decayed with a half-life), per unit of weight; and, after a run, each
// tenant's entitlement (weighted max-min fair shares of what was served).
#pragma once

#include <cstdint>
#include <vector>

#include "composer/engine/admission/queue_sort.h"

namespace switchyard::bench {

class FairShareLedger {
 public:
  FairShareLedger(std::vector<double> weights, double halfLifeSeconds);

  // Decays the history to `now` (exactly: what each tenant held was constant since the last call).
  void advanceTo(double now);
  // A tenant starts or stops holding `milli` GPU-thousandths (call advanceTo first).
  void take(std::size_t tenant, std::int64_t milli) { held_[tenant] += milli; }
  void give(std::size_t tenant, std::int64_t milli) { held_[tenant] -= milli; }

  // Held now plus recent use, per unit of weight: who goes first among requests of one class.
  [[nodiscard]] double charge(std::size_t tenant) const;
  // The charge once `milli` more GPU-thousandths are held (negative: once they are given back).
  [[nodiscard]] double chargeWith(std::size_t tenant, std::int64_t milli) const;
  // Below the fair line: charged less than an even split of everyone's use by weight would charge.
  [[nodiscard]] bool belowFairLine(std::size_t tenant) const;
  [[nodiscard]] std::size_t tenants() const { return held_.size(); }

 private:
  [[nodiscard]] double used(std::size_t tenant) const;
  std::vector<double> weights_;
  double halfLife_;
  std::vector<std::int64_t> held_;
  std::vector<double> history_;
  double at_ = 0;
};

// The ledger as yardd's admission plugins read it (composer/engine/admission/queue_sort.h; their GPUs are the
// ledger's thousandths), so the loop orders through the profiles' own queue sorts.
class LedgerShares final : public admission::ShareBook {
 public:
  explicit LedgerShares(const FairShareLedger& ledger) : ledger_(ledger) {}
  [[nodiscard]] double charge(admission::TenantIndex t) const override { return ledger_.charge(t); }
  [[nodiscard]] double chargeWith(admission::TenantIndex t, double gpus) const override;
  [[nodiscard]] bool belowFairLine(admission::TenantIndex t) const override { return ledger_.belowFairLine(t); }

 private:
  const FairShareLedger& ledger_;
};

// Weighted max-min fair shares of `total` among demands (a tenant with no demand gets nothing).
[[nodiscard]] std::vector<double> waterFill(const std::vector<double>& demand, const std::vector<double>& weight, double total);

}  // namespace switchyard::bench

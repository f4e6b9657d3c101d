// What the packing benchmark's LP bounds share (upper_bound.h, server_bound.h, exact_optimum.h): GLPK rows and columns added
// one at a time, a quiet primal simplex, and the pricing of one GPU's configuration against the duals of the
// items it could hold (milli shares by a bounded knapsack, MIG instances by a scan of the slice rules' layouts).
#pragma once

#include <glpk.h>

#include <array>
#include <expected>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"

namespace switchyard::bench {

using Lp = std::unique_ptr<glp_prob, decltype(&glp_delete_prob)>;
using Entries = std::map<int, double>;  // row -> coefficient (rows unique, as GLPK wants)

// A column >= 0 (at most `upper`) with these entries and objective coefficient; its index.
int addColumn(glp_prob* lp, const Entries& entries, double objective, double upper = std::numeric_limits<double>::infinity());
// A row <= upper; its index.
int addRow(glp_prob* lp, double upper);
// Solves with the primal simplex, quietly; the optimum or why there is none.
[[nodiscard]] std::expected<double, std::string> solve(glp_prob* lp);

// LP rows and objectives in units near 1 (GPUs, cores, GiB): raw milli and MiB make GLPK's basis ill-conditioned.
inline constexpr double kLpGpu = 1.0 / sharing::kMilliPerGpu, kLpCore = 1.0 / 1000, kLpGiB = 1.0 / 1024;

constexpr int kMigItem = sharing::kMilliPerGpu;  // item ids: a share size in milli, or kMigItem + profile

// What one GPU holds: copies of each item, and their summed dual value.
struct Configuration {
  std::map<int, int> copies;  // item -> copies on one GPU
  double value = 0;           // sum of copies * item dual
};

// An item a configuration may hold (a share size in milli, or kMigItem + profile), its dual value, and how
// many requests ask for it (no GPU ever holds more copies than that).
struct Item {
  int id = 0;
  double dual = 0;
  int requests = 0;
};

// The best configuration of milli shares and the best MIG layout against the items' duals: [0] a bounded
// knapsack over 1000 milli (items below kMigItem), [1] a scan of the layouts the slice rules reach (MIG items).
// Items with a dual <= 0 never help and may be left out by the caller.
[[nodiscard]] std::array<Configuration, 2> bestConfigurations(const std::vector<Item>& items);

// The item a GPU-sharing request asks one GPU for: its milli share, or kMigItem + its MIG profile.
[[nodiscard]] int itemOf(const sharing::ShareRequest& r);

// Identical requests (CPU, memory, GPUs, milli per GPU, models, MIG profile) form one class in both LPs.
using ClassKey = std::tuple<int32_t, int64_t, int32_t, int32_t, uint32_t, int8_t>;
[[nodiscard]] ClassKey classKey(const sharing::ShareRequest& r);
[[nodiscard]] sharing::ShareRequest requestOf(const ClassKey& key);

// Whether one host of GPU model `model` with `gpus` GPUs, `cpuMilli` and `memoryMib` could hold `r` on its own.
[[nodiscard]] bool oneHostHolds(int model, int32_t gpus, int32_t cpuMilli, int64_t memoryMib, const sharing::ShareRequest& r);

}  // namespace switchyard::bench

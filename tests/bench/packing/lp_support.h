// What the packing benchmark's LP bounds share (upper_bound.h, server_bound.h): GLPK rows and columns added
// one at a time, a quiet primal simplex, and the pricing of one GPU's configuration against the duals of the
// items it could hold (milli shares by a bounded knapsack, MIG instances by a scan of the slice rules' layouts).
#pragma once

#include <glpk.h>

#include <expected>
#include <limits>
#include <map>
#include <memory>
#include <string>
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

// The configuration of milli shares with the largest dual value (items with ids below kMigItem).
[[nodiscard]] Configuration bestShareConfiguration(const std::vector<Item>& items);
// The MIG layout with the largest dual value among those that hold no more instances than are asked for.
[[nodiscard]] Configuration bestMigConfiguration(const std::vector<Item>& items);

}  // namespace switchyard::bench

#include "tests/bench/packing/lp_support.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "composer/model/mig.h"

namespace switchyard::bench {

int addColumn(glp_prob* lp, const Entries& entries, double objective, double upper) {
  const int col = glp_add_cols(lp, 1);
  if (upper < std::numeric_limits<double>::infinity()) glp_set_col_bnds(lp, col, GLP_DB, 0, upper);
  else glp_set_col_bnds(lp, col, GLP_LO, 0, 0);
  glp_set_obj_coef(lp, col, objective);
  std::vector<int> rows{0};
  std::vector<double> values{0};
  for (const auto& [row, value] : entries) {
    rows.push_back(row);
    values.push_back(value);
  }
  glp_set_mat_col(lp, col, static_cast<int>(entries.size()), rows.data(), values.data());
  return col;
}

int addRow(glp_prob* lp, double upper) {
  const int row = glp_add_rows(lp, 1);
  glp_set_row_bnds(lp, row, GLP_UP, 0, upper);
  return row;
}

std::expected<double, std::string> solve(glp_prob* lp) {
  glp_smcp params;
  glp_init_smcp(&params);
  params.msg_lev = GLP_MSG_OFF;
  if (int rc = glp_simplex(lp, &params); rc != 0) return std::unexpected("GLPK simplex failed with code " + std::to_string(rc));
  if (glp_get_status(lp) != GLP_OPT) return std::unexpected("GLPK found no optimal solution");
  return glp_get_obj_val(lp);
}

namespace {

// What one GPU can hold of each MIG profile 1g..4g at once: every multiset of instances some sequence of
// placements at allowed starts reaches (the requests' profiles; a 7g is a whole GPU).
using MigCounts = std::array<int, 4>;
const std::vector<MigCounts>& migConfigurations() {
  static const std::vector<MigCounts> all = [] {
    std::set<std::pair<uint8_t, MigCounts>> seen;
    std::vector<std::pair<uint8_t, MigCounts>> frontier{{0, {}}};
    while (!frontier.empty()) {
      auto [taken, counts] = frontier.back();
      frontier.pop_back();
      if (!seen.insert({taken, counts}).second) continue;
      for (size_t p = 0; p < 4; ++p)
        for (int start : allowedStarts(kMigProfiles[p]))
          if (fitsAt(taken, kMigProfiles[p], start)) {
            MigCounts next = counts;
            ++next[p];
            frontier.emplace_back(static_cast<uint8_t>(taken | memoryMask(kMigProfiles[p], start)), next);
          }
    }
    std::set<MigCounts> distinct;
    for (const auto& [taken, counts] : seen) distinct.insert(counts);
    return std::vector<MigCounts>(distinct.begin(), distinct.end());
  }();
  return all;
}

// The configuration of milli shares with the largest dual value: a bounded knapsack over 1000 milli, each
// item split into pieces of 1, 2, 4, ... copies (0/1 knapsack over the pieces).
Configuration bestShareConfiguration(const std::vector<Item>& items) {
  constexpr int kCap = sharing::kMilliPerGpu;
  struct Piece {
    size_t item;
    int copies;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < items.size(); ++i) {
    int left = std::min(items[i].requests, kCap / items[i].id);
    for (int k = 1; left > 0; k *= 2) {
      pieces.push_back({i, std::min(k, left)});
      left -= pieces.back().copies;
    }
  }
  std::vector<double> best(kCap + 1, 0.0);
  std::vector<std::vector<bool>> took(pieces.size(), std::vector<bool>(kCap + 1, false));
  for (size_t p = 0; p < pieces.size(); ++p) {
    const Item& item = items[pieces[p].item];
    const int size = item.id * pieces[p].copies;
    const double value = item.dual * pieces[p].copies;
    for (int c = kCap; c >= size; --c)
      if (best[static_cast<size_t>(c - size)] + value > best[static_cast<size_t>(c)] + 1e-12) {
        best[static_cast<size_t>(c)] = best[static_cast<size_t>(c - size)] + value;
        took[p][static_cast<size_t>(c)] = true;
      }
  }
  Configuration config;
  config.value = best[kCap];
  for (size_t p = pieces.size(), c = kCap; p-- > 0;)
    if (took[p][c]) {
      const Item& item = items[pieces[p].item];
      config.copies[item.id] += pieces[p].copies;
      c -= static_cast<size_t>(item.id * pieces[p].copies);
    }
  return config;
}

// The MIG layout with the largest dual value among those that hold no more instances than are asked for.
Configuration bestMigConfiguration(const std::vector<Item>& items) {
  std::array<const Item*, 4> ofProfile{};
  for (const Item& item : items) ofProfile[static_cast<size_t>(item.id - kMigItem)] = &item;
  Configuration config;
  for (const MigCounts& counts : migConfigurations()) {
    double value = 0;
    bool asked = true;
    for (size_t p = 0; p < 4 && asked; ++p) {
      if (counts[p] == 0) continue;
      asked = ofProfile[p] != nullptr && counts[p] <= ofProfile[p]->requests;
      if (asked) value += counts[p] * ofProfile[p]->dual;
    }
    if (asked && value > config.value + 1e-12) {
      config.value = value;
      config.copies.clear();
      for (size_t p = 0; p < 4; ++p)
        if (counts[p] > 0) config.copies[kMigItem + static_cast<int>(p)] = counts[p];
    }
  }
  return config;
}

}  // namespace

std::array<Configuration, 2> bestConfigurations(const std::vector<Item>& items) {
  std::vector<Item> shares, mig;
  for (const Item& item : items) (item.id >= kMigItem ? mig : shares).push_back(item);
  return {bestShareConfiguration(shares), bestMigConfiguration(mig)};
}

int itemOf(const sharing::ShareRequest& r) { return r.isMig() ? kMigItem + r.mig : r.gpuMilli; }

ClassKey classKey(const sharing::ShareRequest& r) { return {r.cpuMilli, r.memoryMib, r.gpuCount, r.gpuMilli, r.modelMask, r.mig}; }

sharing::ShareRequest requestOf(const ClassKey& key) {
  const auto [cpuMilli, memoryMib, gpuCount, gpuMilli, mask, mig] = key;
  return {.cpuMilli = cpuMilli, .memoryMib = memoryMib, .gpuCount = gpuCount, .gpuMilli = gpuMilli, .modelMask = mask, .mig = mig};
}

bool oneHostHolds(int model, int32_t gpus, int32_t cpuMilli, int64_t memoryMib, const sharing::ShareRequest& r) {
  return model >= 0 && model < 32 && ((r.modelMask >> model) & 1u) != 0 && r.gpuCount <= gpus && r.cpuMilli <= cpuMilli &&
         r.memoryMib <= memoryMib;
}

}  // namespace switchyard::bench

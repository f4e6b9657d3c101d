#include "tests/bench/packing/upper_bound.h"

#include <glpk.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "tests/bench/packing/lp_support.h"

namespace switchyard::bench {

std::expected<double, std::string> pooledUpperBound(const sharing::ShareCluster& cluster,
                                                    const std::vector<sharing::ShareRequest>& requests) {
  double cpu = 0, memory = 0;
  std::map<uint8_t, double> gpusOfModel;
  for (const auto& n : cluster.nodes()) {
    cpu += n.cpuCapacity;
    memory += static_cast<double>(n.memoryCapacity);
    if (n.gpuCount() > 0) gpusOfModel[n.model] += static_cast<double>(n.gpuCount()) * sharing::kMilliPerGpu;
  }
  Lp lp(glp_create_prob(), glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MAX);
  const int cpuRow = addRow(lp.get(), cpu), memoryRow = addRow(lp.get(), memory);
  std::map<uint32_t, int> rowOfSet;  // model set some request allows -> its row (GPU milli in the set)
  for (const auto& r : requests)
    if (r.gpuCount > 0 && !rowOfSet.contains(r.modelMask)) {
      double c = 0;
      for (const auto& [m, g] : gpusOfModel)
        if (r.modelMask & (1u << m)) c += g;
      rowOfSet[r.modelMask] = addRow(lp.get(), c);
    }
  if (rowOfSet.empty()) return 0.0;
  // Only GPU requests can add to the objective; CPU-only ones would only use up CPU, so they are left out.
  for (const auto& r : requests) {
    if (r.gpuCount == 0) continue;
    const double g = static_cast<double>(r.totalGpuMilli());
    Entries entries{{cpuRow, r.cpuMilli}, {memoryRow, static_cast<double>(r.memoryMib)}};
    for (const auto& [mask, row] : rowOfSet)
      if ((r.modelMask & mask) == r.modelMask) entries[row] = g;  // allows only models in the set
    addColumn(lp.get(), entries, g, 1.0);
  }
  return solve(lp.get());
}

namespace {

// GPUs that requests take together with CPU and memory from one budget: all GPUs of a model with the pool's
// CPU and memory (any pool), or all servers of one type (fixed servers).
struct Group {
  int model = 0;
  double gpus = 0;
  int budget = 0;  // index into the CPU and memory budgets
  // The largest request one server of the group can hold (no limit when pooled).
  int32_t maxGpus = std::numeric_limits<int32_t>::max();
  int32_t maxCpu = std::numeric_limits<int32_t>::max();
  int64_t maxMemory = std::numeric_limits<int64_t>::max();
  int gpuRow = 0;

  [[nodiscard]] bool takes(const sharing::ShareRequest& r) const { return oneHostHolds(model, maxGpus, maxCpu, maxMemory, r); }
};

}  // namespace

std::expected<PackingBound, std::string> packingUpperBound(const sharing::ShareCluster& cluster,
                                                           const std::vector<sharing::ShareRequest>& requests,
                                                           const PackingBoundOptions& options) {
  std::vector<Group> groups;
  std::vector<std::pair<double, double>> budgets;  // CPU, memory
  if (options.perServer) {
    std::map<std::tuple<int, int, int32_t, int64_t>, size_t> groupOf;  // (model, GPUs, CPU, memory) of a server
    for (const auto& n : cluster.nodes()) {
      if (n.gpuCount() == 0) continue;
      auto [it, fresh] = groupOf.try_emplace({n.model, n.gpuCount(), n.cpuCapacity, n.memoryCapacity}, groups.size());
      if (fresh) {
        groups.push_back({.model = n.model, .budget = static_cast<int>(budgets.size()), .maxGpus = n.gpuCount(),
                          .maxCpu = n.cpuCapacity, .maxMemory = n.memoryCapacity});
        budgets.emplace_back(0, 0);
      }
      Group& g = groups[it->second];
      g.gpus += n.gpuCount();
      budgets[static_cast<size_t>(g.budget)].first += n.cpuCapacity;
      budgets[static_cast<size_t>(g.budget)].second += static_cast<double>(n.memoryCapacity);
    }
  } else {
    std::map<int, size_t> groupOf;  // model
    budgets.emplace_back(0, 0);
    for (const auto& n : cluster.nodes()) {
      budgets[0].first += n.cpuCapacity;
      budgets[0].second += static_cast<double>(n.memoryCapacity);
      if (n.gpuCount() == 0) continue;
      auto [it, fresh] = groupOf.try_emplace(n.model, groups.size());
      if (fresh) groups.push_back({.model = n.model, .maxGpus = options.maxGpusPerRequest});
      groups[it->second].gpus += n.gpuCount();
    }
  }
  // Identical requests form one class; CPU-only ones would only use up CPU, so they are left out.
  std::map<ClassKey, int> classes;
  for (const auto& r : requests)
    if (r.gpuCount > 0) ++classes[classKey(r)];
  PackingBound result;
  if (classes.empty()) return result;

  Lp lp(glp_create_prob(), glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MAX);
  std::vector<std::pair<int, int>> budgetRows;  // CPU row, memory row
  for (const auto& [cpu, memory] : budgets) budgetRows.emplace_back(addRow(lp.get(), cpu), addRow(lp.get(), memory));
  for (Group& g : groups) g.gpuRow = addRow(lp.get(), g.gpus);
  // (group, item) -> its row (requests placed <= copies held) and how many requests could place it there
  struct ItemRow {
    int row = 0;
    int requests = 0;
  };
  std::map<std::pair<size_t, int>, ItemRow> itemRows;
  for (const auto& [key, count] : classes) {
    const int classRow = addRow(lp.get(), count);
    const sharing::ShareRequest r = requestOf(key);
    for (size_t g = 0; g < groups.size(); ++g) {
      const Group& group = groups[g];
      if (!group.takes(r)) continue;
      const auto [cpuRow, memoryRow] = budgetRows[static_cast<size_t>(group.budget)];
      Entries entries{{classRow, 1.0}};
      if (r.cpuMilli != 0) entries[cpuRow] = r.cpuMilli;
      if (r.memoryMib != 0) entries[memoryRow] = static_cast<double>(r.memoryMib);
      if (r.sharesGpu()) {
        auto [it, fresh] = itemRows.try_emplace({g, itemOf(r)});
        ItemRow& itemRow = it->second;
        if (fresh) {
          itemRow.row = addRow(lp.get(), 0);
          // Start with a GPU that holds one copy of the item, so the LP is feasible to grow from.
          addColumn(lp.get(), {{group.gpuRow, 1.0}, {itemRow.row, -1.0}}, 0);
          ++result.columns;
        }
        entries[itemRow.row] = 1.0;
        itemRow.requests += count;
      } else {
        entries[group.gpuRow] = r.gpuCount;
      }
      addColumn(lp.get(), entries, static_cast<double>(r.totalGpuMilli()));
    }
  }

  constexpr double kImproves = 1e-6;  // a reduced cost (milli-GPU per GPU) that counts as an improvement
  const int maxRounds = std::max(options.maxRounds, 1);
  result.milli = std::numeric_limits<double>::infinity();
  for (result.rounds = 1; result.rounds <= maxRounds; ++result.rounds) {
    const auto solved = solve(lp.get());
    if (!solved) return std::unexpected(solved.error());
    const double optimum = *solved;
    double lagrangian = optimum;
    bool added = false;
    for (size_t g = 0; g < groups.size(); ++g) {
      const int row = groups[g].gpuRow;
      std::vector<Item> items;
      for (auto it = itemRows.lower_bound({g, 0}); it != itemRows.end() && it->first.first == g; ++it)
        if (const double dual = glp_get_row_dual(lp.get(), it->second.row); dual > 0) items.push_back({it->first.second, dual, it->second.requests});
      const double gpuDual = glp_get_row_dual(lp.get(), row);
      double bestReduced = 0;
      for (const Configuration& config : bestConfigurations(items)) {
        const double reduced = config.value - gpuDual;
        bestReduced = std::max(bestReduced, reduced);
        if (reduced <= kImproves) continue;
        Entries entries{{row, 1.0}};
        for (const auto& [item, copies] : config.copies) entries[itemRows.at({g, item}).row] = -copies;
        addColumn(lp.get(), entries, 0);
        ++result.columns;
        added = true;
      }
      lagrangian += groups[g].gpus * bestReduced;
    }
    result.milli = std::min(result.milli, lagrangian);
    if (!added) {
      result.converged = true;
      result.milli = optimum;
      return result;
    }
  }
  result.rounds = maxRounds;
  return result;
}

PackingBoundOptions boundOptionsFor(const ComposableShape& shape) {
  if (shape.mirrorServers) return {.perServer = true};
  return {.maxGpusPerRequest = std::min(shape.slots, shape.deviceLimit)};
}

}  // namespace switchyard::bench

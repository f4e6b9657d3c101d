#include "tests/bench/packing/upper_bound.h"

#include <glpk.h>

#include <map>
#include <memory>

namespace switchyard::bench {

std::expected<double, std::string> allocationUpperBound(const sharing::ShareCluster& cluster,
                                                        const std::vector<sharing::ShareRequest>& requests) {
  double cpu = 0, memory = 0;
  std::map<uint8_t, double> gpusOfModel;
  for (const auto& n : cluster.nodes()) {
    cpu += n.cpuCapacity;
    memory += static_cast<double>(n.memoryCapacity);
    if (n.gpuCount() > 0) gpusOfModel[n.model] += static_cast<double>(n.gpuCount()) * sharing::kMilliPerGpu;
  }
  std::map<uint32_t, double> capacityOfSet;  // model set -> GPU milli in it
  for (const auto& r : requests)
    if (r.gpuCount > 0 && !capacityOfSet.contains(r.modelMask)) {
      double c = 0;
      for (const auto& [m, g] : gpusOfModel)
        if (r.modelMask & (1u << m)) c += g;
      capacityOfSet[r.modelMask] = c;
    }

  std::unique_ptr<glp_prob, decltype(&glp_delete_prob)> lp(glp_create_prob(), glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MAX);
  const int rows = 2 + static_cast<int>(capacityOfSet.size());
  glp_add_rows(lp.get(), rows);
  glp_set_row_bnds(lp.get(), 1, GLP_UP, 0, cpu);
  glp_set_row_bnds(lp.get(), 2, GLP_UP, 0, memory);
  std::map<uint32_t, int> rowOfSet;
  int row = 3;
  for (const auto& [mask, c] : capacityOfSet) {
    glp_set_row_bnds(lp.get(), row, GLP_UP, 0, c);
    rowOfSet[mask] = row++;
  }
  // Only GPU requests can add to the objective; CPU-only ones would only use up CPU, so they are left out.
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  int col = 0;
  for (const auto& r : requests) {
    if (r.gpuCount == 0) continue;
    ++col;
    glp_add_cols(lp.get(), 1);
    glp_set_col_bnds(lp.get(), col, GLP_DB, 0, 1);
    const double g = static_cast<double>(r.totalGpuMilli());
    glp_set_obj_coef(lp.get(), col, g);
    auto put = [&](int i, double v) {
      ia.push_back(i);
      ja.push_back(col);
      ar.push_back(v);
    };
    put(1, r.cpuMilli);
    put(2, static_cast<double>(r.memoryMib));
    for (const auto& [mask, rowIndex] : rowOfSet)
      if ((r.modelMask & mask) == r.modelMask) put(rowIndex, g);  // allows only models in the set
  }
  if (col == 0) return 0.0;
  glp_load_matrix(lp.get(), static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_smcp params;
  glp_init_smcp(&params);
  params.msg_lev = GLP_MSG_OFF;
  if (int rc = glp_simplex(lp.get(), &params); rc != 0) return std::unexpected("GLPK simplex failed with code " + std::to_string(rc));
  if (glp_get_status(lp.get()) != GLP_OPT) return std::unexpected("GLPK found no optimal solution");
  return glp_get_obj_val(lp.get());
}

}  // namespace switchyard::bench

#include "tests/bench/packing/exact_optimum.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <memory>
#include <utility>

#include "tests/bench/packing/lp_support.h"

namespace switchyard::bench {

namespace {

using sharing::kMilliPerGpu;

using Terms = std::vector<std::pair<int, double>>;

// A GLPK problem built column by column and row by row.
class Program {
 public:
  Program() : p_(glp_create_prob(), glp_delete_prob) { glp_set_obj_dir(p_.get(), GLP_MAX); }
  // An integer column in [0, most].
  int integer(double objective, int most) {
    const int c = glp_add_cols(p_.get(), 1);
    glp_set_col_kind(p_.get(), c, most == 1 ? GLP_BV : GLP_IV);
    if (most != 1) glp_set_col_bnds(p_.get(), c, GLP_DB, 0, most);
    glp_set_obj_coef(p_.get(), c, objective);
    return c;
  }
  void atMost(const Terms& t, double bound) { row(t, GLP_UP, 0, bound); }
  void atLeast(const Terms& t, double bound) { row(t, GLP_LO, bound, 0); }
  void equal(const Terms& t, double value) { row(t, GLP_FX, value, value); }
  void load() {
    glp_load_matrix(p_.get(), static_cast<int>(ia_.size()) - 1, ia_.data(), ja_.data(), ar_.data());
  }
  glp_prob* get() { return p_.get(); }

 private:
  void row(const Terms& t, int type, double lo, double hi) {
    if (t.empty()) return;
    const int r = glp_add_rows(p_.get(), 1);
    glp_set_row_bnds(p_.get(), r, type, lo, hi);
    for (const auto& [c, v] : t) {
      ia_.push_back(r);
      ja_.push_back(c);
      ar_.push_back(v);
    }
  }
  std::unique_ptr<glp_prob, decltype(&glp_delete_prob)> p_;
  std::vector<int> ia_{0}, ja_{0};
  std::vector<double> ar_{0};
};

struct SearchState {
  double bound = 0;  // best bound over the open subproblems, last seen
};

void trackBound(glp_tree* tree, void* info) {
  if (glp_ios_reason(tree) != GLP_ISELECT) return;
  auto* state = static_cast<SearchState*>(info);
  if (int best = glp_ios_best_node(tree); best != 0) state->bound = std::min(state->bound, glp_ios_node_bound(tree, best));
}

}  // namespace

std::expected<ExactResult, std::string> exactOptimum(const ComposablePool::Wiring& pool,
                                                     const std::vector<sharing::ShareRequest>& requests, double timeLimitSeconds) {
  const auto started = std::chrono::steady_clock::now();
  if (!std::getenv("PACKBENCH_GLPK_LOG")) glp_term_out(GLP_OFF);
  Program program;
  const size_t linkCount = pool.links.size();

  // Identical requests are one shape with a count, so the search does not permute them.
  std::vector<sharing::ShareRequest> shapes;
  std::vector<int> copies;
  for (const auto& r : requests) {
    if (r.gpuCount == 0) continue;
    auto it = std::find(shapes.begin(), shapes.end(), r);
    if (it == shapes.end()) {
      shapes.push_back(r);
      copies.push_back(1);
    } else {
      ++copies[static_cast<size_t>(it - shapes.begin())];
    }
  }

  // Columns per link: z (attached; 0 = bound, a constant 1), w (taken whole), y (copies of a shared shape
  // on a GPU).
  struct LinkColumns {
    std::vector<int> z, w;
    std::vector<std::pair<size_t, int>> x;  // (shape, column: copies placed on the link)
    std::vector<std::vector<int>> y;        // per x entry: per GPU (empty for whole-GPU shapes)
  };
  std::vector<LinkColumns> cols(linkCount);
  std::vector<Terms> shapeTerms(shapes.size());

  for (size_t li = 0; li < linkCount; ++li) {
    const auto [h, e] = pool.links[li];
    const auto& host = pool.hosts[h];
    const auto& enc = pool.enclosures[e];
    const bool bound = enc.boundTo >= 0;
    if (bound && static_cast<size_t>(enc.boundTo) != h) continue;  // another host's GPUs
    const int reachable = bound ? enc.gpus : std::min(enc.gpus, pool.deviceLimit);
    LinkColumns& c = cols[li];
    bool anyWhole = false;
    for (size_t s = 0; s < shapes.size(); ++s) {
      const auto& r = shapes[s];
      if (r.gpuCount > reachable || r.cpuMilli > host.cpuMilli || r.memoryMib > host.memoryMib) continue;
      if ((r.modelMask & (1u << enc.model)) == 0) continue;
      int most = copies[s];
      if (r.cpuMilli > 0) most = std::min<int>(most, host.cpuMilli / r.cpuMilli);
      if (r.memoryMib > 0) most = std::min<int>(most, static_cast<int>(host.memoryMib / r.memoryMib));
      most = std::min<int>(most, static_cast<int>(int64_t{reachable} * kMilliPerGpu / r.totalGpuMilli()));
      if (most == 0) continue;
      const int x = program.integer(static_cast<double>(r.totalGpuMilli()) * kLpGpu, most);
      c.x.emplace_back(s, x);
      shapeTerms[s].emplace_back(x, 1.0);
      anyWhole = anyWhole || !r.sharesGpu();
    }
    if (c.x.empty()) continue;
    for (int g = 0; g < enc.gpus; ++g) {
      c.z.push_back(bound ? 0 : program.integer(0, 1));
      c.w.push_back(anyWhole ? program.integer(0, 1) : 0);
    }
    for (const auto& [s, x] : c.x) {
      std::vector<int> ys;
      if (shapes[s].sharesGpu()) {
        Terms spread{{x, -1.0}};
        const int perGpu = kMilliPerGpu / shapes[s].gpuMilli;
        for (int g = 0; g < enc.gpus; ++g) {
          ys.push_back(program.integer(0, perGpu));
          spread.emplace_back(ys.back(), 1.0);
        }
        program.equal(spread, 0);  // each copy on one GPU of the link
      }
      c.y.push_back(std::move(ys));
    }
    if (anyWhole) {
      Terms count;
      for (int g = 0; g < enc.gpus; ++g) count.emplace_back(c.w[static_cast<size_t>(g)], 1.0);
      for (const auto& [s, x] : c.x)
        if (!shapes[s].sharesGpu()) count.emplace_back(x, -shapes[s].gpuCount);
      program.equal(count, 0);
    }
    for (int g = 0; g < enc.gpus; ++g) {  // shares + whole <= what is attached
      Terms t;
      for (size_t k = 0; k < c.x.size(); ++k)
        if (!c.y[k].empty()) t.emplace_back(c.y[k][static_cast<size_t>(g)], shapes[c.x[k].first].gpuMilli * kLpGpu);
      if (anyWhole) t.emplace_back(c.w[static_cast<size_t>(g)], 1.0);
      if (bound) {
        program.atMost(t, 1.0);
      } else {
        t.emplace_back(c.z[static_cast<size_t>(g)], -1.0);
        program.atMost(t, 0);
      }
    }
  }
  for (size_t s = 0; s < shapes.size(); ++s)
    if (shapeTerms[s].size() > 1) program.atMost(shapeTerms[s], copies[s]);

  // Per host: CPU, memory and the device limit.
  std::vector<Terms> cpu(pool.hosts.size()), memory(pool.hosts.size()), attached(pool.hosts.size());
  for (size_t li = 0; li < linkCount; ++li) {
    const size_t h = pool.links[li].first;
    for (const auto& [s, x] : cols[li].x) {
      cpu[h].emplace_back(x, shapes[s].cpuMilli * kLpCore);
      memory[h].emplace_back(x, static_cast<double>(shapes[s].memoryMib) * kLpGiB);
    }
    for (int z : cols[li].z)
      if (z != 0) attached[h].emplace_back(z, 1.0);
  }
  for (size_t h = 0; h < pool.hosts.size(); ++h) {
    program.atMost(cpu[h], pool.hosts[h].cpuMilli * kLpCore);
    program.atMost(memory[h], static_cast<double>(pool.hosts[h].memoryMib) * kLpGiB);
    if (static_cast<int>(attached[h].size()) > pool.deviceLimit) program.atMost(attached[h], pool.deviceLimit);
  }

  // Per enclosure: a GPU attached to one host at most; GPUs ordered by load, and attached ones first
  // (any placement can be permuted into that order, and an idle GPU detached).
  for (size_t e = 0; e < pool.enclosures.size(); ++e) {
    const int gpus = pool.enclosures[e].gpus;
    std::vector<Terms> load(static_cast<size_t>(gpus)), holders(static_cast<size_t>(gpus));
    for (size_t li = 0; li < linkCount; ++li) {
      if (pool.links[li].second != e || cols[li].x.empty()) continue;
      const LinkColumns& c = cols[li];
      for (int g = 0; g < gpus; ++g) {
        const auto gi = static_cast<size_t>(g);
        for (size_t k = 0; k < c.x.size(); ++k)
          if (!c.y[k].empty()) load[gi].emplace_back(c.y[k][gi], shapes[c.x[k].first].gpuMilli * kLpGpu);
        if (c.w[gi] != 0) load[gi].emplace_back(c.w[gi], 1.0);
        if (c.z[gi] != 0) holders[gi].emplace_back(c.z[gi], 1.0);
      }
    }
    for (int g = 0; g < gpus; ++g) {
      const auto gi = static_cast<size_t>(g);
      if (holders[gi].size() > 1) program.atMost(holders[gi], 1);
      if (g + 1 == gpus) continue;
      Terms order = load[gi], attachedFirst = holders[gi];
      for (const auto& [col, v] : load[gi + 1]) order.emplace_back(col, -v);
      for (const auto& [col, v] : holders[gi + 1]) attachedFirst.emplace_back(col, -v);
      program.atLeast(order, 0);
      program.atLeast(attachedFirst, 0);
    }
  }

  program.load();
  ExactResult result;
  result.columns = glp_get_num_cols(program.get());
  result.rows = glp_get_num_rows(program.get());
  if (result.columns == 0) {
    result.proved = true;  // nothing can be placed
    return result;
  }

  glp_smcp lp;
  glp_init_smcp(&lp);
  lp.msg_lev = GLP_MSG_OFF;
  if (int rc = glp_simplex(program.get(), &lp); rc != 0) return std::unexpected("GLPK simplex failed with code " + std::to_string(rc));
  SearchState state{glp_get_obj_val(program.get())};

  glp_iocp mip;
  glp_init_iocp(&mip);
  mip.msg_lev = std::getenv("PACKBENCH_GLPK_LOG") ? GLP_MSG_ON : GLP_MSG_OFF;
  mip.tm_lim = static_cast<int>(std::max(1.0, timeLimitSeconds * 1000));
  mip.cb_func = trackBound;
  mip.cb_info = &state;
  mip.gmi_cuts = GLP_ON;
  mip.mir_cuts = GLP_ON;
  mip.cov_cuts = GLP_ON;
  mip.clq_cuts = GLP_ON;
  mip.fp_heur = GLP_ON;
  const int rc = glp_intopt(program.get(), &mip);
  if (rc != 0 && rc != GLP_ETMLIM) return std::unexpected("GLPK branch and cut failed with code " + std::to_string(rc));
  const int status = glp_mip_status(program.get());
  if (status == GLP_OPT || status == GLP_FEAS) result.bestMilli = std::round(glp_mip_obj_val(program.get()) * kMilliPerGpu);
  result.proved = rc == 0 && status == GLP_OPT;
  // The objective is a sum of integers, so a fractional bound rounds down.
  result.boundMilli = result.proved ? result.bestMilli : std::max(result.bestMilli, std::floor(state.bound * kMilliPerGpu + 1e-6));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace switchyard::bench

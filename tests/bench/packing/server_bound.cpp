#include "tests/bench/packing/server_bound.h"

#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "tests/bench/packing/lp_support.h"

namespace switchyard::bench {

namespace {

using sharing::kMilliPerGpu;
using sharing::ShareRequest;

// The master LP counts hosts, requests and GPUs, and its objective is in GPUs; the pricing program's rows are
// in cores and GiB (kLp*, lp_support.h).
constexpr double kImproves = 1e-7;  // a reduced cost (GPUs) that counts as an improvement
constexpr int kPricingTimeLimitMs = 5000;

struct RequestClass {
  ShareRequest request;  // one of the identical requests
  int count = 0;
  int row = 0;
  [[nodiscard]] int item() const { return itemOf(request); }
};

struct HostType {
  uint8_t model = 0;
  int hosts = 0;
  int gpus = 0;  // G_t: GPUs one host of the type can hold
  int32_t cpuMilli = 0;
  int64_t memoryMib = 0;
  int row = 0, shareGpuRow = 0;
  std::vector<size_t> classes;  // the classes one of its hosts could hold
  struct ItemRow {
    int row = 0;
    int requests = 0;  // requests of the type's classes that ask for the item
  };
  std::map<int, ItemRow> items;
};

// What one host holds, found by pricing: copies per class and the GPUs its shares take.
struct ServerConfiguration {
  std::map<size_t, int> copies;  // class -> copies
  int shareGpus = 0;
  double reduced = 0;  // its reduced cost, or (when not proved) an upper bound on the best one
  bool proved = true;
};

class ServerLp {
 public:
  ServerLp(std::vector<RequestClass> classes, std::vector<HostType> types, std::map<uint8_t, double> poolGpus)
      : lp_(glp_create_prob(), glp_delete_prob), classes_(std::move(classes)), types_(std::move(types)) {
    glp_set_obj_dir(lp_.get(), GLP_MAX);
    for (auto& k : classes_) k.row = addRow(lp_.get(), k.count);
    for (const auto& [model, gpus] : poolGpus) modelRows_[model] = addRow(lp_.get(), gpus);
    for (auto& t : types_) {
      t.row = addRow(lp_.get(), t.hosts);
      t.shareGpuRow = addRow(lp_.get(), 0);
      for (size_t k : t.classes) {
        const RequestClass& c = classes_[k];
        if (!c.request.sharesGpu()) continue;
        auto [it, fresh] = t.items.try_emplace(c.item());
        if (fresh) it->second.row = addRow(lp_.get(), 0);
        it->second.requests += c.count;
      }
    }
    // Start from one request per host, and GPUs holding one share each, so the LP has something to grow from.
    for (size_t t = 0; t < types_.size(); ++t) {
      for (size_t k : types_[t].classes)
        addServerColumn(t, {.copies = {{k, 1}}, .shareGpus = classes_[k].request.sharesGpu() ? 1 : 0});
      for (const auto& [item, _] : types_[t].items) addGpuColumn(t, {.copies = {{item, 1}}});
    }
  }

  [[nodiscard]] int columns() const { return columns_; }  // configurations added, the starting ones included

  std::expected<PackingBound, std::string> run(int maxRounds) {
    PackingBound result;
    result.milli = std::numeric_limits<double>::infinity();
    for (result.rounds = 1; result.rounds <= maxRounds; ++result.rounds) {
      const auto optimum = solve(lp_.get());
      if (!optimum) return std::unexpected(optimum.error());
      double lagrangian = *optimum;
      bool added = false, proved = true;
      for (size_t t = 0; t < types_.size(); ++t) {
        const HostType& type = types_[t];
        auto server = priceServer(t);
        if (!server) return std::unexpected(server.error());
        proved = proved && server->proved;
        lagrangian += type.hosts * std::max(0.0, server->reduced);
        if (server->proved && server->reduced > kImproves) {
          addServerColumn(t, *server);
          added = true;
        }
        const auto [gpu, gpuReduced] = priceGpu(t);
        lagrangian += static_cast<double>(type.hosts) * type.gpus * std::max(0.0, gpuReduced);
        if (gpuReduced > kImproves) {
          addGpuColumn(t, gpu);
          added = true;
        }
      }
      result.milli = std::min(result.milli, lagrangian * kMilliPerGpu);
      if (!added) {
        result.converged = proved;
        if (proved) result.milli = *optimum * kMilliPerGpu;
        return result;
      }
    }
    result.rounds = maxRounds;
    return result;
  }

 private:
  double dual(int row) const { return glp_get_row_dual(lp_.get(), row); }

  void addServerColumn(size_t t, const ServerConfiguration& q) {
    const HostType& type = types_[t];
    Entries entries{{type.row, 1.0}};
    double value = 0;
    int gpus = q.shareGpus;
    for (const auto& [k, copies] : q.copies) {
      const RequestClass& c = classes_[k];
      entries[c.row] += copies;
      value += copies * static_cast<double>(c.request.totalGpuMilli()) * kLpGpu;
      if (c.request.sharesGpu()) entries[type.items.at(c.item()).row] += copies;
      else gpus += copies * c.request.gpuCount;
    }
    if (q.shareGpus > 0) entries[type.shareGpuRow] = -q.shareGpus;
    if (auto m = modelRows_.find(type.model); m != modelRows_.end() && gpus > 0) entries[m->second] = gpus;
    addColumn(lp_.get(), entries, value);
    ++columns_;
  }

  void addGpuColumn(size_t t, const Configuration& c) {
    const HostType& type = types_[t];
    Entries entries{{type.shareGpuRow, 1.0}};
    for (const auto& [item, copies] : c.copies) entries[type.items.at(item).row] = -copies;
    addColumn(lp_.get(), entries, 0);
    ++columns_;
  }

  // The GPU configuration of type t with the largest reduced cost, and that cost.
  std::pair<Configuration, double> priceGpu(size_t t) const {
    const HostType& type = types_[t];
    std::vector<Item> items;
    for (const auto& [item, row] : type.items)
      if (const double d = dual(row.row); d > 0) items.push_back({item, d, row.requests});
    const double cost = dual(type.shareGpuRow);
    std::pair<Configuration, double> best{{}, -cost};
    for (Configuration c : bestConfigurations(items))
      if (const double reduced = c.value - cost; reduced > best.second) best = {std::move(c), reduced};
    return best;
  }

  // The server configuration of type t with the largest reduced cost: a small integer program.
  std::expected<ServerConfiguration, std::string> priceServer(size_t t) const {
    const HostType& type = types_[t];
    const double gpuCost = modelRows_.contains(type.model) ? dual(modelRows_.at(type.model)) : 0.0;
    Lp mip(glp_create_prob(), glp_delete_prob);
    glp_set_obj_dir(mip.get(), GLP_MAX);
    const int cpuRow = addRow(mip.get(), type.cpuMilli * kLpCore);
    const int memoryRow = addRow(mip.get(), static_cast<double>(type.memoryMib) * kLpGiB);
    const int gpuRow = addRow(mip.get(), type.gpus);
    const int milliRow = addRow(mip.get(), 0);  // shares' milli <= 1000 per share GPU
    const int overHalfRow = addRow(mip.get(), 0);  // at most one share over half a GPU per share GPU
    const int shareGpus = addColumn(mip.get(), {{gpuRow, 1.0}, {milliRow, -1.0}, {overHalfRow, -1.0}},
                                    dual(type.shareGpuRow) - gpuCost, type.gpus);
    glp_set_col_kind(mip.get(), shareGpus, GLP_IV);
    std::vector<std::pair<size_t, int>> columns;  // class -> its column
    for (size_t k : type.classes) {
      const RequestClass& c = classes_[k];
      const ShareRequest& r = c.request;
      double profit = static_cast<double>(r.totalGpuMilli()) * kLpGpu - dual(c.row);
      Entries entries;
      if (r.cpuMilli > 0) entries[cpuRow] = r.cpuMilli * kLpCore;
      if (r.memoryMib > 0) entries[memoryRow] = static_cast<double>(r.memoryMib) * kLpGiB;
      if (r.sharesGpu()) {
        profit -= dual(type.items.at(c.item()).row);
        entries[milliRow] = r.gpuMilli * kLpGpu;
        if (2 * r.gpuMilli > kMilliPerGpu) entries[overHalfRow] = 1.0;
      } else {
        profit -= r.gpuCount * gpuCost;
        entries[gpuRow] = r.gpuCount;
      }
      if (profit <= kImproves) continue;  // never in a best configuration
      const int col = addColumn(mip.get(), entries, profit, c.count);
      glp_set_col_kind(mip.get(), col, GLP_IV);
      columns.emplace_back(k, col);
    }
    const double hostCost = dual(type.row);
    ServerConfiguration best;
    best.reduced = -hostCost;
    const auto relaxed = solve(mip.get());
    if (!relaxed) return std::unexpected("pricing: " + relaxed.error());
    if (*relaxed - hostCost <= kImproves) {  // no configuration can beat the host's cost
      best.reduced = *relaxed - hostCost;
      return best;
    }
    glp_iocp params;
    glp_init_iocp(&params);
    params.msg_lev = GLP_MSG_OFF;
    params.tm_lim = kPricingTimeLimitMs;
    const int rc = glp_intopt(mip.get(), &params);
    if (rc != 0 && rc != GLP_ETMLIM) return std::unexpected("pricing: GLPK branch and cut failed with code " + std::to_string(rc));
    const int status = glp_mip_status(mip.get());
    best.proved = rc == 0 && status == GLP_OPT;
    if (!best.proved) {  // the relaxation still bounds the best configuration
      best.reduced = *relaxed - hostCost;
      return best;
    }
    best.reduced = glp_mip_obj_val(mip.get()) - hostCost;
    best.shareGpus = static_cast<int>(std::lround(glp_mip_col_val(mip.get(), shareGpus)));
    for (const auto& [k, col] : columns)
      if (const long copies = std::lround(glp_mip_col_val(mip.get(), col)); copies > 0) best.copies[k] = static_cast<int>(copies);
    return best;
  }

  Lp lp_;
  std::vector<RequestClass> classes_;
  std::vector<HostType> types_;
  std::map<uint8_t, int> modelRows_;  // composable pools: the model's GPUs
  int columns_ = 0;
};

}  // namespace

ServerBoundOptions serverBoundOptionsFor(const ComposableShape& shape) {
  if (shape.mirrorServers) return {};
  return {.fixedServers = false, .deviceLimit = shape.deviceLimit, .maxGpusPerRequest = std::min(shape.slots, shape.deviceLimit)};
}

std::expected<PackingBound, std::string> serverUpperBound(const sharing::ShareCluster& cluster,
                                                          const std::vector<ShareRequest>& requests,
                                                          const ServerBoundOptions& options) {
  // Identical requests form one class; CPU-only ones would only use up CPU, so they are left out.
  std::map<ClassKey, size_t> classOf;
  std::vector<RequestClass> classes;
  for (const auto& r : requests) {
    if (r.gpuCount == 0 || r.gpuCount > options.maxGpusPerRequest) continue;
    auto [it, fresh] = classOf.try_emplace(classKey(r), classes.size());
    if (fresh) classes.push_back({.request = r});
    ++classes[it->second].count;
  }
  // Hosts without GPUs reach none (fixed servers have none; a composable host is cabled only to its model's
  // enclosures), so they can hold no GPU request.
  std::map<std::tuple<uint8_t, int, int32_t, int64_t>, size_t> typeOf;
  std::vector<HostType> types;
  std::map<uint8_t, double> poolGpus;
  for (const auto& n : cluster.nodes()) {
    if (n.gpuCount() == 0) continue;
    const int gpus = options.fixedServers ? n.gpuCount() : options.deviceLimit;
    if (!options.fixedServers) poolGpus[n.model] += n.gpuCount();
    auto [it, fresh] = typeOf.try_emplace({n.model, gpus, n.cpuCapacity, n.memoryCapacity}, types.size());
    if (fresh) types.push_back({.model = n.model, .gpus = gpus, .cpuMilli = n.cpuCapacity, .memoryMib = n.memoryCapacity});
    ++types[it->second].hosts;
  }
  for (HostType& t : types)
    for (size_t k = 0; k < classes.size(); ++k)
      if (oneHostHolds(t.model, t.gpus, t.cpuMilli, t.memoryMib, classes[k].request)) t.classes.push_back(k);
  if (classes.empty()) return PackingBound{.converged = true};  // nothing any host could hold
  ServerLp lp(std::move(classes), std::move(types), std::move(poolGpus));
  auto result = lp.run(std::max(options.maxRounds, 1));
  if (result) result->columns = lp.columns();
  return result;
}

}  // namespace switchyard::bench

#include "tests/bench/packing/openb_trace.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

namespace switchyard::bench {
namespace {

std::vector<std::string> splitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

class CsvFile {
 public:
  static std::expected<CsvFile, std::string> open(const std::string& path, const std::vector<std::string>& required) {
    CsvFile f;
    f.path_ = path;
    f.in_.open(path);
    if (!f.in_) return std::unexpected(fmt::format("{}: cannot open", path));
    std::string header;
    if (!std::getline(f.in_, header)) return std::unexpected(fmt::format("{}: empty file", path));
    if (!header.empty() && header.back() == '\r') header.pop_back();
    auto names = splitCsv(header);
    for (size_t i = 0; i < names.size(); ++i) f.column_[names[i]] = i;
    for (const auto& r : required)
      if (!f.column_.contains(r)) return std::unexpected(fmt::format("{}:1: missing column '{}'", path, r));
    f.line_ = 1;
    return f;
  }

  // Next data row; false at end of file.
  bool next() {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      fields_ = splitCsv(line);
      return true;
    }
    return false;
  }

  bool has(const std::string& col) const { return column_.contains(col); }

  std::expected<std::string, std::string> text(const std::string& col) const {
    size_t i = column_.at(col);
    if (i >= fields_.size()) return std::unexpected(where(fmt::format("missing field '{}'", col)));
    return fields_[i];
  }

  template <typename T>
  std::expected<T, std::string> number(const std::string& col) const {
    auto t = text(col);
    if (!t) return std::unexpected(t.error());
    T value{};
    auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), value);
    if (ec != std::errc{} || end != t->data() + t->size() || value < 0)
      return std::unexpected(where(fmt::format("'{}' is not a non-negative integer: '{}'", col, *t)));
    return value;
  }

  std::string where(const std::string& what) const { return fmt::format("{}:{}: {}", path_, line_, what); }

 private:
  std::string path_;
  std::ifstream in_;
  std::map<std::string, size_t> column_;
  std::vector<std::string> fields_;
  size_t line_ = 0;
};

}  // namespace

std::expected<sharing::ShareCluster, std::string> loadOpenbNodes(const std::string& path) {
  auto f = CsvFile::open(path, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!f) return std::unexpected(f.error());
  sharing::ModelTable models;
  std::vector<sharing::ShareNode> nodes;
  while (f->next()) {
    auto name = f->text("sn");
    auto cpu = f->number<int32_t>("cpu_milli");
    auto mem = f->number<int64_t>("memory_mib");
    auto gpus = f->number<int32_t>("gpu");
    auto model = f->text("model");
    if (!name) return std::unexpected(name.error());
    if (!model) return std::unexpected(model.error());
    if (!cpu) return std::unexpected(cpu.error());
    if (!mem) return std::unexpected(mem.error());
    if (!gpus) return std::unexpected(gpus.error());
    if (*gpus > sharing::kMaxGpusPerNode)
      return std::unexpected(f->where(fmt::format("{} GPUs on one node; at most {}", *gpus, sharing::kMaxGpusPerNode)));
    if (*gpus > 0 && model->empty()) return std::unexpected(f->where("a GPU node without a model"));
    sharing::ShareNode n;
    n.name = *name;
    n.cpuCapacity = n.cpuLeft = *cpu;
    n.memoryCapacity = n.memoryLeft = *mem;
    if (*gpus > 0) n.model = models.intern(*model);
    n.gpuLeft.assign(static_cast<size_t>(*gpus), sharing::kMilliPerGpu);
    nodes.push_back(std::move(n));
  }
  if (nodes.empty()) return std::unexpected(fmt::format("{}: no nodes", path));
  return sharing::ShareCluster(std::move(nodes), std::move(models));
}

std::expected<std::vector<TracePod>, std::string> loadOpenbPods(const std::string& path, sharing::ModelTable& models) {
  auto f = CsvFile::open(path, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!f) return std::unexpected(f.error());
  std::vector<TracePod> pods;
  while (f->next()) {
    auto name = f->text("name");
    auto cpu = f->number<int32_t>("cpu_milli");
    auto mem = f->number<int64_t>("memory_mib");
    auto count = f->number<int32_t>("num_gpu");
    auto milli = f->number<int32_t>("gpu_milli");
    auto spec = f->has("gpu_spec") ? f->text("gpu_spec") : std::expected<std::string, std::string>("");  // optional column
    if (!name) return std::unexpected(name.error());
    if (!cpu) return std::unexpected(cpu.error());
    if (!mem) return std::unexpected(mem.error());
    if (!count) return std::unexpected(count.error());
    if (!milli) return std::unexpected(milli.error());
    if (!spec) return std::unexpected(spec.error());
    sharing::ShareRequest r{.cpuMilli = *cpu, .memoryMib = *mem, .gpuCount = *count, .gpuMilli = *count > 0 ? *milli : 0};
    if (!spec->empty()) {
      r.modelMask = 0;
      std::istringstream in(*spec);
      std::string m;
      while (std::getline(in, m, '|'))
        if (!m.empty()) r.modelMask |= 1u << models.intern(m);
    }
    if (auto bad = sharing::validate(r)) return std::unexpected(f->where(*bad));
    int64_t duration = 0;
    if (f->has("creation_time") && f->has("deletion_time")) {
      auto created = f->number<int64_t>("creation_time");
      auto deleted = f->number<int64_t>("deletion_time");
      if (!created) return std::unexpected(created.error());
      if (!deleted) return std::unexpected(deleted.error());
      if (*deleted < *created) return std::unexpected(f->where("deletion_time is before creation_time"));
      duration = *deleted - *created;
    }
    pods.push_back({*name, r, duration});
  }
  if (pods.empty()) return std::unexpected(fmt::format("{}: no pods", path));
  return pods;
}

}  // namespace switchyard::bench

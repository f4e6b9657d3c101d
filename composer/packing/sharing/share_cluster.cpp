#include "composer/packing/sharing/share_cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace switchyard::sharing {

uint8_t ModelTable::intern(std::string_view name) {
  if (auto id = find(name)) return *id;
  if (names_.size() >= 32) throw std::length_error("more than 32 GPU models");
  names_.emplace_back(name);
  return static_cast<uint8_t>(names_.size() - 1);
}

std::optional<uint8_t> ModelTable::find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<uint8_t>(i);
  return std::nullopt;
}

std::optional<std::string> validate(const ShareRequest& r) {
  if (r.cpuMilli < 0 || r.memoryMib < 0) return "CPU and memory must not be negative";
  if (r.gpuCount < 0 || r.gpuCount > kMaxGpusPerNode)
    return fmt::format("gpu count {} is outside 0..{}", r.gpuCount, kMaxGpusPerNode);
  if (r.gpuCount == 0 && r.gpuMilli != 0) return "milli-GPU given without a GPU count";
  if (r.gpuCount > 0 && (r.gpuMilli <= 0 || r.gpuMilli > kMilliPerGpu))
    return fmt::format("milli-GPU {} is outside 1..{}", r.gpuMilli, kMilliPerGpu);
  if (r.gpuCount > 1 && r.gpuMilli != kMilliPerGpu) return "a share of a GPU must ask for exactly one GPU";
  if (r.modelMask == 0) return "no GPU model allowed";
  if (r.isMig()) {
    if (r.mig < 0 || r.mig >= kMigProfilesShared) return fmt::format("MIG profile {} is outside 1g..4g", r.mig);
    if (r.gpuCount != 1 || r.gpuMilli != migMilli(r.mig))
      return fmt::format("a MIG {} instance is one GPU with {} milli-GPU", toString(kMigProfiles[static_cast<size_t>(r.mig)]), migMilli(r.mig));
  }
  return std::nullopt;
}

int32_t migMilli(int profile) { return computeSlices(kMigProfiles.at(static_cast<size_t>(profile))) * kMilliPerGpu / 7; }

ShareRequest migRequest(const ShareRequest& like, int profile) {
  ShareRequest r = like;
  r.gpuCount = 1;
  r.gpuMilli = migMilli(profile);
  r.mig = static_cast<int8_t>(profile);
  return r;
}

int64_t ShareNode::gpuMilliLeft() const {
  int64_t total = 0;
  for (int32_t g : gpuLeft) total += g;
  return total;
}

int ShareNode::fullyFreeGpus() const {
  int free = 0;
  for (int32_t g : gpuLeft) free += g == kMilliPerGpu ? 1 : 0;
  return free;
}

bool ShareNode::serves(uint32_t modelMask) const {
  if (modelMask == kAnyModel) return true;
  return !gpuLeft.empty() && (modelMask & (1u << model)) != 0;
}

bool fits(const ShareNode& n, const ShareRequest& r) {
  if (n.cpuLeft < r.cpuMilli || n.memoryLeft < r.memoryMib) return false;
  if (r.gpuCount == 0) return true;
  if (n.gpuLeft.empty() || !n.serves(r.modelMask)) return false;
  int enough = 0;
  for (int g = 0; g < n.gpuCount() && enough < r.gpuCount; ++g) enough += gpuTakes(n, g, r) ? 1 : 0;
  return enough >= r.gpuCount;
}

GpuPick pickExclusiveGpus(const ShareNode& n, const ShareRequest& r) {
  GpuPick pick;
  for (int i = 0; i < n.gpuCount() && pick.count < r.gpuCount; ++i)
    if (n.gpuLeft[static_cast<size_t>(i)] == kMilliPerGpu) pick.add(i);
  return pick;
}

GpuPick pickBestFitGpu(const ShareNode& n, const ShareRequest& r) {
  if (!r.sharesGpu()) return pickExclusiveGpus(n, r);
  int best = -1;
  for (int i = 0; i < n.gpuCount(); ++i) {
    int32_t left = n.gpuLeft[static_cast<size_t>(i)];
    if (gpuTakes(n, i, r) && (best < 0 || left < n.gpuLeft[static_cast<size_t>(best)])) best = i;
  }
  GpuPick pick;
  if (best >= 0) pick.add(best);
  return pick;
}

bool valid(const ShareNode& n, const ShareRequest& r, const GpuPick& pick) {
  if (!fits(n, r) || pick.count != r.gpuCount) return false;
  for (int a = 0; a < pick.count; ++a) {
    int i = pick.index[static_cast<size_t>(a)];
    if (i < 0 || i >= n.gpuCount() || !gpuTakes(n, i, r)) return false;
    for (int b = 0; b < a; ++b)
      if (pick.index[static_cast<size_t>(b)] == i) return false;
  }
  if (pick.migStart >= 0 && (!r.isMig() || !fitsAt(n.migTakenOn(pick.index[0]), r.migProfile(), pick.migStart))) return false;
  return true;
}

ShareCluster::ShareCluster(std::vector<ShareNode> nodes, ModelTable models)
    : nodes_(std::move(nodes)), models_(std::move(models)) {
  for (const ShareNode& n : nodes_) {
    totalGpuMilli_ += int64_t{n.gpuCount()} * kMilliPerGpu;
    allocatedGpuMilli_ += int64_t{n.gpuCount()} * kMilliPerGpu - n.gpuMilliLeft();
  }
}

namespace {
size_t affinitySlot(const ShareRequest& r) { return r.sharesGpu() ? 0 : static_cast<size_t>(r.gpuCount); }
}  // namespace

SharePlacement ShareCluster::apply(const SharePlacement& p, const ShareRequest& r) {
  ShareNode& n = nodes_.at(p.node);
  if (!valid(n, r, p.gpus))
    throw std::logic_error(fmt::format("invalid placement of a {}x{}m request on node {}", r.gpuCount, r.gpuMilli, n.name));
  SharePlacement applied = p;
  if (r.isMig()) {
    const int gpu = p.gpus.index[0];
    if (applied.gpus.migStart < 0) applied.gpus.migStart = static_cast<int8_t>(bestStart(n.migTakenOn(gpu), r.migProfile()).value());
    n.migTaken.resize(n.gpuLeft.size(), 0);
    n.migTaken[static_cast<size_t>(gpu)] |= memoryMask(r.migProfile(), applied.gpus.migStart);
  }
  n.cpuLeft -= r.cpuMilli;
  n.memoryLeft -= r.memoryMib;
  for (int a = 0; a < p.gpus.count; ++a) n.gpuLeft[static_cast<size_t>(p.gpus.index[static_cast<size_t>(a)])] -= r.gpuMilli;
  if (r.gpuCount > 0) ++n.affinity[affinitySlot(r)];
  allocatedGpuMilli_ += r.totalGpuMilli();
  ++n.version;
  logChange(p.node);
  return applied;
}

void ShareCluster::release(const SharePlacement& p, const ShareRequest& r) {
  ShareNode& n = nodes_.at(p.node);
  if (r.isMig()) {
    const int gpu = p.gpus.index[0];
    if (p.gpus.migStart < 0) throw std::logic_error("released a MIG instance without its start (release what apply returned)");
    const uint8_t mask = memoryMask(r.migProfile(), p.gpus.migStart);
    if ((n.migTakenOn(gpu) & mask) != mask) throw std::logic_error("released a MIG instance the GPU does not hold");
    n.migTaken[static_cast<size_t>(gpu)] &= static_cast<uint8_t>(~mask);
  }
  n.cpuLeft += r.cpuMilli;
  n.memoryLeft += r.memoryMib;
  for (int a = 0; a < p.gpus.count; ++a) {
    int32_t& g = n.gpuLeft.at(static_cast<size_t>(p.gpus.index[static_cast<size_t>(a)]));
    g += r.gpuMilli;
    if (g > kMilliPerGpu) throw std::logic_error("released more milli-GPU than the GPU has");
  }
  if (r.gpuCount > 0) --n.affinity[affinitySlot(r)];
  if (n.cpuLeft > n.cpuCapacity || n.memoryLeft > n.memoryCapacity)
    throw std::logic_error("released more CPU or memory than the node has");
  allocatedGpuMilli_ -= r.totalGpuMilli();
  ++n.version;
  logChange(p.node);
}

void ShareCluster::replaceNode(size_t i, ShareNode node) {
  ShareNode& n = nodes_.at(i);
  node.version = n.version + 1;
  n = std::move(node);
  logChange(i);
}

void ShareCluster::logChange(size_t node) {
  if (changeLog_.empty()) changeLog_.resize(kChangeLogSize);
  changeLog_[changeCount_ % kChangeLogSize] = static_cast<uint32_t>(node);
  ++changeCount_;
}

}  // namespace switchyard::sharing

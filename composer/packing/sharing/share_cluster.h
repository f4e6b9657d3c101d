// A cluster of fixed servers whose GPUs can be shared: each GPU has 1000 milli-GPU, and a request asks for
// CPU, memory and either whole GPUs or a share of one GPU. This is the resource model of the Alibaba
// "openb" GPU trace and of the FGD paper (Weng et al., USENIX ATC '23), and of a host whose attached GPUs
// serve several fractional requests. Pure; no I/O.
//
// A share is either continuous (milli-GPU, time-sliced, as in the trace) or a MIG instance (1g..4g) with the
// A100/H100 placement rules of composer/model/mig.h. A MIG instance takes its compute share in milli-GPU
// (1g = 142, 2g = 285, 3g = 428, 4g = 571: slices x 1000 / 7, rounded down, so seven 1g fit) and a run of
// memory slices at an allowed start. A GPU carved into MIG instances serves only MIG requests, and a GPU
// partly used by milli shares cannot be carved: both modes never mix on one GPU.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/mig.h"

namespace switchyard::sharing {

inline constexpr int32_t kMilliPerGpu = 1000;
// 8 on the trace's servers; up to 32 on a composable host whose GPUs sit under one switch.
inline constexpr int kMaxGpusPerNode = 32;
inline constexpr uint32_t kAnyModel = 0xffffffffu;

// GPU model names interned to small ids, so an allowed-model set is a bitmask.
class ModelTable {
 public:
  // The id of `name` (added if new); at most 32 distinct models.
  uint8_t intern(std::string_view name);
  [[nodiscard]] std::optional<uint8_t> find(std::string_view name) const;
  [[nodiscard]] const std::string& name(uint8_t id) const { return names_.at(id); }
  [[nodiscard]] size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
};

inline constexpr int kNotMig = -1;
inline constexpr int kMigProfilesShared = 4;  // 1g, 2g, 3g, 4g (a 7g instance is a whole GPU)

struct ShareRequest {
  int32_t cpuMilli = 0;
  int64_t memoryMib = 0;
  int32_t gpuCount = 0;   // 0 = CPU only
  int32_t gpuMilli = 0;   // per GPU; < 1000 only when gpuCount == 1 (a shared GPU)
  uint32_t modelMask = kAnyModel;
  int8_t mig = kNotMig;   // a MIG instance: the profile (MigProfile 1g..4g as int); then gpuMilli == migMilli(mig)

  [[nodiscard]] int64_t totalGpuMilli() const { return int64_t{gpuCount} * gpuMilli; }
  [[nodiscard]] bool sharesGpu() const { return gpuCount == 1 && gpuMilli < kMilliPerGpu; }
  [[nodiscard]] bool wholeGpus() const { return gpuCount > 0 && gpuMilli == kMilliPerGpu; }
  [[nodiscard]] bool isMig() const { return mig != kNotMig; }
  [[nodiscard]] MigProfile migProfile() const { return kMigProfiles.at(static_cast<size_t>(mig)); }  // only if isMig()
  friend bool operator==(const ShareRequest&, const ShareRequest&) = default;
};

// The slice geometry itself (masks, allowed starts, the best start) is composer/model/mig.h's, shared with
// the product's MIG placement.
[[nodiscard]] int32_t migMilli(int profile);  // the compute share of profile 0..3 (1g..4g)
// A MIG request for `profile` with the CPU and memory of `like`.
[[nodiscard]] ShareRequest migRequest(const ShareRequest& like, int profile);

// Checks the invariants above; an error message or nothing.
[[nodiscard]] std::optional<std::string> validate(const ShareRequest& r);

struct ShareNode {
  std::string name;
  int32_t cpuCapacity = 0;
  int32_t cpuLeft = 0;
  int64_t memoryCapacity = 0;
  int64_t memoryLeft = 0;
  uint8_t model = 0;                  // meaningful only when the node has GPUs
  std::vector<int32_t> gpuLeft;       // milli-GPU left on each GPU, index = device index
  // Memory slices taken by MIG instances on each GPU (0: not carved). Empty when no GPU of the node is.
  std::vector<uint8_t> migTaken;
  // How many GPU requests of each kind run here: [0] shared, [k] k whole GPUs (GpuClustering's affinity).
  std::array<int32_t, kMaxGpusPerNode + 1> affinity{};
  uint32_t version = 0;               // bumped on every change, so indexes can tell what is stale

  [[nodiscard]] int gpuCount() const { return static_cast<int>(gpuLeft.size()); }
  [[nodiscard]] int64_t gpuMilliLeft() const;
  [[nodiscard]] int fullyFreeGpus() const;
  [[nodiscard]] bool serves(uint32_t modelMask) const;  // model constraint only
  [[nodiscard]] uint8_t migTakenOn(int gpu) const {
    return static_cast<size_t>(gpu) < migTaken.size() ? migTaken[static_cast<size_t>(gpu)] : uint8_t{0};
  }
};

// Whether GPU `gpu` of the node can take (its part of) the request: enough milli-GPU left, and the MIG rule
// (a MIG instance needs a free GPU or a carved one with room at an allowed start; a milli share needs an
// uncarved GPU). Inline: the reference fragmentation calls it per GPU and per shape.
[[nodiscard]] inline bool gpuTakes(const ShareNode& n, int gpu, const ShareRequest& r) {
  const int32_t left = n.gpuLeft[static_cast<size_t>(gpu)];
  if (left < r.gpuMilli) return false;
  const uint8_t taken = n.migTakenOn(gpu);
  if (!r.isMig()) return taken == 0;
  return taken != 0 ? fitsAnywhere(taken, r.migProfile()) : left == kMilliPerGpu;
}

// Which GPUs of a node a request takes (device indexes, one per requested GPU).
struct GpuPick {
  std::array<int8_t, kMaxGpusPerNode> index{};
  int8_t count = 0;
  int8_t migStart = -1;  // a MIG instance: its first memory slice (-1: the cluster chooses, bestStart)
  void add(int i) { index[static_cast<size_t>(count++)] = static_cast<int8_t>(i); }
};

struct SharePlacement {
  size_t node = 0;
  GpuPick gpus;
};

// Every hard constraint: CPU, memory, model, and enough GPUs with enough milli-GPU left.
[[nodiscard]] bool fits(const ShareNode& n, const ShareRequest& r);
// Whole GPUs: the lowest-numbered fully free GPUs. Shared: the fitting GPU with the least left (best fit).
[[nodiscard]] GpuPick pickExclusiveGpus(const ShareNode& n, const ShareRequest& r);
[[nodiscard]] GpuPick pickBestFitGpu(const ShareNode& n, const ShareRequest& r);
// A placement that `fits` and takes exactly the GPUs it names, each with enough left.
[[nodiscard]] bool valid(const ShareNode& n, const ShareRequest& r, const GpuPick& pick);

class ShareCluster {
 public:
  ShareCluster() = default;
  ShareCluster(std::vector<ShareNode> nodes, ModelTable models);

  [[nodiscard]] const std::vector<ShareNode>& nodes() const { return nodes_; }
  [[nodiscard]] const ShareNode& node(size_t i) const { return nodes_.at(i); }
  [[nodiscard]] const ModelTable& models() const { return models_; }
  [[nodiscard]] size_t size() const { return nodes_.size(); }
  [[nodiscard]] int64_t totalGpuMilli() const { return totalGpuMilli_; }
  [[nodiscard]] int64_t allocatedGpuMilli() const { return allocatedGpuMilli_; }
  [[nodiscard]] int totalGpus() const { return static_cast<int>(totalGpuMilli_ / kMilliPerGpu); }

  // Takes the resources; throws std::logic_error if the placement is not valid (a policy bug). Returns
  // the placement as applied: for a MIG instance with the start it was carved at, which release needs.
  SharePlacement apply(const SharePlacement& p, const ShareRequest& r);
  // Gives back what apply returned (the exact inverse of apply).
  void release(const SharePlacement& p, const ShareRequest& r);
  // Replaces a node whose resources changed outside apply/release (a composable host's view when GPUs
  // are attached elsewhere); bumps its version. The allocation total is the caller's to keep.
  void replaceNode(size_t i, ShareNode node);

  // The change log, for indexes: apply, release and replaceNode each append the node they changed. An index
  // keeps changeCount() from its last look and then visits only the nodes changed since, instead of
  // reading every node's version (a cache miss per node on a large cluster).
  [[nodiscard]] uint64_t changeCount() const { return changeCount_; }
  // Calls f(node index) for every change after the first `since`, oldest first (a node changed twice comes
  // twice), and returns true; or returns false without calling f when the log no longer holds them all
  // (it keeps the last kChangeLogSize) or `since` is ahead of this cluster. Then compare every version.
  template <class F>
  bool forEachChangeSince(uint64_t since, F&& f) const {
    if (since > changeCount_ || changeCount_ - since > kChangeLogSize) return false;
    for (uint64_t k = since; k < changeCount_; ++k) f(static_cast<size_t>(changeLog_[k % kChangeLogSize]));
    return true;
  }
  static constexpr size_t kChangeLogSize = 4096;

 private:
  void logChange(size_t node);

  std::vector<ShareNode> nodes_;
  ModelTable models_;
  int64_t totalGpuMilli_ = 0;
  int64_t allocatedGpuMilli_ = 0;
  uint64_t changeCount_ = 0;
  std::vector<uint32_t> changeLog_;  // a ring of kChangeLogSize, allocated on the first change
};

}  // namespace switchyard::sharing

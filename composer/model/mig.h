// NVIDIA MIG geometry of A100/H100-class GPUs: 7 compute slices and 8 memory slices. A GPU instance of
// profile Ng occupies a fixed run of memory slices starting only at the offsets NVIDIA allows:
//
//   profile  compute  memory slices  allowed starts
//   1g       1        1              0 1 2 3 4 5 6
//   2g       2        2              0 2 4
//   3g       3        4              0 4
//   4g       4        4              0
//   7g       7        8              0
//
// (memory sizes per slice differ by model — 5 GB on A100-40GB, 10 GB on A100/H100-80GB — the geometry
// does not). MigLayout tracks one GPU's instances and chooses starts that keep the most future
// placements possible. Pure; no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace switchyard {

enum class MigProfile { k1g, k2g, k3g, k4g, k7g };
inline constexpr std::array<MigProfile, 5> kMigProfiles{MigProfile::k1g, MigProfile::k2g, MigProfile::k3g, MigProfile::k4g,
                                                        MigProfile::k7g};

[[nodiscard]] int computeSlices(MigProfile p);
[[nodiscard]] int memorySlices(MigProfile p);
[[nodiscard]] const std::vector<int>& allowedStarts(MigProfile p);
[[nodiscard]] std::string_view toString(MigProfile p);
[[nodiscard]] std::optional<MigProfile> parseMigProfile(std::string_view s);

struct MigInstance {
  MigProfile profile;
  int start;  // first memory slice
};

// Relative demand for each profile, used to judge which start keeps the GPU most useful.
using MigDemand = std::array<double, kMigProfiles.size()>;
inline constexpr MigDemand kUniformMigDemand{1, 1, 1, 1, 1};

// The rules on a bare memory-slice mask (bit i: slice i is taken), for callers that keep masks rather than
// instance lists (the sharing core keeps one per GPU). Memory decides: every profile takes at least as many
// memory as compute slices, and slice 7 only serves 3g@4 (3 on 4) or 7g, so no layout that fits in memory
// needs more than 7 compute slices (all 153 reachable layouts checked).
[[nodiscard]] std::uint8_t memoryMask(MigProfile p, int start);
// An allowed start whose slices are free.
[[nodiscard]] bool fitsAt(std::uint8_t taken, MigProfile p, int start);
[[nodiscard]] bool fitsAnywhere(std::uint8_t taken, MigProfile p);
// How many more instances of p fit if only p were placed from now on.
[[nodiscard]] int capacityFor(std::uint8_t taken, MigProfile p);
// Sum over profiles of demand[p] * capacityFor(p): how useful the free part of the GPU still is.
[[nodiscard]] double usefulness(std::uint8_t taken, const MigDemand& demand = kUniformMigDemand);
// The start that leaves the most weighted future placements (ties: the lowest), or nothing.
[[nodiscard]] std::optional<int> bestStart(std::uint8_t taken, MigProfile p, const MigDemand& demand = kUniformMigDemand);

class MigLayout {
 public:
  [[nodiscard]] bool canPlace(MigProfile p, int start) const;
  [[nodiscard]] bool canPlace(MigProfile p) const;
  // Places at the given start; false (and no change) if the rules forbid it.
  bool place(MigProfile p, int start);
  // Places at the start that leaves the most weighted future placements; the chosen start, if any.
  std::optional<int> placeBest(MigProfile p, const MigDemand& demand = kUniformMigDemand);
  // Removes the instance starting at `start`; false if there is none.
  bool remove(int start);

  [[nodiscard]] const std::vector<MigInstance>& instances() const { return instances_; }
  [[nodiscard]] int freeComputeSlices() const { return 7 - computeUsed_; }
  [[nodiscard]] bool empty() const { return instances_.empty(); }
  [[nodiscard]] int capacityFor(MigProfile p) const { return switchyard::capacityFor(memoryUsed_, p); }
  [[nodiscard]] double usefulness(const MigDemand& demand) const { return switchyard::usefulness(memoryUsed_, demand); }

 private:
  std::uint8_t memoryUsed_ = 0;  // bit i: memory slice i is taken
  int computeUsed_ = 0;
  std::vector<MigInstance> instances_;
};

}  // namespace switchyard

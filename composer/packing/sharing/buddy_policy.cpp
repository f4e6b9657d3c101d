// A HiveD-style buddy allocator (Zhao et al., OSDI '20), as a baseline. Each node's GPUs form a buddy
// hierarchy of aligned cells of 1, 2, 4, 8 (up to 32) GPUs. A request for k whole GPUs takes a fully free
// aligned cell of the next power of two >= k, choosing, over all nodes, the cell whose largest free
// enclosing cell is smallest (buddy best fit: split the cell that is already split, keep big cells whole);
// ties go to the earliest node. A share of one GPU goes to the partly used GPU with the least left that
// fits, else to a free GPU chosen like a 1-GPU cell. CPU-only requests go to the first node that fits.
// HiveD's virtual clusters and priorities are out of scope: one tenant, one cell hierarchy per node.
#include <bit>
#include <limits>

#include "composer/packing/sharing/share_policy.h"

namespace switchyard::sharing {
namespace {

bool allFree(const ShareNode& n, int start, int size) {
  if (start + size > n.gpuCount()) return false;
  for (int g = start; g < start + size; ++g)
    if (n.gpuLeft[static_cast<size_t>(g)] != kMilliPerGpu) return false;
  return true;
}

// The size of the largest fully free aligned cell that contains the free cell [start, start + size).
int largestFreeCell(const ShareNode& n, int start, int size) {
  int cell = size;
  for (int bigger = size * 2; bigger <= kMaxGpusPerNode; bigger *= 2) {
    const int at = start / bigger * bigger;
    if (!allFree(n, at, bigger)) break;
    cell = bigger;
  }
  return cell;
}

class BuddyPolicy final : public SharePolicy {
 public:
  std::string_view name() const override { return "hived-buddy"; }

  std::optional<SharePlacement> choose(const ShareCluster& c, const ShareRequest& r) override {
    constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
    int64_t bestScore = kNone;
    SharePlacement best;
    for (size_t i = 0; i < c.size(); ++i) {
      const ShareNode& n = c.node(i);
      if (!fits(n, r)) continue;
      if (r.gpuCount == 0) return SharePlacement{i, {}};
      int64_t score = kNone;
      GpuPick pick;
      if (r.sharesGpu()) {
        // A partly used GPU first (score = milli left, < 1000), else the free GPU in the smallest free cell.
        for (int g = 0; g < n.gpuCount(); ++g) {
          const int32_t left = n.gpuLeft[static_cast<size_t>(g)];
          if (!gpuTakes(n, g, r)) continue;
          const int64_t s = left < kMilliPerGpu ? left : kMilliPerGpu + largestFreeCell(n, g, 1);
          if (s < score) {
            score = s;
            pick = {};
            pick.add(g);
          }
        }
      } else {
        const int cell = static_cast<int>(std::bit_ceil(static_cast<unsigned>(r.gpuCount)));
        for (int start = 0; start + cell <= n.gpuCount(); start += cell) {
          if (!allFree(n, start, cell)) continue;
          const int64_t s = largestFreeCell(n, start, cell);
          if (s < score) {
            score = s;
            pick = {};
            for (int g = start; g < start + r.gpuCount; ++g) pick.add(g);
          }
        }
      }
      if (score < bestScore) {
        bestScore = score;
        best = {i, pick};
      }
    }
    if (bestScore == kNone) return std::nullopt;
    return best;
  }
};

}  // namespace

std::unique_ptr<SharePolicy> makeBuddyPolicy() { return std::make_unique<BuddyPolicy>(); }

}  // namespace switchyard::sharing

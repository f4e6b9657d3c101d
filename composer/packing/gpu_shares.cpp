#include "composer/packing/gpu_shares.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "composer/packing/sharing/fragmentation.h"

namespace switchyard {

namespace {

constexpr double kDeltaResolution = 100;  // milli-GPU: as the benchmark's `switchyard` share policy

sharing::ShareRequest shareShape(int milli) {
  sharing::ShareRequest r;
  r.gpuCount = 1;
  r.gpuMilli = milli;
  return r;
}

// One node holding the system's share GPUs; CPU and memory play no part on a composable host.
sharing::ShareNode nodeOf(const std::vector<std::pair<DeviceId, int>>& room) {
  sharing::ShareNode n;
  n.cpuCapacity = n.cpuLeft = 1'000'000;
  n.memoryCapacity = n.memoryLeft = 1'000'000;
  for (const auto& [device, left] : room) n.gpuLeft.push_back(left);
  return n;
}

}  // namespace

Result<void> validateShareRequest(const PlacementRequest& r) {
  if (r.gpuShareMilli <= 0 || r.gpuShareMilli >= kMilliPerGpu)
    return fail(Code::kInvalidArgument,
                fmt::format("a GPU share is 1-999 thousandths of a GPU (0.001-0.999 as a fraction); {} is not", r.gpuShareMilli));
  if (r.gpuCount > 0 || !r.devices.empty() || !r.gpuInstances.empty())
    return fail(Code::kInvalidArgument, "ask for one of: a GPU share, whole GPUs, named devices or MIG instances");
  return {};
}

PlacementRequest freshGpuForShare(const PlacementRequest& request) {
  PlacementRequest fresh = request;
  fresh.gpuShareMilli = 0;
  fresh.gpuCount = 1;
  fresh.peerToPeer = PeerToPeer::kNone;
  return fresh;
}

void ShareDemand::observe(int milli) { learner_.observe(shareShape(milli)); }

std::vector<std::pair<DeviceId, int>> shareRoom(const std::vector<GpuShare>& shares) {
  std::vector<std::pair<DeviceId, int>> room;
  for (const auto& s : shares) {
    auto it = std::find_if(room.begin(), room.end(), [&](const auto& r) { return r.first == s.deviceId; });
    if (it == room.end()) it = room.insert(room.end(), {s.deviceId, kMilliPerGpu});
    it->second -= s.milli;
  }
  return room;
}

int nextShareId(const std::vector<GpuShare>& bound) {
  int id = 0;
  for (const auto& s : bound) id = std::max(id, s.id);
  return id + 1;
}

std::string describe(const GpuShare& share) {
  return fmt::format("#{} {:g}% of {}", share.id, share.milli / 10.0, share.deviceId);
}

SharePlan planGpuShare(const std::vector<GpuShare>& bound, int milli, const sharing::ShapeMix& mix) {
  const auto room = shareRoom(bound);
  const sharing::ShareNode before = nodeOf(room);
  const double fragmentationBefore = mix.empty() ? 0 : sharing::nodeFragmentation(before, mix);
  std::optional<std::size_t> best;
  double bestDelta = 0;
  for (std::size_t i = 0; i < room.size(); ++i) {
    if (room[i].second < milli) continue;
    double delta = 0;
    if (!mix.empty()) {
      sharing::ShareNode after = before;
      after.gpuLeft[i] -= milli;
      delta = sharing::nodeFragmentation(after, mix) - fragmentationBefore;
    }
    const bool better = !best || delta < bestDelta - kDeltaResolution ||
                        (std::abs(delta - bestDelta) <= kDeltaResolution && room[i].second < room[*best].second);
    if (better) {
      best = i;
      bestDelta = delta;
    }
  }
  if (!best) {
    return {std::nullopt, room.empty() ? fmt::format("a fresh GPU for a {:g}% share", milli / 10.0)
                                       : fmt::format("none of the system's {} share GPU(s) has {:g}% left: a fresh GPU", room.size(),
                                                     milli / 10.0)};
  }
  const auto& [device, left] = room[*best];
  return {device, mix.empty() ? fmt::format("{} (best fit: {:g}% left, {:g}% after)", device, left / 10.0, (left - milli) / 10.0)
                              : fmt::format("{} ({:g}% left, {:g}% after; expected fragmentation {:+.0f} milli-GPU over the "
                                            "share sizes asked for lately)",
                                            device, left / 10.0, (left - milli) / 10.0, bestDelta)};
}

}  // namespace switchyard

#include "composer/packing/gpu_instances.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace switchyard {

MigLayout layoutOf(const std::vector<GpuInstance>& instances, const DeviceId& device) {
  MigLayout layout;
  for (const auto& i : instances)
    if (i.deviceId == device) layout.place(i.profile, i.start);
  return layout;
}

InstancePlan planGpuInstances(const std::vector<GpuInstance>& bound, const std::vector<MigProfile>& request) {
  struct Gpu {
    std::optional<DeviceId> device;  // empty: a fresh GPU
    MigLayout layout;
  };
  std::vector<Gpu> gpus;
  for (const auto& i : bound)
    if (std::none_of(gpus.begin(), gpus.end(), [&](const Gpu& g) { return g.device == i.deviceId; }))
      gpus.push_back({i.deviceId, layoutOf(bound, i.deviceId)});

  std::vector<MigProfile> order = request;
  std::stable_sort(order.begin(), order.end(), [](MigProfile a, MigProfile b) { return computeSlices(a) > computeSlices(b); });

  const std::size_t boundGpus = gpus.size();  // fresh GPUs are appended after these
  InstancePlan plan;
  for (MigProfile p : order) {
    std::optional<std::size_t> best;
    for (std::size_t g = 0; g < gpus.size(); ++g)
      if (gpus[g].layout.canPlace(p) && (!best || gpus[g].layout.freeComputeSlices() < gpus[*best].layout.freeComputeSlices()))
        best = g;
    if (!best) {
      best = gpus.size();
      gpus.push_back({std::nullopt, MigLayout{}});
      plan.onFresh.emplace_back();
    }
    Gpu& gpu = gpus[*best];
    const int start = *gpu.layout.placeBest(p);  // canPlace held, or the GPU is empty
    if (gpu.device) {
      plan.onBound.push_back({*gpu.device, p, start});
    } else {
      plan.onFresh[*best - boundGpus].push_back({p, start});
    }
  }
  return plan;
}

std::string describe(const GpuInstance& i) { return fmt::format("{} {}@{}", i.deviceId, toString(i.profile), i.start); }

std::string describe(const std::vector<MigProfile>& profiles) {
  std::string out;
  for (MigProfile p : profiles) out += fmt::format("{}{}", out.empty() ? "" : ",", toString(p));
  return out;
}

}  // namespace switchyard

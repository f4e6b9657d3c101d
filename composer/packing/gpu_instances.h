// Fractional GPUs on a composable host: which MIG instances go on which GPU. A device is bound whole to
// one host, so a system's partly used GPUs can only serve that system. The rule:
//  - fill before attach: an instance goes on one of the system's partly used GPUs whenever one can take
//    it, because a fresh GPU costs a hot-plug on the host and takes a whole device out of the pool;
//  - best fit among those: the GPU with the fewest free compute slices that still fits it (ties: the
//    earlier GPU), so roomy GPUs stay roomy for the large profiles;
//  - the start slice within the GPU is MigLayout::placeBest's (keeps the most future placements);
//  - only when nothing fits, a fresh GPU is opened; larger profiles are packed first (first fit
//    decreasing) so a request needs as few fresh GPUs as possible.
// Pure; no I/O.
#pragma once

#include <string>
#include <vector>

#include "composer/model/composition.h"

namespace switchyard {

struct InstancePlan {
  std::vector<GpuInstance> onBound;               // on GPUs the system already has
  std::vector<std::vector<MigInstance>> onFresh;  // one entry per GPU to attach, in attach order
};

// bound: the instances the system already has (their devices are its partly used GPUs).
[[nodiscard]] InstancePlan planGpuInstances(const std::vector<GpuInstance>& bound, const std::vector<MigProfile>& request);

// The layout of one device, rebuilt from a system's instances.
[[nodiscard]] MigLayout layoutOf(const std::vector<GpuInstance>& instances, const DeviceId& device);

// "gpu-0003 3g@4"
[[nodiscard]] std::string describe(const GpuInstance& instance);
// A comma list of profiles: "3g,1g,1g".
[[nodiscard]] std::string describe(const std::vector<MigProfile>& profiles);

}  // namespace switchyard

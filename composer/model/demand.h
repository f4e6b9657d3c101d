// Demand: the shape of composed system a request asked for, whether it was served or not. The packing
// core learns which shapes keep arriving (composer/packing/demand_mix.h), and the store keeps the recent
// ones so that what was learned survives a restart of the daemon.
#pragma once

#include <compare>
#include <cstddef>
#include <string>

namespace switchyard {

struct DemandShape {
  int gpus = 1;             // whole GPUs taken from the fabric (for MIG instances: the fresh GPUs they need)
  bool sameSwitch = true;   // all of them under one switch (peer-to-peer required or preferred)
  std::string model;        // empty: any
  auto operator<=>(const DemandShape&) const = default;
};

// How many of the most recent requests the mix is learned from, and so how many the store keeps.
inline constexpr std::size_t kDemandWindow = 5000;

}  // namespace switchyard

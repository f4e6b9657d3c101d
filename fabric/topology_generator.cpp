#include "fabric/topology_generator.h"

#include <fmt/format.h>

#include <algorithm>

namespace switchyard {

namespace {

int modelMemoryGiB(const std::string& model) {
  if (model.find("80GB") != std::string::npos) return 80;
  if (model.find("40GB") != std::string::npos) return 40;
  if (model.find("141GB") != std::string::npos) return 141;
  return 24;
}

}  // namespace

Topology generateTopology(const TopologyShape& shape) {
  Topology t;
  const int perFabric = shape.switchesPerFabric * shape.gpusPerSwitch;
  const int fabrics = std::max(1, (shape.totalGpus + perFabric - 1) / perFabric);
  const int hostUspsPerSwitch =
      (shape.hostsPerFabric * shape.upstreamPortsPerHost + shape.switchesPerFabric - 1) / shape.switchesPerFabric;
  int gpusLeft = shape.totalGpus;
  int hostNumber = 0;

  for (int f = 0; f < fabrics; ++f) {
    const int firstSwitch = f * shape.switchesPerFabric;
    std::vector<int> nextUsp(static_cast<std::size_t>(shape.switchesPerFabric), 0);
    for (int s = 0; s < shape.switchesPerFabric; ++s) {
      const int sw = firstSwitch + s;
      const std::string swId = fmt::format("{}sw{}", shape.idPrefix, sw);
      const std::string& model = shape.models[static_cast<std::size_t>(sw) % shape.models.size()];
      t.switches.push_back({swId, SwitchKind::kPcie, "PEX89144"});
      for (int u = 0; u < hostUspsPerSwitch; ++u)
        t.ports.push_back({fmt::format("{}-usp{}", swId, u), swId, PortKind::kUpstream, 5, 16, {}});
      if (s > 0) t.ports.push_back({fmt::format("{}-isl0", swId), swId, PortKind::kInterSwitch, 5, 16, fmt::format("{}sw{}-isl1", shape.idPrefix, sw - 1)});
      if (s + 1 < shape.switchesPerFabric)
        t.ports.push_back({fmt::format("{}-isl1", swId), swId, PortKind::kInterSwitch, 5, 16, fmt::format("{}sw{}-isl0", shape.idPrefix, sw + 1)});
      const int gpus = std::min(shape.gpusPerSwitch, gpusLeft);
      for (int g = 0; g < gpus; ++g) {
        const std::string dsp = fmt::format("{}-dsp{}", swId, g);
        t.ports.push_back({dsp, swId, PortKind::kDownstream, 5, 16, {}});
        t.devices.push_back({fmt::format("{}-gpu{}", swId, g), DeviceKind::kGpu, dsp, model, modelMemoryGiB(model),
                             fmt::format("{}SN{:04}{:02}", shape.idPrefix, sw, g), DeviceHealth::kOk, true});
      }
      gpusLeft -= gpus;
      auto endpoints = [&](DeviceKind kind, int n, const std::string& m, int gib) {
        for (int e = 0; e < n; ++e) {
          const std::string dsp = fmt::format("{}-dsp-{}{}", swId, toString(kind), e);
          t.ports.push_back({dsp, swId, PortKind::kDownstream, 5, 16, {}});
          const bool nic = kind == DeviceKind::kNic;
          const int speed = nic && !shape.nicSpeedsGbps.empty() ? shape.nicSpeedsGbps[static_cast<std::size_t>(e) % shape.nicSpeedsGbps.size()] : 0;
          t.devices.push_back({fmt::format("{}-{}{}", swId, toString(kind), e), kind, dsp, m, gib,
                               fmt::format("{}SN{:04}{}{:02}", shape.idPrefix, sw, nic ? "N" : "D", e), DeviceHealth::kOk, false, speed});
        }
      };
      endpoints(DeviceKind::kNic, shape.nicsPerSwitch, shape.nicModel, 0);
      endpoints(DeviceKind::kNvme, shape.drivesPerSwitch, shape.driveModel, shape.driveGiB);
      if (shape.memoryLdsPerSwitch > 0) {
        const std::string dsp = fmt::format("{}-dsp-mem0", swId);
        t.ports.push_back({dsp, swId, PortKind::kDownstream, 5, 16, {}});
        for (int ld = 0; ld < shape.memoryLdsPerSwitch; ++ld)
          t.devices.push_back({fmt::format("{}-mem0-ld{}", swId, ld), DeviceKind::kCxlMemory, dsp, shape.memoryModel, shape.memoryLdGiB,
                               fmt::format("{}SN{:04}M{:02}", shape.idPrefix, sw, ld), DeviceHealth::kOk, false});
      }
    }
    for (int h = 0; h < shape.hostsPerFabric; ++h) {
      Host host{fmt::format("{}host{}", shape.idPrefix, hostNumber++), {}, 64, 512, shape.maxDevicesPerHost};
      for (int p = 0; p < shape.upstreamPortsPerHost; ++p) {
        const int s = (h * shape.upstreamPortsPerHost + p) % shape.switchesPerFabric;
        const int usp = nextUsp[static_cast<std::size_t>(s)]++;
        if (usp >= hostUspsPerSwitch) continue;
        host.upstreamPorts.push_back({fmt::format("{}sw{}-usp{}", shape.idPrefix, firstSwitch + s, usp), p % 2});
      }
      t.hosts.push_back(std::move(host));
    }
  }
  return t;
}

Topology defaultTopology() {
  TopologyShape shape;
  shape.totalGpus = 16;
  shape.switchesPerFabric = 2;
  shape.gpusPerSwitch = 8;
  shape.hostsPerFabric = 4;
  shape.upstreamPortsPerHost = 2;
  shape.maxDevicesPerHost = 16;
  return generateTopology(shape);
}

Topology embeddedTopology() {
  TopologyShape shape;
  shape.nicsPerSwitch = 4;
  shape.drivesPerSwitch = 4;
  shape.memoryLdsPerSwitch = 4;
  return generateTopology(shape);
}

}  // namespace switchyard

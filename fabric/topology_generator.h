// Builds regular topologies: the embedded default (two 8-GPU chassis with NICs and drives, four hosts) and large pools for
// benchmarks. Layout: fabrics of S switches chained by inter-switch links; each switch holds G GPUs;
// each fabric has H hosts, each with P upstream ports into consecutive switches of its fabric.
#pragma once

#include <string>
#include <vector>

#include "composer/model/topology.h"

namespace switchyard {

struct TopologyShape {
  int totalGpus = 16;
  int switchesPerFabric = 2;
  int gpusPerSwitch = 8;
  int hostsPerFabric = 4;
  int upstreamPortsPerHost = 2;
  int maxDevicesPerHost = 16;
  // GPU model per switch, cycled (switch i gets models[i % size]).
  std::vector<std::string> models{"H100-SXM5-80GB", "A100-SXM4-40GB"};
  // Drives and NICs under each switch, after its GPUs (ids SW-nicN, SW-nvmeN).
  int nicsPerSwitch = 0;
  int drivesPerSwitch = 0;
  std::string nicModel = "ConnectX-7";
  // Port speed per NIC under a switch, cycled (NIC e gets nicSpeedsGbps[e % size]).
  std::vector<int> nicSpeedsGbps{400, 400, 200, 200};
  std::string driveModel = "PM1743";
  int driveGiB = 3840;
  // Pooled memory: one CXL multi-logical device (MLD) under each switch, its logical devices (LDs) sharing the
  // MLD's downstream port (ids SW-mem0-ldN), each memoryLdGiB; 0 LDs: none.
  int memoryLdsPerSwitch = 0;
  int memoryLdGiB = 64;
  std::string memoryModel = "CXL Type 3 MLD";
  // Put before every id and serial ("a-" gives a-sw0, a-host0, a-sw0-gpu3): pools generated for several
  // fabric domains stay apart.
  std::string idPrefix;
};

[[nodiscard]] Topology generateTopology(const TopologyShape& shape);

// Two GPU chassis (one PCIe switch with 8 GPUs each) joined by an inter-switch link, and four hosts
// with one upstream port into each switch.
[[nodiscard]] Topology defaultTopology();

// yardd's embedded default: defaultTopology() with 4 NICs (ConnectX-7: two at 400 Gb/s, two at 200 Gb/s), 4 NVMe drives (3840 GiB) and a pooled
// memory device of 4 LDs x 64 GiB under each switch, so that a mixed compose, a template and pooled memory can be
// shown without hardware.
[[nodiscard]] Topology embeddedTopology();

}  // namespace switchyard

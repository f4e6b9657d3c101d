// Readable topologies for tests: TopologyBuilder().sw("sw0").gpus("sw0", 4, "H100").host("h0", {"sw0"}).build()
#pragma once

#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "composer/model/topology.h"

namespace switchyard::testing {

class TopologyBuilder {
 public:
  TopologyBuilder& sw(const std::string& id) {
    t_.switches.push_back({id, SwitchKind::kPcie, "test"});
    return *this;
  }
  TopologyBuilder& gpus(const std::string& sw, int n, const std::string& model = "H100-SXM5-80GB", int memoryGiB = 80) {
    for (int i = 0; i < n; ++i) {
      const int slot = nextSlot_[sw]++;
      const std::string port = fmt::format("{}-dsp{}", sw, slot);
      t_.ports.push_back({port, sw, PortKind::kDownstream, 5, 16, {}});
      t_.devices.push_back({fmt::format("{}-gpu{}", sw, slot), DeviceKind::kGpu, port, model, memoryGiB, fmt::format("SN-{}-{}", sw, slot),
                            DeviceHealth::kOk, true});
    }
    return *this;
  }
  // A CXL memory pool under `sw`: one port, one cxl-memory device per logical device ("<sw>-mem<slot>-ld<L>"),
  // each of the given GiB.
  TopologyBuilder& memoryPool(const std::string& sw, const std::vector<int>& ldGiB) {
    const int slot = nextSlot_[sw]++;
    const std::string port = fmt::format("{}-dsp{}", sw, slot);
    t_.ports.push_back({port, sw, PortKind::kDownstream, 5, 16, {}});
    for (std::size_t l = 0; l < ldGiB.size(); ++l)
      t_.devices.push_back({fmt::format("{}-mem{}-ld{}", sw, slot, l), DeviceKind::kCxlMemory, port, "CXL-MLD", ldGiB[l],
                            fmt::format("SN-{}-{}-{}", sw, slot, l), DeviceHealth::kOk, false});
    return *this;
  }
  // Endpoints of another kind under `sw` ("<sw>-nic<slot>", "<sw>-nvme<slot>"), one per downstream port.
  TopologyBuilder& endpoints(const std::string& sw, DeviceKind kind, int n, const std::string& model = "", int capacityGiB = 0, int speedGbps = 0,
                             const std::string& deviceClass = "") {
    for (int i = 0; i < n; ++i) {
      const int slot = nextSlot_[sw]++;
      const std::string port = fmt::format("{}-dsp{}", sw, slot);
      t_.ports.push_back({port, sw, PortKind::kDownstream, 5, 16, {}});
      const std::string m = !model.empty() ? model : kind == DeviceKind::kNic ? "ConnectX-7" : kind == DeviceKind::kNvme ? "PM1743" : "any";
      t_.devices.push_back({fmt::format("{}-{}{}", sw, kindName(kind, deviceClass), slot), kind, port, m, capacityGiB, fmt::format("SN-{}-{}", sw, slot),
                            DeviceHealth::kOk, false, speedGbps, deviceClass});
    }
    return *this;
  }
  // Endpoints of another class ("<sw>-fpga<slot>").
  TopologyBuilder& others(const std::string& sw, const std::string& deviceClass, int n, const std::string& model = "") {
    return endpoints(sw, DeviceKind::kOther, n, model, 0, 0, deviceClass);
  }
  TopologyBuilder& nics(const std::string& sw, int n, const std::string& model = "", int speedGbps = 0) {
    return endpoints(sw, DeviceKind::kNic, n, model, 0, speedGbps);
  }
  TopologyBuilder& drives(const std::string& sw, int n, int capacityGiB = 3840) { return endpoints(sw, DeviceKind::kNvme, n, "", capacityGiB); }
  // A host with one upstream port into each listed switch.
  TopologyBuilder& host(const std::string& id, const std::vector<std::string>& switches, int maxDevices = 16) {
    Host h{id, {}, 64, 512, maxDevices};
    int numa = 0;
    for (const auto& sw : switches) {
      const std::string port = fmt::format("{}-usp-{}", sw, id);
      t_.ports.push_back({port, sw, PortKind::kUpstream, 5, 16, {}});
      h.upstreamPorts.push_back({port, numa++});
    }
    t_.hosts.push_back(std::move(h));
    return *this;
  }
  TopologyBuilder& link(const std::string& a, const std::string& b) {
    const std::string pa = fmt::format("{}-isl-{}", a, b), pb = fmt::format("{}-isl-{}", b, a);
    t_.ports.push_back({pa, a, PortKind::kInterSwitch, 5, 16, pb});
    t_.ports.push_back({pb, b, PortKind::kInterSwitch, 5, 16, pa});
    return *this;
  }
  // Puts the listed switches into a fabric domain (they start in kDefaultDomain).
  TopologyBuilder& domain(const std::string& name, const std::vector<std::string>& switches) {
    for (auto& s : t_.switches)
      for (const auto& id : switches)
        if (s.id == id) s.domain = name;
    return *this;
  }
  [[nodiscard]] Topology build() const { return t_; }

 private:
  Topology t_;
  std::map<std::string, int> nextSlot_;
};

}  // namespace switchyard::testing

// A HostAgents that passes every call to another: tests derive from it and override the one call they
// hold at a gate, fail or delay, instead of writing the forwarding out each time.
#pragma once

#include "agent/host_agents.h"

namespace switchyard::testing {

class ForwardingHosts : public HostAgents {
 public:
  explicit ForwardingHosts(HostAgents& inner) : inner_(inner) {}
  HostPolicy policy(const HostId& host) const override { return inner_.policy(host); }
  std::string status(const HostId& host) const override { return inner_.status(host); }
  std::vector<HostId> silentHosts() const override { return inner_.silentHosts(); }
  Result<std::vector<HostDeviceIdentity>> admit(const HostId& host, const HostChange& change, const CallOptions& options) override {
    return inner_.admit(host, change, options);
  }
  Result<HostRelease> release(const HostId& host, const HostChange& change, const CallOptions& options) override {
    return inner_.release(host, change, options);
  }
  bool canList(const HostId& host) const override { return inner_.canList(host); }
  Result<std::vector<HostDeviceIdentity>> listPresent(const HostId& host, const CallOptions& options) override {
    return inner_.listPresent(host, options);
  }
  bool canReportActivity(const HostId& host) const override { return inner_.canReportActivity(host); }
  Result<std::vector<GpuActivity>> activity(const HostId& host, const std::vector<Binding>& devices, const CallOptions& options) override {
    return inner_.activity(host, devices, options);
  }

 protected:
  HostAgents& inner_;
};

}  // namespace switchyard::testing

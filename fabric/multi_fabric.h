// Several fabric domains in one pool: one FabricDriver over the drivers of several switch managers (two
// simulated chassis, a simulated one and a Redfish fabric manager, ...). The engine sees one inventory in
// which every switch names its domain; each call goes to the driver that owns the devices it names.
//
// Contract, beyond fabric_driver.h:
//  - discover() asks every domain and merges the answers, stamping each switch with its domain's name.
//    Ids must be unique across domains: a device or port id two managers both report is an error naming
//    both domains (give them distinct names in each manager), never a silent merge.
//  - bindAll/unbindAll: a binding whose device and upstream port are in different domains is
//    kInvalidArgument (no switch can route it), checked before any domain is called. A set spanning
//    domains is split and sent to each domain in turn: when the first domain refuses, nothing changed and
//    its error is returned as is; when a later one fails after an earlier one applied its part, the error
//    is kUnavailable (some applied: not changedNothing; retryable) and repeating the call converges, since
//    binds and unbinds are idempotent. (The engine never sends such a set: a host, and so a system, is in
//    one domain.)
//  - readBindings() fails when any domain cannot be read: a partial table would read as unbound devices.
//  - pollEvents() fails when any domain's feed cannot be read; the events the others returned meanwhile are
//    kept and come with the next successful poll, so nothing is lost.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/fabric_driver.h"

namespace switchyard {

struct FabricDomain {
  std::string name;  // as the pool shows it: "rack-a", "cxl-west"
  std::unique_ptr<FabricDriver> driver;
};

class MultiFabric final : public FabricDriver {
 public:
  // Domain names must be unique and non-empty, and there must be at least one domain.
  [[nodiscard]] static Result<std::unique_ptr<MultiFabric>> create(std::vector<FabricDomain> domains);

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] Result<Topology> discover() override;
  [[nodiscard]] Result<void> bindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<void> unbindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindings(const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<FabricEvent>> pollEvents() override;

  [[nodiscard]] const std::vector<FabricDomain>& domains() const { return domains_; }

 private:
  explicit MultiFabric(std::vector<FabricDomain> domains);
  // Which domain (index into domains_) runs each device and upstream port: from the last discover(), made
  // by the first call that needs it.
  struct Routes {
    std::unordered_map<DeviceId, std::size_t> device;
    std::unordered_map<PortId, std::size_t> port;
  };
  [[nodiscard]] Result<std::shared_ptr<const Routes>> routes();
  // Splits a set by domain (in domain order), or refuses it whole: unknown names, cross-domain bindings.
  [[nodiscard]] Result<std::vector<std::pair<std::size_t, std::vector<Binding>>>> split(std::span<const Binding> set);
  [[nodiscard]] Result<void> change(std::span<const Binding> set, bool binding, const CallOptions& options);

  std::vector<FabricDomain> domains_;
  std::string name_;

  std::mutex mutex_;
  std::shared_ptr<const Routes> routes_;
  std::vector<FabricEvent> pendingEvents_;  // polled from some domains while another's feed failed
};

}  // namespace switchyard

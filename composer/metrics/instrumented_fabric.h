// A FabricDriver that passes every call to another and counts it: latency and result per call, into
// EngineMetrics. The composition root wraps the real driver in it when metrics are on; the engine and
// the driver know nothing of it.
#pragma once

#include "composer/metrics/engine_metrics.h"
#include "fabric/fabric_driver.h"

namespace switchyard::metrics {

class InstrumentedFabric final : public FabricDriver {
 public:
  InstrumentedFabric(FabricDriver& inner, EngineMetrics& metrics) : inner_(inner), metrics_(metrics) {}

  [[nodiscard]] std::string_view name() const override { return inner_.name(); }
  [[nodiscard]] Result<Topology> discover() override;
  [[nodiscard]] Result<void> bindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<void> unbindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindings(const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<FabricEvent>> pollEvents() override;

 private:
  template <typename F>
  auto timed(const char* call, F&& f) -> decltype(f());
  FabricDriver& inner_;
  EngineMetrics& metrics_;
};

}  // namespace switchyard::metrics

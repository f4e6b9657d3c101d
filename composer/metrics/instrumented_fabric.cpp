#include "composer/metrics/instrumented_fabric.h"

#include <chrono>

namespace switchyard::metrics {

template <typename F>
auto InstrumentedFabric::timed(const char* call, F&& f) -> decltype(f()) {
  const auto start = std::chrono::steady_clock::now();
  auto result = f();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  metrics_.switchCallSeconds.observe({call}, took.count());
  metrics_.switchCalls.add({call, result ? std::string("ok") : std::string(codeName(result.error().code))});
  return result;
}

Result<Topology> InstrumentedFabric::discover() {
  return timed("discover", [&] { return inner_.discover(); });
}
Result<void> InstrumentedFabric::bindAll(std::span<const Binding> bindings, const CallOptions& options) {
  return timed("bind", [&] { return inner_.bindAll(bindings, options); });
}
Result<void> InstrumentedFabric::unbindAll(std::span<const Binding> bindings, const CallOptions& options) {
  return timed("unbind", [&] { return inner_.unbindAll(bindings, options); });
}
Result<std::vector<Binding>> InstrumentedFabric::readBindings(const CallOptions& options) {
  return timed("read_bindings", [&] { return inner_.readBindings(options); });
}
Result<std::vector<Binding>> InstrumentedFabric::readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options) {
  return timed("read_bindings", [&] { return inner_.readBindingsOf(upstreamPorts, options); });
}
Result<std::vector<FabricEvent>> InstrumentedFabric::pollEvents() {
  return timed("poll_events", [&] { return inner_.pollEvents(); });
}

}  // namespace switchyard::metrics

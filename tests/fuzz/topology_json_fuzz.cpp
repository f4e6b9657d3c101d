// Fuzz target: arbitrary bytes as a topology file (yardd --topology), through the parser and the engine's
// validation of what it returns. Whatever the bytes: a topology or an error naming where, never a crash;
// a topology the parser accepts is one the validator can judge, and one that passes both indexes cleanly.
#include <cstdint>
#include <string_view>

#include "composer/model/topology.h"
#include "fabric/topology_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto topology = switchyard::parseTopologyJson(text, "fuzz.json");
  if (!topology) return 0;
  if (!switchyard::validateTopology(*topology)) return 0;
  switchyard::TopologyIndex index(*topology);
  for (const auto& d : topology->devices) (void)index.switchOfDevice(d.id);
  for (const auto& s : topology->switches) (void)index.fabricOf(s.id);
  return 0;
}

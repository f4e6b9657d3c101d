#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fabric/topology_generator.h"
#include "fabric/topology_json.h"
#include "tests/support/temp_dir.h"

namespace switchyard {
namespace {

std::string errorOf(std::string_view text) {
  auto r = parseTopologyJson(text, "pool.json");
  EXPECT_FALSE(r);
  return r ? std::string() : r.error().message;
}

TEST(TopologyJson, RoundTripsTheDefaultTopology) {
  const Topology t = defaultTopology();
  auto parsed = parseTopologyJson(topologyToJson(t).dump(2), "default");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->devices.size(), t.devices.size());
  EXPECT_EQ(parsed->ports.size(), t.ports.size());
  EXPECT_EQ(topologyToJson(*parsed), topologyToJson(t));
}

TEST(TopologyJson, KeepsANicsSpeedAndWritesItOnlyWhereKnown) {
  const Topology t = embeddedTopology();
  const auto j = topologyToJson(t);
  auto parsed = parseTopologyJson(j.dump(), "embedded");
  ASSERT_TRUE(parsed) << parsed.error().message;
  int nics = 0;
  for (std::size_t i = 0; i < t.devices.size(); ++i) {
    EXPECT_EQ(parsed->devices[i].speedGbps, t.devices[i].speedGbps) << t.devices[i].id;
    if (t.devices[i].kind == DeviceKind::kNic) {
      ++nics;
      EXPECT_GT(t.devices[i].speedGbps, 0) << t.devices[i].id;
    } else {
      EXPECT_FALSE(j["devices"][i].contains("speedGbps")) << t.devices[i].id;
    }
  }
  EXPECT_EQ(nics, 8);
  EXPECT_EQ(errorOf(R"({"switches": [{"id": "sw0", "ports": [{"id": "d", "kind": "downstream"}]}],
                       "devices": [{"id": "n", "kind": "nic", "port": "d", "speedGbps": -1}]})"),
            "pool.json: /devices/0/speedGbps: -1 is outside [0, 100000]");
}

TEST(TopologyJson, AnotherClassIsItsOwnKindByName) {
  constexpr std::string_view kPool = R"({"switches": [{"id": "sw0", "ports": [{"id": "d0", "kind": "downstream"}, {"id": "d1", "kind": "downstream"}]}],
    "devices": [{"id": "fpga0", "kind": "fpga", "port": "d0", "model": "Alveo U55C"}, {"id": "g0", "port": "d1"}]})";
  auto parsed = parseTopologyJson(kPool, "pool.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->devices[0].kind, DeviceKind::kOther);
  EXPECT_EQ(parsed->devices[0].deviceClass, "fpga");
  EXPECT_EQ(parsed->devices[1].kind, DeviceKind::kGpu) << "no kind: a GPU, as before";
  EXPECT_EQ(topologyToJson(*parsed)["devices"][0]["kind"], "fpga");
  EXPECT_EQ(errorOf(R"({"switches": [{"id": "sw0", "ports": [{"id": "d", "kind": "downstream"}]}],
                       "devices": [{"id": "n", "kind": "FPGA", "port": "d"}]})"),
            fmt::format("pool.json: /devices/0/kind: 'FPGA' is not one of {}", kKindNameRule));
}

TEST(TopologyJson, KeepsASwitchsDomain) {
  Topology t = defaultTopology();
  t.switches[0].domain = "east";
  t.switches[1].domain = "east";
  const auto j = topologyToJson(t);
  EXPECT_EQ(j["switches"][0]["domain"], "east");
  auto parsed = parseTopologyJson(j.dump(), "east.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->switches[1].domain, "east");
  EXPECT_FALSE(topologyToJson(defaultTopology())["switches"][0].contains("domain")) << "the default domain is not written";
  EXPECT_EQ(parseTopologyJson(topologyToJson(defaultTopology()).dump(), "d")->switches[0].domain, kDefaultDomain);
}

TEST(TopologyJson, SyntaxErrorNamesFileLineAndColumn) {
  const std::string msg = errorOf("{\n  \"switches\": [\n    {\"id\": \"sw0\",}\n  ]\n}");
  EXPECT_EQ(msg.rfind("pool.json:3:", 0), 0u) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
}

TEST(TopologyJson, FieldErrorsNameTheField) {
  EXPECT_EQ(errorOf(R"({"switches": [{"id": "sw0", "ports": [{"id": "p", "kind": "upstream", "width": "wide"}]}]})"),
            "pool.json: /switches/0/ports/0/width: expected an integer");
  EXPECT_EQ(errorOf(R"({"switches": [{"id": "sw0", "kind": "nvlink"}]})"),
            "pool.json: /switches/0/kind: 'nvlink' is not one of pcie, cxl");
  EXPECT_EQ(errorOf(R"({"hosts": [{"id": "h", "upstreamPorts": [], "memoryGib": 4}]})"),
            "pool.json: /hosts/0/memoryGib: unknown field 'memoryGib'");
  EXPECT_EQ(errorOf(R"({"devices": [{"kind": "gpu"}]})"), "pool.json: /devices/0/id: required field is missing");
  EXPECT_EQ(errorOf(R"({"switches": [{"id": "sw0", "ports": [{"id": "p", "kind": "downstream", "gen": 9}]}]})"),
            "pool.json: /switches/0/ports/0/gen: 9 is outside [1, 7]");
}

TEST(TopologyJson, ReferenceErrorsNameTheObject) {
  const std::string msg = errorOf(R"({"switches": [{"id": "sw0", "ports": [{"id": "d0", "kind": "downstream"}]}],
    "devices": [{"id": "g0", "port": "d0"}, {"id": "g0", "port": "d0"}]})");
  EXPECT_NE(msg.find("pool.json"), std::string::npos);
  EXPECT_NE(msg.find("duplicate id 'g0'"), std::string::npos) << msg;
}

TEST(TopologyJson, LoadsFromFileAndReportsMissingFile) {
  testing::TempDir dir;
  std::ofstream(dir / "t.json") << topologyToJson(defaultTopology()).dump();
  EXPECT_TRUE(loadTopologyFile(dir / "t.json"));
  auto missing = loadTopologyFile(dir / "nope.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nope.json: cannot open"), std::string::npos);
}

}  // namespace
}  // namespace switchyard

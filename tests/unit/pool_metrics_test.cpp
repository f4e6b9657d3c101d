// /metrics' pool families (composer/web/pool_metrics.h): the per-device family, which a large pool leaves out
// unless asked (--metrics-device-series), and its lines without the labels a device does not have.
#include "composer/web/pool_metrics.h"

#include <gtest/gtest.h>

#include <sstream>

#include "composer/engine/engine_client.h"
#include "fabric/topology_generator.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

std::vector<std::string> linesOf(const std::string& text, std::string_view family) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(std::string(family) + "{") || line.starts_with(std::string(family) + " ")) out.push_back(line);
  return out;
}

TEST_F(EngineTest, PerDeviceSeriesFollowTheOptionAndLeaveEmptyLabelsOut) {
  start();
  compose("train", 2);
  EngineClient client(*engine_);
  auto scrape = [&](web::DeviceSeries series) {
    metrics::ExpositionWriter out;
    auto r = web::writePoolMetrics(client, out, nullptr, nullptr, series);
    EXPECT_TRUE(r) << r.error().message;
    return out.take();
  };
  const std::string all = scrape(web::DeviceSeries::kAll);
  const auto devices = linesOf(all, "switchyard_device_info");
  ASSERT_EQ(devices.size(), engine_->reads().listDevices()->size());
  EXPECT_EQ(linesOf(all, "switchyard_device_series_written"), std::vector<std::string>{"switchyard_device_series_written 1"});
  std::size_t inSystem = 0;
  for (const auto& line : devices) {
    EXPECT_EQ(line.find("=\"\""), std::string::npos) << "an empty label: " << line;
    if (line.find("system=\"train\"") != std::string::npos) ++inSystem;
  }
  EXPECT_EQ(inSystem, 2u);

  EXPECT_EQ(scrape(web::DeviceSeries::kAuto), all) << "a pool of " << devices.size() << " devices is under the automatic limit";
  const std::string none = scrape(web::DeviceSeries::kNone);
  EXPECT_TRUE(linesOf(none, "switchyard_device_info").empty());
  EXPECT_EQ(none.find("# HELP switchyard_device_info"), std::string::npos);
  EXPECT_EQ(linesOf(none, "switchyard_device_series_written"), std::vector<std::string>{"switchyard_device_series_written 0"});
  EXPECT_FALSE(linesOf(none, "switchyard_devices").empty()) << "the per-state counts stay";
}

// Past the automatic limit the default leaves the family out; `all` still writes it.
TEST_F(EngineTest, ALargePoolLeavesThePerDeviceSeriesOutUnlessAskedForAll) {
  TopologyShape shape;
  shape.totalGpus = static_cast<int>(web::kAutoDeviceSeriesLimit) + 16;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 8;
  startFabric(generateTopology(shape));
  start();
  EngineClient client(*engine_);
  auto scrape = [&](web::DeviceSeries series) {
    metrics::ExpositionWriter out;
    auto r = web::writePoolMetrics(client, out, nullptr, nullptr, series);
    EXPECT_TRUE(r) << r.error().message;
    return out.take();
  };
  const std::string byDefault = scrape(web::DeviceSeries::kAuto);
  EXPECT_TRUE(linesOf(byDefault, "switchyard_device_info").empty());
  EXPECT_EQ(linesOf(byDefault, "switchyard_device_series_written"), std::vector<std::string>{"switchyard_device_series_written 0"});
  EXPECT_EQ(linesOf(scrape(web::DeviceSeries::kAll), "switchyard_device_info").size(), static_cast<std::size_t>(shape.totalGpus));
}

TEST(DeviceSeries, IsParsedFromTheFlagsWords) {
  EXPECT_EQ(web::parseDeviceSeries("auto"), web::DeviceSeries::kAuto);
  EXPECT_EQ(web::parseDeviceSeries("all"), web::DeviceSeries::kAll);
  EXPECT_EQ(web::parseDeviceSeries("none"), web::DeviceSeries::kNone);
  EXPECT_FALSE(web::parseDeviceSeries("some"));
}

}  // namespace
}  // namespace switchyard

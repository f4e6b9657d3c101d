// What the simulator adds on top of the driver contract: latency, faults, persistence, events.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <iterator>

#include "fabric/simulated_fabric.h"
#include "fabric/topology_generator.h"
#include "tests/support/temp_dir.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<SimulatedFabric> make(Clock& clock, SimulatedFabricOptions options = {}) {
  auto f = SimulatedFabric::create(defaultTopology(), clock, std::move(options));
  EXPECT_TRUE(f) << (f ? "" : f.error().message);
  return f ? std::move(*f) : nullptr;
}

TEST(SimulatedFabric, LatencyRunsOnTheInjectedClock) {
  ManualClock clock;
  const Timestamp start = clock.now();
  auto fabric = make(clock, {.latency = 40ms});
  ASSERT_TRUE(fabric->bind("sw0-gpu0", "sw0-usp0"));
  ASSERT_TRUE(fabric->readBindings());
  EXPECT_EQ(clock.now() - start, std::chrono::nanoseconds(80ms).count());
}

TEST(SimulatedFabric, FailNextFailsExactlyNCallsWithoutApplyingThem) {
  ManualClock clock;
  auto fabric = make(clock);
  fabric->setFaults({.failNext = 2});
  EXPECT_EQ(fabric->bind("sw0-gpu0", "sw0-usp0").error().code, Code::kUnavailable);
  EXPECT_FALSE(fabric->bind("sw0-gpu0", "sw0-usp0"));
  EXPECT_TRUE(fabric->readBindings()->empty());
  EXPECT_TRUE(fabric->bind("sw0-gpu0", "sw0-usp0"));
}

TEST(SimulatedFabric, TimeoutAppliesTheChangeButReportsDeadlineExceeded) {
  ManualClock clock;
  const Timestamp start = clock.now();
  auto fabric = make(clock, {});
  fabric->setFaults({.timeoutNext = 1});
  const Binding b{"sw0-gpu0", "sw0-usp0"};
  auto r = fabric->bindAll({&b, 1}, {.timeout = 3s});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kDeadlineExceeded);
  EXPECT_EQ(fabric->readBindings()->size(), 1u) << "the switch did it; only the answer was lost";
  EXPECT_EQ(clock.now() - start, std::chrono::nanoseconds(3s).count());
}

TEST(SimulatedFabric, ProbabilisticFaultsAreReproducibleForASeed) {
  auto run = [](std::uint64_t seed) {
    ManualClock clock;
    auto fabric = make(clock, {.seed = seed});
    fabric->setFaults({.failProbability = 0.5});
    std::string pattern;
    for (int i = 0; i < 16; ++i) pattern += fabric->bind("sw0-gpu" + std::to_string(i % 8), "sw0-usp0") ? '1' : '0';
    return pattern;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7).find('0'), std::string::npos);
  EXPECT_NE(run(7), run(8));
}

TEST(SimulatedFabric, FaultsTargetOnlyTheChosenCalls) {
  ManualClock clock;
  auto fabric = make(clock);
  fabric->setFaults({.failNext = 1, .targets = kFaultUnbind});
  EXPECT_TRUE(fabric->bind("sw0-gpu0", "sw0-usp0"));
  EXPECT_FALSE(fabric->unbind("sw0-gpu0", "sw0-usp0"));
  EXPECT_TRUE(fabric->unbind("sw0-gpu0", "sw0-usp0"));
}

TEST(SimulatedFabric, BindingsOutliveTheProcessInTheStateFile) {
  testing::TempDir dir;
  ManualClock clock;
  {
    auto fabric = make(clock, {.statePath = dir / "switch.json"});
    ASSERT_TRUE(fabric->bind("sw1-gpu2", "sw1-usp3"));
  }
  auto fabric = make(clock, {.statePath = dir / "switch.json"});
  EXPECT_EQ(*fabric->readBindings(), (std::vector<Binding>{{"sw1-gpu2", "sw1-usp3"}}));
}

// A full disk, played by a file size limit (RLIMIT_FSIZE, with SIGXFSZ ignored so a write past it fails with
// EFBIG): a bind whose table cannot be saved fails, and the table on disk is the last whole one.
TEST(SimulatedFabric, AFullDiskFailsTheBindAndKeepsTheLastWholeStateFile) {
  testing::TempDir dir;
  ManualClock clock;
  auto fabric = make(clock, {.statePath = dir / "switch.json"});
  ASSERT_TRUE(fabric->bindAll(std::vector<Binding>{{"sw0-gpu0", "sw0-usp0"}}));
  const std::string before = [&] {
    std::ifstream in(dir / "switch.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  ASSERT_NE(before.find("sw0-gpu0"), std::string::npos);

  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit tiny = saved;
  tiny.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &tiny), 0);
  auto refused = fabric->bindAll(std::vector<Binding>{{"sw0-gpu1", "sw0-usp0"}});
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, oldHandler);

  ASSERT_FALSE(refused) << "a table that was not saved is not a binding";
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  EXPECT_NE(refused.error().message.find("not saved"), std::string::npos) << refused.error().message;
  const std::string after = [&] {
    std::ifstream in(dir / "switch.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  EXPECT_EQ(after, before) << "the file on disk is still the last whole table";
  EXPECT_FALSE(std::filesystem::exists(dir / "switch.json.tmp"));
  // And a restart reads it.
  fabric.reset();
  auto again = make(clock, {.statePath = dir / "switch.json"});
  ASSERT_TRUE(again);
  auto bindings = again->readBindings();
  ASSERT_TRUE(bindings);
  EXPECT_EQ(bindings->size(), 1u);
}

TEST(SimulatedFabric, CorruptStateFileIsAnErrorNamingTheFile) {
  testing::TempDir dir;
  std::ofstream(dir / "switch.json") << R"({"bindings": {"ghost-gpu": "sw0-usp0"}})";
  ManualClock clock;
  auto f = SimulatedFabric::create(defaultTopology(), clock, {.statePath = dir / "switch.json"});
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("switch.json: /bindings/ghost-gpu"), std::string::npos) << f.error().message;
}

// yardd --db /elsewhere/yard.db on a machine without ~/.local/state/switchyard: the switch's state
// directory is created at start, and binds work (issue 27: every compose failed with UNAVAILABLE).
TEST(SimulatedFabric, CreatesTheDirectoryOfItsStateFile) {
  testing::TempDir dir;
  ManualClock clock;
  auto fabric = make(clock, {.statePath = dir / "not" / "yet" / "switch.json"});
  ASSERT_NE(fabric, nullptr);
  EXPECT_TRUE(std::filesystem::exists(dir / "not" / "yet" / "switch.json"));
  auto bound = fabric->bind("sw0-gpu0", "sw0-usp0");
  EXPECT_TRUE(bound) << bound.error().message;
}

TEST(SimulatedFabric, AStateFileThatCannotBeWrittenStopsTheStart) {
  testing::TempDir dir;
  std::ofstream(dir / "a-file") << "not a directory";
  ManualClock clock;
  auto f = SimulatedFabric::create(defaultTopology(), clock, {.statePath = dir / "a-file" / "switch.json"});
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, Code::kUnavailable);
  EXPECT_NE(f.error().message.find("cannot create the directory for the simulated switch state"), std::string::npos) << f.error().message;
}

TEST(SimulatedFabric, HealthChangesBecomeEvents) {
  ManualClock clock;
  auto fabric = make(clock);
  ASSERT_TRUE(fabric->setDeviceHealth("sw0-gpu4", DeviceHealth::kCritical));
  auto events = fabric->pollEvents();
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].type, "device.health");
  EXPECT_EQ((*events)[0].health, DeviceHealth::kCritical);
  EXPECT_TRUE(fabric->pollEvents()->empty());
  EXPECT_EQ(fabric->discover()->devices[4].health, DeviceHealth::kCritical);
}

}  // namespace
}  // namespace switchyard

// The contract every FabricDriver must honour (see fabric/fabric_driver.h). A new driver joins by
// adding a factory to INSTANTIATE_TEST_SUITE_P below (the Redfish driver will run against an emulator).
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "composer/model/clock.h"
#include "fabric/simulated_fabric.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

struct DriverFactory {
  std::string name;
  std::function<std::unique_ptr<FabricDriver>(const Topology&, Clock&)> make;
};

std::ostream& operator<<(std::ostream& os, const DriverFactory& f) { return os << f.name; }

class FabricDriverContract : public ::testing::TestWithParam<DriverFactory> {
 protected:
  void SetUp() override {
    topology_ = testing::TopologyBuilder()
                    .sw("a").sw("b").sw("island").link("a", "b")
                    .gpus("a", 4).gpus("b", 2).gpus("island", 1)
                    .host("h0", {"a", "b"}).host("h1", {"a"}).host("h2", {"island"})
                    .build();
    driver_ = GetParam().make(topology_, clock_);
    ASSERT_NE(driver_, nullptr);
  }

  std::vector<Binding> bindings() {
    auto r = driver_->readBindings();
    EXPECT_TRUE(r);
    return r ? *r : std::vector<Binding>{};
  }

  ManualClock clock_;
  Topology topology_;
  std::unique_ptr<FabricDriver> driver_;
};

TEST_P(FabricDriverContract, DiscoversTheTopology) {
  auto t = driver_->discover();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->devices.size(), topology_.devices.size());
  EXPECT_EQ(t->hosts.size(), topology_.hosts.size());
  EXPECT_TRUE(validateTopology(*t));
}

TEST_P(FabricDriverContract, StartsWithNoBindings) { EXPECT_TRUE(bindings().empty()); }

TEST_P(FabricDriverContract, BindIsIdempotentAndVisible) {
  ASSERT_TRUE(driver_->bind("a-gpu0", "a-usp-h0"));
  ASSERT_TRUE(driver_->bind("a-gpu0", "a-usp-h0"));
  EXPECT_EQ(bindings(), (std::vector<Binding>{{"a-gpu0", "a-usp-h0"}}));
}

TEST_P(FabricDriverContract, BindingABusyDeviceFailsAndChangesNothing) {
  ASSERT_TRUE(driver_->bind("a-gpu1", "a-usp-h0"));
  auto r = driver_->bind("a-gpu1", "a-usp-h1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kFailedPrecondition);
  EXPECT_EQ(bindings(), (std::vector<Binding>{{"a-gpu1", "a-usp-h0"}}));
}

TEST_P(FabricDriverContract, UnbindIsIdempotentAndChecksThePort) {
  ASSERT_TRUE(driver_->unbind("a-gpu2", "a-usp-h0")) << "unbinding an unbound device succeeds";
  ASSERT_TRUE(driver_->bind("a-gpu2", "a-usp-h0"));
  auto wrong = driver_->unbind("a-gpu2", "a-usp-h1");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, Code::kFailedPrecondition);
  EXPECT_EQ(bindings().size(), 1u);
  ASSERT_TRUE(driver_->unbind("a-gpu2", "a-usp-h0"));
  ASSERT_TRUE(driver_->unbind("a-gpu2", "a-usp-h0"));
  EXPECT_TRUE(bindings().empty());
}

TEST_P(FabricDriverContract, CrossesInterSwitchLinksButNotFabrics) {
  EXPECT_TRUE(driver_->bind("b-gpu0", "a-usp-h1")) << "b is linked to a";
  auto r = driver_->bind("island-gpu0", "a-usp-h0");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
}

TEST_P(FabricDriverContract, UnknownNamesAreNotFound) {
  EXPECT_EQ(driver_->bind("nope", "a-usp-h0").error().code, Code::kNotFound);
  EXPECT_EQ(driver_->bind("a-gpu0", "nope").error().code, Code::kNotFound);
  EXPECT_EQ(driver_->bind("a-gpu0", "a-dsp1").error().code, Code::kNotFound) << "a downstream port is not a host port";
  EXPECT_EQ(driver_->unbind("nope", "a-usp-h0").error().code, Code::kNotFound);
}

TEST_P(FabricDriverContract, ConcurrentBindsOfOneDeviceHaveExactlyOneWinner) {
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (const char* port : {"a-usp-h0", "a-usp-h1", "b-usp-h0"})
    threads.emplace_back([&, port] {
      if (driver_->bind("a-gpu3", port)) ++wins;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(bindings().size(), 1u);
}

TEST_P(FabricDriverContract, ASetIsBoundInOneCall) {
  const std::vector<Binding> set{{"a-gpu0", "a-usp-h0"}, {"a-gpu1", "a-usp-h0"}, {"b-gpu0", "a-usp-h0"}};
  ASSERT_TRUE(driver_->bindAll(set));
  EXPECT_EQ(bindings(), (std::vector<Binding>{{"a-gpu0", "a-usp-h0"}, {"a-gpu1", "a-usp-h0"}, {"b-gpu0", "a-usp-h0"}}));
  ASSERT_TRUE(driver_->bindAll(set)) << "idempotent";
  ASSERT_TRUE(driver_->unbindAll(set));
  EXPECT_TRUE(bindings().empty());
  ASSERT_TRUE(driver_->unbindAll(set)) << "idempotent";
}

TEST_P(FabricDriverContract, ASetWithOneBadMemberChangesNothing) {
  ASSERT_TRUE(driver_->bind("a-gpu2", "a-usp-h1"));
  auto busy = driver_->bindAll(std::vector<Binding>{{"a-gpu0", "a-usp-h0"}, {"a-gpu2", "a-usp-h0"}});
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, Code::kFailedPrecondition);
  EXPECT_TRUE(changedNothing(busy.error().code));
  auto twice = driver_->bindAll(std::vector<Binding>{{"a-gpu0", "a-usp-h0"}, {"a-gpu0", "a-usp-h0"}});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, Code::kInvalidArgument);
  auto unknown = driver_->bindAll(std::vector<Binding>{{"a-gpu0", "a-usp-h0"}, {"ghost", "a-usp-h0"}});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
  EXPECT_EQ(bindings(), (std::vector<Binding>{{"a-gpu2", "a-usp-h1"}})) << "none of the refused sets left a binding behind";
  auto wrongPort = driver_->unbindAll(std::vector<Binding>{{"a-gpu2", "a-usp-h0"}});
  EXPECT_EQ(wrongPort.error().code, Code::kFailedPrecondition);
  EXPECT_EQ(bindings().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Drivers, FabricDriverContract,
                         ::testing::Values(DriverFactory{"simulated",
                                                         [](const Topology& t, Clock& clock) -> std::unique_ptr<FabricDriver> {
                                                           auto f = SimulatedFabric::create(t, clock, {});
                                                           return f ? std::move(*f) : nullptr;
                                                         }}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace switchyard

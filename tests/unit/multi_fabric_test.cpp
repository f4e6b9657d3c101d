// Several fabric domains behind one driver (fabric/multi_fabric.h): what it adds to the driver contract
// (tests/contract holds it to the contract itself): one merged inventory with each switch's domain, no
// binding across domains, sets split by domain, and errors that name the domain.
#include <gtest/gtest.h>

#include "fabric/multi_fabric.h"
#include "fabric/simulated_fabric.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using testing::TopologyBuilder;

class MultiFabricTest : public ::testing::Test {
 protected:
  void SetUp() override {
    east_ = make(TopologyBuilder().sw("e0").sw("e1").link("e0", "e1").gpus("e0", 2).gpus("e1", 2).host("he", {"e0", "e1"}).build());
    west_ = make(TopologyBuilder().sw("w0").gpus("w0", 2).host("hw", {"w0"}).build());
    std::vector<FabricDomain> domains;
    domains.push_back({"east", std::unique_ptr<FabricDriver>(east_)});
    domains.push_back({"west", std::unique_ptr<FabricDriver>(west_)});
    auto multi = MultiFabric::create(std::move(domains));
    ASSERT_TRUE(multi) << multi.error().message;
    fabric_ = std::move(*multi);
  }

  SimulatedFabric* make(Topology t) {
    auto f = SimulatedFabric::create(std::move(t), clock_, {});
    EXPECT_TRUE(f) << f.error().message;
    return f ? f->release() : nullptr;
  }

  ManualClock clock_;
  SimulatedFabric* east_ = nullptr;  // owned by fabric_
  SimulatedFabric* west_ = nullptr;
  std::unique_ptr<MultiFabric> fabric_;
};

TEST_F(MultiFabricTest, DiscoversOneInventoryWithEachSwitchsDomain) {
  auto t = fabric_->discover();
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(validateTopology(*t));
  ASSERT_EQ(t->switches.size(), 3u);
  EXPECT_EQ(t->switches[0].domain, "east");
  EXPECT_EQ(t->switches[1].domain, "east");
  EXPECT_EQ(t->switches[2].domain, "west");
  EXPECT_EQ(t->devices.size(), 6u);
  EXPECT_EQ(t->hosts.size(), 2u);
  EXPECT_EQ(fabric_->name(), "domains(east:simulated,west:simulated)");
}

TEST_F(MultiFabricTest, EachBindingGoesToTheDomainThatOwnsIt) {
  ASSERT_TRUE(fabric_->bind("e1-gpu0", "e0-usp-he")) << "the first call discovers which domain has what";
  const auto eastCalls = east_->callCount(), westCalls = west_->callCount();
  ASSERT_TRUE(fabric_->bind("w0-gpu1", "w0-usp-hw"));
  EXPECT_EQ(west_->callCount(), westCalls + 1) << "one switch call for the bind in its domain";
  EXPECT_EQ(east_->callCount(), eastCalls);
  EXPECT_EQ(east_->routedPort("e1-gpu0"), "e0-usp-he");
  EXPECT_EQ(west_->routedPort("w0-gpu1"), "w0-usp-hw");
  auto table = fabric_->readBindings();
  ASSERT_TRUE(table);
  EXPECT_EQ(*table, (std::vector<Binding>{{"e1-gpu0", "e0-usp-he"}, {"w0-gpu1", "w0-usp-hw"}}));
}

TEST_F(MultiFabricTest, ABindingAcrossDomainsIsRefusedBeforeAnySwitchIsCalled) {
  ASSERT_TRUE(fabric_->discover());
  const auto calls = east_->callCount() + west_->callCount();
  auto r = fabric_->bindAll(std::vector<Binding>{{"e0-gpu0", "e0-usp-he"}, {"w0-gpu0", "e0-usp-he"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_NE(r.error().message.find("device w0-gpu0 is in domain 'west' and upstream port e0-usp-he in domain 'east'"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(east_->callCount() + west_->callCount(), calls);
  EXPECT_EQ(fabric_->bind("no-such-gpu", "e0-usp-he").error().code, Code::kNotFound);
  EXPECT_EQ(fabric_->bind("e0-gpu0", "e0-dsp0").error().code, Code::kNotFound) << "a downstream port is no host port";
}

TEST_F(MultiFabricTest, ASetSpanningDomainsIsSplitAndAFailureLaterSaysSomeApplied) {
  const std::vector<Binding> set{{"e0-gpu0", "e0-usp-he"}, {"w0-gpu0", "w0-usp-hw"}};
  ASSERT_TRUE(fabric_->bindAll(set));
  ASSERT_TRUE(fabric_->unbindAll(set));

  // The first domain refuses: nothing anywhere changed, and its own code comes back.
  east_->setFaults({.failNext = 1, .failCode = Code::kFailedPrecondition});
  auto first = fabric_->bindAll(set);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, Code::kFailedPrecondition);
  EXPECT_NE(first.error().message.find("domain 'east'"), std::string::npos) << first.error().message;
  EXPECT_TRUE(fabric_->readBindings()->empty());

  // The second one refuses after the first applied: not "changed nothing", and repeating converges.
  west_->setFaults({.failNext = 1, .failCode = Code::kFailedPrecondition});
  auto later = fabric_->bindAll(set);
  ASSERT_FALSE(later);
  EXPECT_FALSE(changedNothing(later.error().code)) << later.error().message;
  EXPECT_NE(later.error().message.find("domain 'west'"), std::string::npos) << later.error().message;
  EXPECT_EQ(fabric_->readBindings()->size(), 1u);
  ASSERT_TRUE(fabric_->bindAll(set));
  EXPECT_EQ(fabric_->readBindings()->size(), 2u);
}

TEST_F(MultiFabricTest, AnUnreadableDomainFailsTheReadAndItsEventsWait) {
  west_->setFaults({.failNext = 1, .failCode = Code::kUnavailable, .targets = kFaultRead});
  auto read = fabric_->readBindings();
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("domain 'west'"), std::string::npos) << read.error().message;

  ASSERT_TRUE(east_->setDeviceHealth("e0-gpu1", DeviceHealth::kCritical));
  west_->setFaults({.failNext = 1, .failCode = Code::kUnavailable, .targets = kFaultEvents});
  auto broken = fabric_->pollEvents();
  ASSERT_FALSE(broken) << "a domain's feed could not be read";
  ASSERT_TRUE(west_->setDeviceHealth("w0-gpu0", DeviceHealth::kWarning));
  auto events = fabric_->pollEvents();
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 2u) << "east's event polled during the failure is delivered now, with west's";
  EXPECT_EQ((*events)[0].subject, "e0-gpu1");
  EXPECT_EQ((*events)[1].subject, "w0-gpu0");
  EXPECT_TRUE(fabric_->pollEvents()->empty());
}

TEST(MultiFabric, RefusesDomainsThatReportTheSameIds) {
  ManualClock clock;
  auto one = SimulatedFabric::create(TopologyBuilder().sw("s0").gpus("s0", 1).build(), clock, {});
  auto two = SimulatedFabric::create(TopologyBuilder().sw("s0").gpus("s0", 1).build(), clock, {});
  ASSERT_TRUE(one && two);
  std::vector<FabricDomain> domains;
  domains.push_back({"rack-a", std::move(*one)});
  domains.push_back({"rack-b", std::move(*two)});
  auto multi = MultiFabric::create(std::move(domains));
  ASSERT_TRUE(multi);
  auto t = (*multi)->discover();
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("switch 's0' is reported by domain 'rack-a' and by domain 'rack-b'"), std::string::npos)
      << t.error().message;

  EXPECT_FALSE(MultiFabric::create({}));
  std::vector<FabricDomain> twice;
  twice.push_back({"a", std::move(*SimulatedFabric::create(TopologyBuilder().sw("x").build(), clock, {}))});
  twice.push_back({"a", std::move(*SimulatedFabric::create(TopologyBuilder().sw("y").build(), clock, {}))});
  auto named = MultiFabric::create(std::move(twice));
  ASSERT_FALSE(named);
  EXPECT_NE(named.error().message.find("'a' is named twice"), std::string::npos);
}

}  // namespace
}  // namespace switchyard

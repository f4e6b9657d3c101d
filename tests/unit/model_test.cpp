#include <gtest/gtest.h>

#include "composer/model/clock.h"
#include "composer/model/composition.h"
#include "composer/model/grpc_target.h"
#include "composer/model/queue.h"
#include "composer/model/topology.h"
#include "fabric/topology_generator.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using testing::TopologyBuilder;

// text_inputs_fuzz found it (UBSan): an RFC 3339 time outside 1677-2262 overflowed the 64-bit nanoseconds.
TEST(Timestamps, ATimeYarddCannotHoldIsRefusedNotOverflowed) {
  EXPECT_EQ(parseTimestamp("1013-01-01T00:00:00Z"), std::nullopt);
  EXPECT_EQ(parseTimestamp("9999-12-31T23:59:59Z"), std::nullopt);
  ASSERT_TRUE(parseTimestamp("2026-11-23T09:00:00.5Z"));
  EXPECT_EQ(formatTimestamp(*parseTimestamp("2026-11-23T09:00:00Z")), "2026-11-23T09:00:00.000Z");
}

TEST(Topology, DefaultTopologyIsTwoChassisOfEightGpusAndFourHosts) {
  const Topology t = defaultTopology();
  ASSERT_TRUE(validateTopology(t));
  EXPECT_EQ(t.switches.size(), 2u);
  EXPECT_EQ(t.devices.size(), 16u);
  EXPECT_EQ(t.hosts.size(), 4u);
  TopologyIndex index(t);
  EXPECT_EQ(index.fabricOf("sw0"), index.fabricOf("sw1")) << "the inter-switch link joins the chassis";
  for (const auto& h : t.hosts) {
    ASSERT_EQ(h.upstreamPorts.size(), 2u) << h.id;
    EXPECT_NE(index.port(h.upstreamPorts[0].portId)->switchId, index.port(h.upstreamPorts[1].portId)->switchId);
  }
}

TEST(Topology, GeneratesTenThousandGpus) {
  TopologyShape shape;
  shape.totalGpus = 10'000;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 8;
  const Topology t = generateTopology(shape);
  EXPECT_EQ(t.devices.size(), 10'000u);
  EXPECT_TRUE(validateTopology(t));
}

TEST(Topology, RejectsDuplicateIds) {
  Topology t = TopologyBuilder().sw("sw0").gpus("sw0", 2).build();
  t.devices[1].id = t.devices[0].id;
  auto r = validateTopology(t);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_NE(r.error().message.find("duplicate id 'sw0-gpu0'"), std::string::npos) << r.error().message;
}

TEST(Topology, RejectsDanglingReferences) {
  Topology t = TopologyBuilder().sw("sw0").gpus("sw0", 1).host("h0", {"sw0"}).build();
  t.devices[0].portId = "nowhere";
  auto r = validateTopology(t);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'nowhere' is not a downstream port"), std::string::npos) << r.error().message;

  t = TopologyBuilder().sw("sw0").host("h0", {"sw0"}).build();
  t.hosts[0].upstreamPorts.push_back(t.hosts[0].upstreamPorts[0]);
  r = validateTopology(t);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cabled to another host"), std::string::npos) << r.error().message;
}

TEST(Topology, RejectsOneSidedInterSwitchLink) {
  Topology t = TopologyBuilder().sw("a").sw("b").link("a", "b").build();
  t.ports.back().peerPort = "something-else";
  EXPECT_FALSE(validateTopology(t));
}

TEST(Topology, LinksAndHostsStayWithinOneFabricDomain) {
  EXPECT_TRUE(validateTopology(TopologyBuilder().sw("a").sw("b").gpus("a", 1).gpus("b", 1).host("h0", {"a"}).host("h1", {"b"})
                                   .domain("east", {"a"}).domain("west", {"b"}).build()));
  auto link = validateTopology(TopologyBuilder().sw("a").sw("b").link("a", "b").domain("east", {"a"}).domain("west", {"b"}).build());
  ASSERT_FALSE(link);
  EXPECT_NE(link.error().message.find("inter-switch link from domain 'east' to domain 'west'"), std::string::npos) << link.error().message;
  auto host = validateTopology(TopologyBuilder().sw("a").sw("b").host("h0", {"a", "b"}).domain("east", {"a"}).domain("west", {"b"}).build());
  ASSERT_FALSE(host);
  EXPECT_NE(host.error().message.find("'h0': upstream ports in domains 'east' and 'west'"), std::string::npos) << host.error().message;
  Topology unnamed = TopologyBuilder().sw("a").build();
  unnamed.switches[0].domain.clear();
  EXPECT_FALSE(validateTopology(unnamed));

  const Topology t = TopologyBuilder().sw("a").sw("b").gpus("a", 1).host("h0", {"a"}).domain("east", {"a"}).build();
  TopologyIndex index(t);
  EXPECT_EQ(*index.domainOfDevice("a-gpu0"), "east");
  EXPECT_EQ(*index.domainOfHost("h0"), "east");
  EXPECT_EQ(*index.domainOfPort("a-usp-h0"), "east");
  EXPECT_EQ(index.domainOfDevice("nope"), nullptr);
  EXPECT_EQ(t.switches[1].domain, kDefaultDomain);
}

TEST(Composition, EnumNamesRoundTrip) {
  for (auto s : {SystemState::kComposing, SystemState::kComposed, SystemState::kDegraded, SystemState::kDecomposing,
                 SystemState::kDecomposed, SystemState::kFailed})
    EXPECT_EQ(parseSystemState(toString(s)), s);
  for (auto s : {StepState::kPending, StepState::kDone, StepState::kFailed, StepState::kSkipped}) EXPECT_EQ(parseStepState(toString(s)), s);
  for (auto a : {DeviceAllocation::kFree, DeviceAllocation::kReserved, DeviceAllocation::kAllocated, DeviceAllocation::kQuarantined})
    EXPECT_EQ(parseDeviceAllocation(toString(a)), a);
  EXPECT_FALSE(parseOperationState("paused"));
}

TEST(Composition, CursorIsFirstPendingStep) {
  Operation op;
  op.steps = {{"reserve", {}, StepState::kDone}, {"bind", {{"d", "u"}}}, {"commit"}};
  EXPECT_EQ(op.cursor(), 1u);
  op.steps[1].state = StepState::kDone;
  op.steps[2].state = StepState::kDone;
  EXPECT_EQ(op.cursor(), 3u);
}

}  // namespace
}  // namespace switchyard

namespace switchyard {
namespace {

TEST(QueueReasons, KeepTheFirstHostsAndCountEveryHostTheAnswerCovers) {
  EXPECT_EQ(shortReason("no host can take 8 GPU(s):\n  h0: a\n  h1: b"), "no host can take 8 GPU(s):\n  h0: a\n  h1: b");
  EXPECT_EQ(shortReason("no host:\n  h0: a\n  h1: b\n  h2: c\n  h3: d\n  h4: e"),
            "no host:\n  h0: a\n  h1: b\n  h2: c\n  ... and 2 more (`yardctl plan --explain` lists every host)");
  // The packing core's count of hosts it did not name is added to those it did (its last line is that count).
  EXPECT_EQ(shortReason("no host:\n  h0: a\n  h1: b\n  h2: c\n  h3: d\n  ... and 1200 more host(s): 1200 rejected by device-set", 1200),
            "no host:\n  h0: a\n  h1: b\n  h2: c\n  ... and 1201 more (`yardctl plan --explain` lists every host)");
}

TEST(Durations, ReadTheFormsPeopleWriteAndRefuseTheRest) {
  using std::chrono::milliseconds;
  EXPECT_EQ(parseDuration("90s"), milliseconds(90'000));
  EXPECT_EQ(parseDuration("30m"), milliseconds(1'800'000));
  EXPECT_EQ(parseDuration("8h"), milliseconds(28'800'000));
  EXPECT_EQ(parseDuration("2d"), milliseconds(172'800'000));
  EXPECT_EQ(parseDuration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(parseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(parseDuration("45"), milliseconds(45'000)) << "a bare number is seconds";
  for (const char* bad : {"", "0", "0s", "-5m", "5x", "h", "1h30", "99999999999d", "1.5h", "10y", " 5m"})
    EXPECT_FALSE(parseDuration(bad)) << bad;
  EXPECT_EQ(formatDuration(milliseconds(5'400'000)), "1h30m");
  EXPECT_EQ(formatDuration(milliseconds(172'800'000)), "2d");
  EXPECT_EQ(formatDuration(milliseconds(45'000)), "45s");
}

}  // namespace
}  // namespace switchyard

namespace switchyard {
namespace {

TEST(PriorityClasses, ParseTheFlagsFormAndRefuseTheRest) {
  std::string error;
  auto c = parsePriorityClass("urgent=5000:preempting", error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->name, "urgent");
  EXPECT_EQ(c->value, 5000);
  EXPECT_TRUE(c->preempting);
  EXPECT_FALSE(c->preemptible);
  c = parsePriorityClass("scavenger=-10:preemptible", error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->value, -10);
  EXPECT_TRUE(c->preemptible);
  EXPECT_FALSE(c->requeue);
  c = parsePriorityClass("spot=0:preemptible:requeue", error);
  ASSERT_TRUE(c) << error;
  EXPECT_TRUE(c->requeue);
  EXPECT_TRUE(c->preemptible);
  EXPECT_FALSE(parsePriorityClass("spot=0:requeue", error)) << "only a preemptible class is preempted, so only it requeues";
  EXPECT_NE(error.find(":preemptible"), std::string::npos) << error;
  for (const char* bad : {"", "x", "=5", "x=", "x=abc", "x=5:sometimes", "bad name=5", "x=99999999"}) {
    error.clear();
    EXPECT_FALSE(parsePriorityClass(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(GrpcTarget, ASeveralYarddTargetIsVerifiedAsItsFirstHost) {
  EXPECT_EQ(tlsNameOfTarget("127.0.0.1:7390"), "") << "one address: gRPC's own rule";
  EXPECT_EQ(tlsNameOfTarget("yardd.example:7390"), "");
  EXPECT_EQ(tlsNameOfTarget("ipv4:127.0.0.1:7501,127.0.0.1:7502"), "127.0.0.1");
  EXPECT_EQ(tlsNameOfTarget("ipv4:10.0.0.1:7390"), "10.0.0.1");
  EXPECT_EQ(tlsNameOfTarget("ipv6:[::1]:7501,[::1]:7502"), "::1");
  EXPECT_EQ(tlsNameOfTarget("dns:///yardd.example:7390"), "yardd.example");
  EXPECT_EQ(tlsNameOfTarget("a.example:1,b.example:2"), "a.example");
}

}  // namespace
}  // namespace switchyard

// requeueRequestOf (requeue.h): what a preempted system of a requeueing class asks for when it is queued again, on
// the embedded pool's devices (GPUs, NICs, drives and pooled memory under each switch).
#include "composer/engine/requeue.h"

#include <gtest/gtest.h>

#include "fabric/topology_generator.h"

namespace switchyard {
namespace {

class RequeueRequestTest : public ::testing::Test {
 protected:
  // The first `n` devices of `kind` in the pool, as a system's bindings.
  std::vector<Binding> devicesOf(DeviceKind kind, int n) {
    std::vector<Binding> out;
    for (const auto& d : topology_.devices)
      if (d.kind == kind && static_cast<int>(out.size()) < n) out.push_back({d.id, "up0"});
    EXPECT_EQ(static_cast<int>(out.size()), n);
    return out;
  }
  System systemWith(std::vector<Binding> bindings) {
    System s;
    s.id = "sys-000007";
    s.name = "spot-job";
    s.hostId = "host0";
    s.labels = {{"team", "vision"}};
    s.state = SystemState::kComposed;
    s.bindings = std::move(bindings);
    return s;
  }
  static void append(std::vector<Binding>& to, const std::vector<Binding>& more) { to.insert(to.end(), more.begin(), more.end()); }

  Topology topology_ = embeddedTopology();
  TopologyIndex index_{topology_};
  PriorityClass spot_{"spot", 0, true, false, true};
};

TEST_F(RequeueRequestTest, WholeGpusDrivesNicsAndMemoryAreAskedForByCountModelAndSize) {
  auto bindings = devicesOf(DeviceKind::kGpu, 4);
  append(bindings, devicesOf(DeviceKind::kNic, 2));
  append(bindings, devicesOf(DeviceKind::kNvme, 1));
  append(bindings, devicesOf(DeviceKind::kCxlMemory, 2));
  System s = systemWith(bindings);
  s.createdAt = 1'000'000'000;
  s.leaseExpiresAt = s.createdAt + 3'600'000'000'000LL;
  const auto q = requeueRequestOf(s, index_, spot_);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->gpuCount, 4);
  EXPECT_EQ(q->model, index_.device(bindings.front().deviceId)->model);
  EXPECT_EQ(q->pooledMemoryGiB, 2 * index_.device(bindings.back().deviceId)->memoryGiB);
  ASSERT_GE(q->endpoints.size(), 2u) << describe(q->endpoints);
  std::map<DeviceKind, int> counts;
  for (const auto& e : q->endpoints) counts[e.kind] += e.count;
  EXPECT_EQ(counts[DeviceKind::kNic] + counts[DeviceKind::kNvme], 3) << describe(q->endpoints);
  EXPECT_EQ(counts[DeviceKind::kNvme], 1);
  EXPECT_EQ(q->priorityClass, "spot");
  EXPECT_EQ(q->priority, 0);
  EXPECT_EQ(q->leaseSeconds, 3600);
  EXPECT_EQ(q->peerToPeer, "required") << "its GPUs shared a switch: they do again";
  EXPECT_TRUE(q->host.empty()) << "any host";
  ASSERT_TRUE(q->requeueAs);
  EXPECT_EQ(q->requeueAs->name, "spot-job");
  EXPECT_EQ(q->requeueAs->labels, s.labels);
}

TEST_F(RequeueRequestTest, WhatItsComposeAskedForBesideItsShapeIsAskedForAgain) {
  auto bindings = devicesOf(DeviceKind::kGpu, 2);
  append(bindings, devicesOf(DeviceKind::kNic, 1));
  System s = systemWith(bindings);
  // It asked for 1 GPU pinned to host0 with 80 GiB, any peer-to-peer, a 400 Gb/s NIC under its GPUs' switch, and a
  // queue timeout; an attach gave it a second GPU since.
  QueuedRequest asked;
  asked.gpuCount = 1;
  asked.host = "host0";
  asked.minMemoryGiB = 80;
  asked.peerToPeer = "none";
  EndpointDemand nic;
  nic.kind = DeviceKind::kNic;
  nic.count = 1;
  nic.affinity = Affinity::kSwitch;
  nic.minSpeedGbps = 400;
  asked.endpoints = {nic};
  asked.enqueuedAt = 1'000;
  asked.deadline = 2'000;
  s.asked = asked;
  const auto q = requeueRequestOf(s, index_, spot_);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->gpuCount, 2) << "its shape as it stands, not as first asked";
  EXPECT_EQ(q->host, "host0") << "pinned as it was";
  EXPECT_EQ(q->minMemoryGiB, 80);
  EXPECT_EQ(q->peerToPeer, "none") << "as asked, though its GPUs share a switch";
  ASSERT_EQ(q->endpoints.size(), 1u);
  EXPECT_EQ(q->endpoints[0].affinity, Affinity::kSwitch);
  EXPECT_EQ(q->endpoints[0].minSpeedGbps, 400);
  EXPECT_EQ(q->endpoints[0].model, index_.device(bindings.back().deviceId)->model) << "the model it got";
  EXPECT_EQ(q->deadline, 0) << "no queue timeout: it was running";
  EXPECT_EQ(q->enqueuedAt, 0) << "set when it is queued";
}

TEST_F(RequeueRequestTest, GpusUnderTwoSwitchesOrOneAloneAskForPeerToPeerPreferred) {
  std::map<SwitchId, Binding> firstBySwitch;  // one GPU under each switch
  for (const auto& d : topology_.devices)
    if (d.kind == DeviceKind::kGpu) firstBySwitch.try_emplace(*index_.switchOfDevice(d.id), Binding{d.id, "up0"});
  ASSERT_GE(firstBySwitch.size(), 2u);
  const std::vector<Binding> apart{firstBySwitch.begin()->second, std::next(firstBySwitch.begin())->second};
  const auto q = requeueRequestOf(systemWith(apart), index_, spot_);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->gpuCount, 2);
  EXPECT_EQ(q->peerToPeer, "preferred") << "it never had peer-to-peer: it is not asked for";
  const auto one = requeueRequestOf(systemWith(devicesOf(DeviceKind::kGpu, 1)), index_, spot_);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->peerToPeer, "preferred");
}

TEST_F(RequeueRequestTest, MigInstancesOrOneShareAreAskedForAsSuch) {
  const auto gpu = devicesOf(DeviceKind::kGpu, 1);
  System carved = systemWith(gpu);
  carved.gpuInstances = {{gpu.front().deviceId, MigProfile::k1g, 0}, {gpu.front().deviceId, MigProfile::k3g, 4}};
  const auto instances = requeueRequestOf(carved, index_, spot_);
  ASSERT_TRUE(instances) << instances.error().message;
  EXPECT_EQ(instances->gpuCount, 0);
  EXPECT_EQ(instances->gpuInstances, (std::vector<MigProfile>{MigProfile::k1g, MigProfile::k3g}));

  System shared = systemWith(gpu);
  shared.gpuShares = {{1, gpu.front().deviceId, 250}};
  const auto share = requeueRequestOf(shared, index_, spot_);
  ASSERT_TRUE(share) << share.error().message;
  EXPECT_EQ(share->gpuCount, 0);
  EXPECT_EQ(share->gpuShareMilli, 250);
}

TEST_F(RequeueRequestTest, ASystemNoOneRequestCanAskForIsNotQueuedAgainAndSaysWhy) {
  auto two = devicesOf(DeviceKind::kGpu, 2);
  System mixed = systemWith(two);
  mixed.gpuShares = {{1, two.front().deviceId, 500}};  // a share beside a whole GPU
  auto refused = requeueRequestOf(mixed, index_, spot_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("spot-job"), std::string::npos) << refused.error().message;

  System twoShares = systemWith({two.front()});
  twoShares.gpuShares = {{1, two.front().deviceId, 250}, {2, two.front().deviceId, 250}};
  EXPECT_FALSE(requeueRequestOf(twoShares, index_, spot_));

  System gone = systemWith({{"no-such-gpu", "up0"}});
  refused = requeueRequestOf(gone, index_, spot_);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("no-such-gpu"), std::string::npos) << refused.error().message;

  EXPECT_FALSE(requeueRequestOf(systemWith({}), index_, spot_)) << "nothing to ask for";
}

}  // namespace
}  // namespace switchyard

// Mixed systems through the engine (ADR 0031): GPUs, drives and NICs composed together and given back
// together, a template's compose, a queued mixed request that survives a restart, and quotas that count
// each kind as its own.
#include <gtest/gtest.h>

#include <map>

#include "bmc/redfish_resources.h"
#include "tests/support/topology_builder.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

class EngineMixedTest : public EngineTest {
 protected:
  void SetUp() override {
    // Two hosts; sw0 holds 4 GPUs and 2 NICs, sw1 4 GPUs, 1 NIC and 2 drives; h0 reaches both switches, h1 only sw1.
    startFabric(testing::TopologyBuilder()
                    .sw("sw0").sw("sw1")
                    .gpus("sw0", 4).nics("sw0", 2)
                    .gpus("sw1", 4).nics("sw1", 1).drives("sw1", 2)
                    .host("h0", {"sw0", "sw1"}).host("h1", {"sw1"})
                    .build());
  }
  static ComposeRequest want(const std::string& name, int gpus, int nics, int drives, const std::string& tenant = "default") {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuCount = gpus;
    r.placement.peerToPeer = PeerToPeer::kRequired;
    if (nics > 0) r.placement.endpoints.push_back({DeviceKind::kNic, nics, "", 0, Affinity::kSwitch});
    if (drives > 0) r.placement.endpoints.push_back({DeviceKind::kNvme, drives, "", 0, Affinity::kDomain});
    r.placement.tenant = tenant;
    return r;
  }
  static int count(const System& s, std::string_view kind) {
    return static_cast<int>(std::count_if(s.bindings.begin(), s.bindings.end(), [&](const Binding& b) { return b.deviceId.find(kind) != std::string::npos; }));
  }
};

// yardd's own Redfish fabric says what each target is (Endpoint.ConnectedEntities[].EntityType), so that a fabric
// manager reading it (Switchyard's Redfish driver among them) tells a GPU from a NIC or a drive.
TEST_F(EngineMixedTest, YarddsRedfishFabricNamesEachTargetsKind) {
  start();
  bmc::PoolView view;  // what the Redfish service reads for a fabric resource
  auto topology = engine_->reads().topology();
  ASSERT_TRUE(topology) << topology.error().message;
  view.topology = std::move(*topology);
  std::map<std::string, std::string> types;
  const auto fabrics = bmc::fabricsCollection(view);
  for (const auto& member : fabrics["Members"]) {
    const std::string uri = member["@odata.id"];
    const std::string fabric = uri.substr(uri.rfind('/') + 1);
    for (const char* id : {"sw0-gpu0", "sw0-nic4", "sw1-nic4", "sw1-nvme5"}) {
      const auto endpoint = bmc::fabricResource(view, {"redfish", "v1", "Fabrics", fabric, "Endpoints", id});
      if (!endpoint.is_null()) types[id] = endpoint["ConnectedEntities"][0]["EntityType"];
    }
  }
  EXPECT_EQ(types, (std::map<std::string, std::string>{
                       {"sw0-gpu0", "Processor"}, {"sw0-nic4", "NetworkController"}, {"sw1-nic4", "NetworkController"}, {"sw1-nvme5", "Drive"}}));
}

TEST_F(EngineMixedTest, GpusDrivesAndNicsAreBoundTogetherAndGoBackTogether) {
  start();
  const Operation op = run(engine_->blocking().compose(Caller::local(), want("train", 4, 1, 1)));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  auto s = engine_->reads().getSystem("train");
  ASSERT_TRUE(s);
  EXPECT_EQ(count(*s, "gpu"), 4);
  EXPECT_EQ(count(*s, "nic"), 1);
  EXPECT_EQ(count(*s, "nvme"), 1);
  // The NIC sits under the GPUs' switch (affinity switch).
  const std::string gpuSwitch = s->bindings.front().deviceId.substr(0, 3);
  for (const auto& b : s->bindings)
    if (b.deviceId.find("nic") != std::string::npos) EXPECT_EQ(b.deviceId.substr(0, 3), gpuSwitch);
  EXPECT_EQ(fabricBindings().size(), 6u);
  // Another NIC for the running system, then all of it back at decompose.
  AttachRequest more{"train", {}, {}};
  more.placement.endpoints = {{DeviceKind::kNic, 1, "", 0, Affinity::kDomain}};
  ASSERT_EQ(run(engine_->blocking().attach(Caller::local(), more)).state, OperationState::kSucceeded);
  EXPECT_EQ(count(*engine_->reads().getSystem("train"), "nic"), 2);
  ASSERT_EQ(run(engine_->blocking().decompose(Caller::local(), "train")).state, OperationState::kSucceeded);
  EXPECT_TRUE(fabricBindings().empty());
}

TEST_F(EngineMixedTest, ATemplatesComposeCarriesItsNameAndAnUnknownOneChangesNothing) {
  start();  // the engine's default templates: the examples (infer-1x: 1 GPU and a NIC under its switch)
  ComposeRequest r{"svc", {}, {}};
  r.machineTemplate = "infer-1x";
  r.peerToPeerAsked = false;
  const Operation op = run(engine_->blocking().compose(Caller::local(), r));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  auto s = engine_->reads().getSystem("svc");
  EXPECT_EQ(count(*s, "gpu"), 1);
  EXPECT_EQ(count(*s, "nic"), 1);
  EXPECT_EQ(s->labels.at(std::string(kTemplateLabel)), "infer-1x");
  r.name = "other";
  r.machineTemplate = "no-such";
  auto unknown = engine_->blocking().compose(Caller::local(), r);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
  EXPECT_FALSE(engine_->reads().getSystem("other"));
}

TEST_F(EngineMixedTest, AQueuedMixedRequestKeepsItsDrivesAcrossARestart) {
  start();
  // Both drives taken: a request for one waits.
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), want("disks", 0, 0, 2))).state, OperationState::kSucceeded);
  auto queued = want("later", 1, 0, 1);
  queued.queue = true;
  auto accepted = engine_->blocking().compose(Caller::local(), queued);
  ASSERT_TRUE(accepted) << accepted.error().message;
  EXPECT_EQ(accepted->state, OperationState::kQueued);
  start();  // restart: the queue is read back from the store
  ASSERT_EQ(run(engine_->blocking().decompose(Caller::local(), "disks")).state, OperationState::kSucceeded);
  auto done = engine_->waitOperation(accepted->id, 10s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, OperationState::kSucceeded) << done->error;
  EXPECT_EQ(count(*engine_->reads().getSystem("later"), "nvme"), 1);
}

TEST_F(EngineMixedTest, CapacityCountsWholeSystemsOfEachTemplate) {
  start();
  const auto report = engine_->reads().capacity(defaultShapes());
  ASSERT_TRUE(report) << report.error().message;
  std::map<std::string, int> fits;
  for (const auto& n : report->named) fits[n.name] = n.fits;
  // infer-1x (1 GPU, a NIC under its switch): one per host; train-8x (8 GPUs under one switch): none here;
  // storage-2x (2 drives): the pool's two drives make one.
  EXPECT_EQ(fits, (std::map<std::string, int>{{"infer-1x", 2}, {"storage-2x", 1}, {"train-8x", 0}}));
}

TEST_F(EngineMixedTest, AGpuQuotaCountsGpusOnly) {
  quotas_["team-a"] = TenantQuota{.maxGpus = 1};
  start();
  EXPECT_EQ(run(engine_->blocking().compose(Caller::local(), want("a1", 1, 1, 2, "team-a"))).state, OperationState::kSucceeded);
}

// max_nvme and max_nics count drives and NICs, across composes and attaches, and a refusal changes nothing.
TEST_F(EngineMixedTest, DriveAndNicQuotasCountTheirOwnKind) {
  quotas_["team-a"] = TenantQuota{.maxDrives = 1, .maxNics = 1};
  start();
  auto tooMany = engine_->blocking().compose(Caller::local(), want("big", 1, 0, 2, "team-a"));
  ASSERT_FALSE(tooMany);
  EXPECT_EQ(tooMany.error().code, Code::kResourceExhausted);
  EXPECT_NE(tooMany.error().message.find("may hold 1 NVMe drive(s); it holds 0 and this asks for 2 more"), std::string::npos) << tooMany.error().message;
  EXPECT_FALSE(engine_->reads().getSystem("big"));
  EXPECT_TRUE(fabricBindings().empty());
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), want("a1", 1, 1, 1, "team-a"))).state, OperationState::kSucceeded);
  AttachRequest nic{"a1", {}, {}};
  nic.placement.endpoints = {{DeviceKind::kNic, 1, "", 0, Affinity::kDomain}};
  auto refused = engine_->blocking().attach(Caller::local(), nic);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("may hold 1 NIC(s); it holds 1"), std::string::npos) << refused.error().message;
  // Another tenant, without a quota, is not held to team-a's.
  EXPECT_EQ(run(engine_->blocking().compose(Caller::local(), want("b1", 1, 1, 1, "team-b"))).state, OperationState::kSucceeded);
  // The GPUs stay free of it: a GPU-only attach goes through.
  AttachRequest gpu{"a1", {}, {}};
  gpu.placement.gpuCount = 1;
  EXPECT_EQ(run(engine_->blocking().attach(Caller::local(), gpu)).state, OperationState::kSucceeded);
}

// max_endpoints counts each other class by name: two FPGAs allowed, a third refused whole, DPUs not held to it.
class EngineOtherClassQuotaTest : public EngineTest {
 protected:
  void SetUp() override {
    startFabric(testing::TopologyBuilder()
                    .sw("sw0").sw("sw1")
                    .gpus("sw0", 4).others("sw0", "fpga", 2)
                    .gpus("sw1", 4).others("sw1", "fpga", 2).others("sw1", "dpu", 2)
                    .host("h0", {"sw0", "sw1"}).host("h1", {"sw0", "sw1"})
                    .build());
  }
  static ComposeRequest want(const std::string& name, int gpus, std::vector<EndpointDemand> endpoints) {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuCount = gpus;
    r.placement.endpoints = std::move(endpoints);
    r.placement.tenant = "team-a";
    return r;
  }
  static EndpointDemand of(const std::string& deviceClass, int n) { return {DeviceKind::kOther, n, "", 0, Affinity::kDomain, 0, deviceClass}; }
};

TEST_F(EngineOtherClassQuotaTest, EachClassCountsAgainstItsOwnLimit) {
  quotas_["team-a"] = TenantQuota{.maxEndpoints = {{"fpga", 2}}};
  start();
  auto tooMany = engine_->blocking().compose(Caller::local(), want("big", 1, {of("fpga", 3)}));
  ASSERT_FALSE(tooMany);
  EXPECT_EQ(tooMany.error().code, Code::kResourceExhausted);
  EXPECT_NE(tooMany.error().message.find("tenant 'team-a' may hold 2 fpga device(s); it holds 0 and this asks for 3 more"), std::string::npos)
      << tooMany.error().message;
  EXPECT_FALSE(engine_->reads().getSystem("big"));
  EXPECT_TRUE(fabricBindings().empty()) << "a refusal binds nothing";
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), want("a1", 1, {of("fpga", 2), of("dpu", 2)}))).state, OperationState::kSucceeded);
  AttachRequest more{"a1", {}, {}};
  more.placement.endpoints = {of("fpga", 1)};
  auto refused = engine_->blocking().attach(Caller::local(), more);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("may hold 2 fpga device(s); it holds 2 and this asks for 1 more"), std::string::npos) << refused.error().message;
  AttachRequest gpu{"a1", {}, {}};  // the limit binds only what it counts
  gpu.placement.gpuCount = 1;
  EXPECT_EQ(run(engine_->blocking().attach(Caller::local(), gpu)).state, OperationState::kSucceeded);
  ASSERT_EQ(run(engine_->blocking().decompose(Caller::local(), "a1")).state, OperationState::kSucceeded);
  EXPECT_EQ(run(engine_->blocking().compose(Caller::local(), want("a2", 0, {of("fpga", 2)}))).state, OperationState::kSucceeded) << "given back, counted no more";
}

}  // namespace
}  // namespace switchyard

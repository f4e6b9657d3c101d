// Machine templates (ADR 0031): the file yardd loads, checked key by key, and a template laid under a
// compose request, the request's own parts winning part by part.
#include <gtest/gtest.h>

#include "composer/daemon/template_file.h"
#include "composer/engine/machine_templates.h"

namespace switchyard {
namespace {

constexpr std::string_view kFile = R"({"templates": [
  {"name": "train-8x", "description": "8 GPUs, a NIC per pair", "gpus": 8, "p2p": "required",
   "nic": {"count": 4, "affinity": "switch", "minSpeedGbps": 400}, "nvme": {"count": 2, "minCapacityGiB": 3000},
   "labels": {"team": "ml"}, "priorityClass": "production", "lease": "8h"},
  {"name": "cache", "memoryGiB": 512},
  {"name": "inference-fpga", "gpus": 1, "endpoints": {"fpga": {"count": 1, "model": "Alveo U55C", "affinity": "switch"}}}
]})";

TEST(MachineTemplatesTest, AFileIsReadWithEveryPart) {
  auto templates = parseTemplates(kFile);
  ASSERT_TRUE(templates) << templates.error().message;
  ASSERT_EQ(templates->size(), 3u);
  const MachineTemplate& t = templates->front();
  EXPECT_EQ(t.gpus, 8);
  EXPECT_EQ(t.peerToPeer, "required");
  ASSERT_EQ(t.endpoints.size(), 2u);
  EXPECT_EQ(t.endpoints[0], (EndpointDemand{DeviceKind::kNic, 4, "", 0, Affinity::kSwitch, 400}));
  EXPECT_EQ(t.endpoints[1], (EndpointDemand{DeviceKind::kNvme, 2, "", 3000, Affinity::kDomain}));
  EXPECT_EQ(t.labels.at("team"), "ml");
  EXPECT_EQ(t.leaseSeconds, 8 * 3600);
  EXPECT_EQ(describeShape(t), "8 GPU(s) (p2p required), 4 NIC(s) >= 400 Gb/s under the GPUs' switches, 2 NVMe drive(s) >= 3000 GiB");
  EXPECT_EQ((*templates)[1].pooledMemoryGiB, 512);
  ASSERT_EQ((*templates)[2].endpoints.size(), 1u);
  EXPECT_EQ((*templates)[2].endpoints[0], (EndpointDemand{DeviceKind::kOther, 1, "Alveo U55C", 0, Affinity::kSwitch, 0, "fpga"}));
  EXPECT_EQ(describeShape((*templates)[2]), "1 GPU(s), 1 fpga(s) Alveo U55C under the GPUs' switches");
}

TEST(MachineTemplatesTest, ATypoIsAnErrorThatNamesItNeverADefault) {
  auto typo = parseTemplates(R"({"templates": [{"name": "a", "gpu": 8}]})");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("template 'a': unknown key 'gpu'"), std::string::npos) << typo.error().message;
  auto known = parseTemplates(R"({"templates": [{"name": "a", "gpus": 1, "endpoints": {"nic": {"count": 1}}}]})");
  ASSERT_FALSE(known);
  EXPECT_NE(known.error().message.find("template 'a': endpoints: 'nic' is not another class's name (nic and nvme have keys of their own"),
            std::string::npos)
      << known.error().message;
  auto nested = parseTemplates(R"({"templates": [{"name": "a", "gpus": 1, "nic": {"count": 1, "afinity": "switch"}}]})");
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().message.find("template 'a': nic: unknown key 'afinity'"), std::string::npos) << nested.error().message;
  EXPECT_FALSE(parseTemplates(R"({"templates": [{"name": "a", "gpus": 1}, {"name": "a", "gpus": 2}]})"));   // twice
  EXPECT_FALSE(parseTemplates(R"({"templates": [{"name": "Bad Name", "gpus": 1}]})"));
  EXPECT_FALSE(parseTemplates(R"({"templates": [{"name": "empty"}]})"));                                  // asks for nothing
  EXPECT_FALSE(parseTemplates(R"({"templates": [{"name": "a", "gpus": 1, "p2p": "always"}]})"));
  EXPECT_FALSE(parseTemplates(R"({"templates": [{"name": "a", "gpus": 1, "lease": "soon"}]})"));
  EXPECT_FALSE(parseTemplates(R"({"templates": [{"name": "a", "gpus": "eight"}]})"));
  EXPECT_FALSE(parseTemplates("not json"));
  EXPECT_TRUE(loadTemplates("none")->empty());
  EXPECT_FALSE(loadTemplates("/nonexistent/templates.json"));
}

TEST(MachineTemplatesTest, TheRequestsOwnPartsWinPartByPart) {
  const auto templates = *parseTemplates(kFile);
  ComposeRequest asked;
  asked.name = "job";
  asked.machineTemplate = "train-8x";
  asked.peerToPeerAsked = false;
  asked.labels = {{"team", "vision"}};
  asked.placement.endpoints = {{DeviceKind::kNic, 2, "", 0, Affinity::kDomain}};
  auto made = applyTemplate(templates, asked);
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_TRUE(made->machineTemplate.empty());
  EXPECT_EQ(made->placement.gpuCount, 8);
  EXPECT_EQ(made->placement.peerToPeer, PeerToPeer::kRequired);
  // --nic 2 replaced the template's NICs; its drives stay.
  ASSERT_EQ(made->placement.endpoints.size(), 2u);
  EXPECT_EQ(made->placement.endpoints[0].count, 2);
  EXPECT_EQ(made->placement.endpoints[1].kind, DeviceKind::kNvme);
  EXPECT_EQ(made->labels.at("team"), "vision");
  EXPECT_EQ(made->labels.at(std::string(kTemplateLabel)), "train-8x");
  EXPECT_EQ(made->priorityClass, "production");
  EXPECT_EQ(made->lease, std::chrono::hours(8));

  asked.placement.gpuCount = 4;
  asked.peerToPeerAsked = true;
  asked.placement.peerToPeer = PeerToPeer::kNone;
  asked.priorityClass = "batch";
  made = applyTemplate(templates, asked);
  EXPECT_EQ(made->placement.gpuCount, 4);
  EXPECT_EQ(made->placement.peerToPeer, PeerToPeer::kNone);
  EXPECT_EQ(made->priorityClass, "batch");

  asked.machineTemplate = "train-16x";
  auto unknown = applyTemplate(templates, asked);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
  EXPECT_NE(unknown.error().message.find("known: train-8x, cache"), std::string::npos) << unknown.error().message;
}

TEST(MachineTemplatesTest, TheExamplesAreWellFormed) {
  ASSERT_EQ(exampleTemplates().size(), 3u);
  for (const auto& t : exampleTemplates()) EXPECT_EQ(invalidTemplate(t), "") << t.name;
}

}  // namespace
}  // namespace switchyard

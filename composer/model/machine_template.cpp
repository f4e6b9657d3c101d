#include "composer/model/machine_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace switchyard {

const std::vector<MachineTemplate>& exampleTemplates() {
  static const std::vector<MachineTemplate> kExamples = [] {
    MachineTemplate train;
    train.name = "train-8x";
    train.description = "A training node: 8 GPUs under one switch, a NIC of 200 Gb/s or more beside each pair (GPUDirect RDMA) and 2 drives for checkpoints";
    train.gpus = 8;
    train.peerToPeer = "required";
    train.endpoints = {{DeviceKind::kNic, 4, "", 0, Affinity::kSwitch, 200}, {DeviceKind::kNvme, 2, "", 0, Affinity::kDomain}};
    MachineTemplate infer;
    infer.name = "infer-1x";
    infer.description = "An inference node: 1 GPU and a NIC under its switch";
    infer.gpus = 1;
    infer.endpoints = {{DeviceKind::kNic, 1, "", 0, Affinity::kSwitch}};
    MachineTemplate storage;
    storage.name = "storage-2x";
    storage.description = "A storage node: 2 NVMe drives and no GPU";
    storage.endpoints = {{DeviceKind::kNvme, 2, "", 0, Affinity::kDomain}};
    return std::vector<MachineTemplate>{train, infer, storage};
  }();
  return kExamples;
}

std::string invalidTemplate(const MachineTemplate& t) {
  const bool nameOk = !t.name.empty() && t.name.size() <= 63 && std::isalnum(static_cast<unsigned char>(t.name[0])) &&
                      std::all_of(t.name.begin(), t.name.end(), [](char c) {
                        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                      });
  if (!nameOk) return fmt::format("template name '{}': lower-case letters, digits, '-', '_' and '.', at most 63, starting with a letter or digit", t.name);
  if (t.gpus < 0 || t.gpus > 4096) return fmt::format("template '{}': gpus must be 0-4096", t.name);
  if (t.minMemoryGiB < 0 || t.pooledMemoryGiB < 0) return fmt::format("template '{}': sizes must be >= 0", t.name);
  if (t.peerToPeer != "required" && t.peerToPeer != "preferred" && t.peerToPeer != "none")
    return fmt::format("template '{}': p2p must be required, preferred or none (got '{}')", t.name, t.peerToPeer);
  if (t.leaseSeconds < 0) return fmt::format("template '{}': the lease must be >= 0", t.name);
  for (const auto& e : t.endpoints)
    if (auto why = invalidDemand(e); !why.empty()) return fmt::format("template '{}': {}", t.name, why);
  if (t.gpus == 0 && t.pooledMemoryGiB == 0 && t.endpoints.empty()) return fmt::format("template '{}' asks for nothing", t.name);
  return {};
}

std::string describeShape(const MachineTemplate& t) {
  std::vector<std::string> parts;
  if (t.gpus > 0)
    parts.push_back(fmt::format("{} GPU(s){}{}{}", t.gpus, t.model.empty() ? "" : " " + t.model,
                                t.minMemoryGiB > 0 ? fmt::format(" >= {} GiB", t.minMemoryGiB) : "",
                                t.peerToPeer == "preferred" ? "" : fmt::format(" (p2p {})", t.peerToPeer)));
  if (t.pooledMemoryGiB > 0) parts.push_back(fmt::format("{} GiB pooled memory", t.pooledMemoryGiB));
  if (!t.endpoints.empty()) parts.push_back(describe(t.endpoints));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace switchyard

// The flags that ask for GPUs (compose, attach, plan): a count, explicit devices, MIG profiles or a
// time-sliced share, with the model, memory, peer-to-peer and host constraints.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "switchyard/v1/switchyard.grpc.pb.h"

namespace yardctl {

struct GpuFlags {
  int count = 0;
  std::string model;
  int minMemory = 0;
  std::string p2p = "preferred";
  std::string host;
  std::vector<std::string> devices;
  std::vector<std::string> mig;
  double share = 0;

  void add(CLI::App* cmd, bool withHost) {
    auto* gpus = cmd->add_option("-g,--gpus", count, "Number of GPUs")->check(CLI::Range(0, 4096));
    cmd->add_option("--model", model, "Only this GPU model (see `yardctl devices`)");
    cmd->add_option("--min-memory", minMemory, "Minimum GPU memory in GiB")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--p2p", p2p, "required: all GPUs under one switch or fail; preferred: one switch if possible; none")
        ->check(CLI::IsMember({"required", "preferred", "none"}))
        ->capture_default_str();
    if (withHost) cmd->add_option("--host", host, "Use this host instead of letting the packing core choose");
    auto* deviceList = cmd->add_option("-d,--device", devices, "Use these devices instead of a count (repeatable)")->excludes(gpus);
    auto* migProfiles = cmd->add_option("--mig", mig,
                    "Fractional GPUs: MIG instances instead of whole GPUs, e.g. --mig 3g,1g,1g (profiles 1g 2g 3g 4g 7g). "
                    "A system's partly used GPUs are filled first; fresh MIG-capable GPUs are attached for the rest")
        ->delimiter(',')
        ->check(CLI::IsMember({"1g", "2g", "3g", "4g", "7g"}))
        ->excludes(gpus)
        ->excludes(deviceList);
    cmd->add_option("--gpu-share", share,
                    "A time-sliced share of one GPU instead of whole GPUs, as a fraction: --gpu-share 0.25 is a quarter of a GPU's "
                    "time (0.001-0.999). A system's share GPUs with room are filled first; otherwise a fresh GPU is bound")
        ->check(CLI::Range(0.001, 0.999))
        ->excludes(gpus)
        ->excludes(deviceList)
        ->excludes(migProfiles);  // each asks for GPUs its own way: two would leave one silently unused
  }

  [[nodiscard]] switchyard::v1::GpuRequest toProto() const {
    namespace pb = switchyard::v1;
    pb::GpuRequest r;
    r.set_count(count);
    r.set_model(model);
    r.set_min_memory_gib(minMemory);
    r.set_peer_to_peer(p2p == "required" ? pb::PEER_TO_PEER_REQUIRED : p2p == "none" ? pb::PEER_TO_PEER_NONE : pb::PEER_TO_PEER_PREFERRED);
    r.set_host(host);
    for (const auto& d : devices) r.add_device_ids(d);
    for (const auto& m : mig) r.add_mig_profiles(m);
    if (share > 0) r.set_share_milli(static_cast<int>(std::lround(share * 1000)));
    return r;
  }
};

}  // namespace yardctl

// The flags that ask for GPUs (compose, attach, plan): a count, explicit devices, MIG profiles or a
// time-sliced share, with the model, memory, peer-to-peer and host constraints; pooled memory; drives and NICs.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "composer/model/endpoint_demand.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace yardctl {

// A size in GiB: "256GiB", "256G", "1TiB", "1T", "512MiB" (rounded up to whole GiB) or a plain number of GiB.
inline std::optional<int> parseGiB(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  long long n = 0;
  if (digits == 0 || std::from_chars(text.data(), text.data() + digits, n).ec != std::errc{}) return std::nullopt;
  std::string unit = text.substr(digits);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  long long gib = 0;
  if (unit.empty() || unit == "g" || unit == "gi" || unit == "gib" || unit == "gb") gib = n;
  else if (unit == "t" || unit == "ti" || unit == "tib" || unit == "tb") gib = n * 1024;
  else if (unit == "m" || unit == "mi" || unit == "mib" || unit == "mb") gib = (n + 1023) / 1024;
  else return std::nullopt;
  if (gib <= 0 || gib > (1 << 24)) return std::nullopt;
  return static_cast<int>(gib);
}

struct GpuFlags {
  int count = 0;
  std::string model;
  int minMemory = 0;
  std::string p2p;  // empty: unsaid (preferred, or a template's)
  std::string host;
  std::vector<std::string> devices;
  std::vector<std::string> mig;
  double share = 0;
  std::string memory;  // pooled memory, e.g. 256GiB
  // Drives and NICs by count (ADR 0031).
  int nics = 0, drives = 0, nicSpeedGbps = 0;
  std::string nicModel, driveModel, driveSize;
  std::vector<std::string> affinity;  // nic:gpu=switch, nvme:gpu=domain
  std::vector<std::string> others;    // endpoints of other classes: fpga=1

  // "fpga=2": a class by name and a count; the error for people otherwise.
  static std::optional<std::pair<std::string, int>> parseOtherEndpoint(const std::string& text, std::string& error) {
    const auto eq = text.find('=');
    const std::string name = text.substr(0, eq);
    const auto kind = switchyard::parseKindName(name);
    int count = 0;
    const char* end = text.data() + text.size();
    if (eq == std::string::npos || !kind || std::from_chars(text.data() + eq + 1, end, count).ptr != end || eq + 1 == text.size()) {
      error = fmt::format("'{}' is not CLASS=COUNT (e.g. fpga=1)", text);
      return std::nullopt;
    }
    if (kind->kind != switchyard::DeviceKind::kOther) {
      error = fmt::format("'{}': ask for {} with {}", text, name,
                          kind->kind == switchyard::DeviceKind::kNic ? "--nic" : kind->kind == switchyard::DeviceKind::kNvme ? "--nvme"
                          : kind->kind == switchyard::DeviceKind::kGpu ? "--gpus" : "--memory");
      return std::nullopt;
    }
    if (count < 1 || count > switchyard::kMaxEndpointsPerDemand) {
      error = fmt::format("'{}': the count must be 1-{}", text, switchyard::kMaxEndpointsPerDemand);
      return std::nullopt;
    }
    return std::pair{name, count};
  }

  void add(CLI::App* cmd, bool withHost) {
    auto* gpus = cmd->add_option("-g,--gpus", count, "Number of GPUs")->check(CLI::Range(0, 4096));
    cmd->add_option("--model", model, "Only this GPU model (see `yardctl devices`)");
    cmd->add_option("--min-memory", minMemory, "Minimum GPU memory in GiB")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--p2p", p2p,
                    "required: all GPUs under one switch or fail; preferred (the default, unless a template says otherwise): one switch "
                    "if possible; none")
        ->check(CLI::IsMember({"required", "preferred", "none"}));
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
    cmd->add_option("--memory", memory,
                    "Pooled CXL memory besides the GPUs (or alone), e.g. 256GiB, 1TiB: whole logical devices of a memory pool under "
                    "the host's own switches, at least this much in all")
        ->check(CLI::Validator([](std::string& v) { return parseGiB(v) ? std::string() : "expected a size such as 256GiB, 1TiB or 64 (GiB)"; },
                               "SIZE"));
    addEndpoints(cmd);
  }

  void addEndpoints(CLI::App* cmd) {
    // A filter without its count would be dropped silently (a template's NICs or drives are overridden by kind, whole).
    auto* nic = cmd->add_option("--nic", nics, "NICs besides the GPUs (or alone), placed under the GPUs' switches first (see --affinity)")
                    ->check(CLI::Range(1, 64));
    cmd->add_option("--nic-model", nicModel, "Only NICs of this model (see `yardctl devices --kind nic`); needs --nic")->needs(nic);
    cmd->add_option("--nic-speed", nicSpeedGbps,
                    "Only NICs whose port runs at least this fast, in Gb/s, e.g. 400 (the SIZE column of `yardctl devices --kind nic`; a "
                    "NIC whose speed the fabric does not report never qualifies); needs --nic")
        ->check(CLI::Range(1, 100'000))
        ->needs(nic);
    auto* nvme = cmd->add_option("--nvme", drives, "NVMe drives besides the GPUs (or alone), placed under the GPUs' switches first (see --affinity)")
                     ->check(CLI::Range(1, 64));
    cmd->add_option("--nvme-size", driveSize, "Only drives of at least this size, e.g. 3.84T as 3840GiB, or 2TiB; needs --nvme")
        ->check(CLI::Validator([](std::string& v) { return parseGiB(v) ? std::string() : "expected a size such as 2TiB or 3840 (GiB)"; }, "SIZE"))
        ->needs(nvme);
    cmd->add_option("--nvme-model", driveModel, "Only drives of this model; needs --nvme")->needs(nvme);
    cmd->add_option("--endpoint", others,
                    "Endpoints of another class by name and count, besides the GPUs (or alone), e.g. --endpoint fpga=1: devices whose "
                    "kind is that class (`yardctl devices --kind fpga`), near the GPUs as NICs are. Repeatable")
        ->check(CLI::Validator(
            [](std::string& v) {
              std::string error;
              return parseOtherEndpoint(v, error) ? std::string() : error;
            },
            "CLASS=COUNT"));
    cmd->add_option("--affinity", affinity,
                    "How close drives, NICs or other endpoints must be to the GPUs: nic:gpu=switch (under the GPUs' switches, or fail), "
                    "nic:gpu=domain (anywhere the host reaches, near the GPUs first: the default); the same for nvme or a class "
                    "(fpga:gpu=switch). Repeatable")
        ->check(CLI::Validator(
            [](std::string& v) {
              std::string error;
              return switchyard::parseAffinityRule(v, error) ? std::string() : error;
            },
            "KIND:gpu=switch|domain"));
  }

  // Drives, NICs and other endpoints asked for with --nic/--nvme/--endpoint.
  void fillEndpoints(google::protobuf::RepeatedPtrField<switchyard::v1::EndpointRequest>* out) const {
    auto add = [&](const std::string& kind, int n, const std::string& which, int minGiB, int minGbps) {
      if (n <= 0) return;
      auto& e = *out->Add();
      e.set_kind(kind);
      e.set_count(n);
      e.set_model(which);
      e.set_min_capacity_gib(minGiB);
      e.set_min_speed_gbps(minGbps);
      std::string error;
      for (const auto& a : affinity)
        if (const auto rule = switchyard::parseAffinityRule(a, error); rule && switchyard::kindName(rule->kind, rule->deviceClass) == kind)
          e.set_affinity(std::string(switchyard::toString(rule->affinity)));
    };
    add("nic", nics, nicModel, 0, nicSpeedGbps);
    add("nvme", drives, driveModel, driveSize.empty() ? 0 : parseGiB(driveSize).value_or(0), 0);
    std::string error;
    for (const auto& text : others)
      if (const auto other = parseOtherEndpoint(text, error)) add(other->first, other->second, "", 0, 0);
  }

  // The memory request, when --memory was given.
  void fillMemory(switchyard::v1::MemoryRequest* out) const {
    if (auto gib = memory.empty() ? std::nullopt : parseGiB(memory)) out->set_gib(*gib);
  }
  [[nodiscard]] bool wantsMemory() const { return !memory.empty(); }

  [[nodiscard]] switchyard::v1::GpuRequest toProto() const {
    namespace pb = switchyard::v1;
    pb::GpuRequest r;
    r.set_count(count);
    r.set_model(model);
    r.set_min_memory_gib(minMemory);
    r.set_peer_to_peer(p2p == "required"    ? pb::PEER_TO_PEER_REQUIRED
                       : p2p == "none"      ? pb::PEER_TO_PEER_NONE
                       : p2p == "preferred" ? pb::PEER_TO_PEER_PREFERRED
                                            : pb::PEER_TO_PEER_UNSPECIFIED);
    r.set_host(host);
    for (const auto& d : devices) r.add_device_ids(d);
    for (const auto& m : mig) r.add_mig_profiles(m);
    if (share > 0) r.set_share_milli(static_cast<int>(std::lround(share * 1000)));
    return r;
  }
};

}  // namespace yardctl

// Machine templates: named shapes a compose starts from (`yardctl compose NAME --template train-8x`), as
// yardd loads them (--templates FILE; composer/daemon/template_file.h) or its built-in examples. A template
// says what a request by kind says (GPUs, pooled memory, drives and NICs with their affinity) and what the
// system is composed with (labels, priority class, lease). What a request sets itself replaces the
// template's part (ADR 0031).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "composer/model/endpoint_demand.h"

namespace switchyard {

struct MachineTemplate {
  std::string name;         // [a-z0-9][a-z0-9._-]*, at most 63 characters
  std::string description;  // for people
  int gpus = 0;             // whole GPUs
  std::string model;        // empty: any
  int minMemoryGiB = 0;     // per GPU
  std::string peerToPeer = "preferred";  // required, preferred, none
  int pooledMemoryGiB = 0;
  std::vector<EndpointDemand> endpoints;
  std::map<std::string, std::string> labels;
  std::string priorityClass;   // empty: the default class
  std::int64_t leaseSeconds = 0;  // 0: no lease
  friend bool operator==(const MachineTemplate&, const MachineTemplate&) = default;
};

// The label a system composed from a template carries: its template's name (usage --by label:... groups by it).
inline constexpr std::string_view kTemplateLabel = "switchyard.io/template";

// yardd's examples, offered when no --templates file is given: train-8x (8 GPUs under one switch, a NIC
// under the GPUs' switch per 2 GPUs, 2 drives), infer-1x (1 GPU, 1 NIC), storage-2x (2 drives alone).
[[nodiscard]] const std::vector<MachineTemplate>& exampleTemplates();

// What is wrong with a template on its own (name, counts, peer-to-peer, demands); empty when nothing is.
[[nodiscard]] std::string invalidTemplate(const MachineTemplate& t);

// "8 GPU(s) (p2p required), 4 NIC(s) >= 200 Gb/s under the GPUs' switches, 2 NVMe drive(s)": what it asks for, for people.
[[nodiscard]] std::string describeShape(const MachineTemplate& t);

}  // namespace switchyard

// yardd --templates FILE: the machine templates (composer/model/machine_template.h) an operator defines, in
// JSON. Every key is checked: a typo is an error that names the template and the key, never a default.
//
//   {"templates": [
//     {"name": "train-8x", "description": "8 GPUs under one switch, a NIC per pair, 2 drives",
//      "gpus": 8, "model": "H100-SXM5-80GB", "minMemoryGiB": 0, "p2p": "required", "memoryGiB": 0,
//      "nic": {"count": 4, "model": "", "affinity": "switch", "minSpeedGbps": 200},
//      "nvme": {"count": 2, "minCapacityGiB": 3000, "affinity": "domain"},
//      "endpoints": {"fpga": {"count": 1, "affinity": "switch"}},
//      "labels": {"team": "ml"}, "priorityClass": "batch", "lease": "8h"}]}
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "composer/model/error.h"
#include "composer/model/machine_template.h"

namespace switchyard {

[[nodiscard]] Result<std::vector<MachineTemplate>> parseTemplates(std::string_view json);
// "none": no templates; otherwise the file, parsed ("--templates PATH: ..." on any error).
[[nodiscard]] Result<std::vector<MachineTemplate>> loadTemplates(const std::filesystem::path& path);

}  // namespace switchyard

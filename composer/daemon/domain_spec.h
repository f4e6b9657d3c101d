// yardd --domain NAME=DRIVER[,KEY=VALUE...]: one fabric domain (one switch manager) of a pool that has
// several. Parsing only; yardd_main opens the drivers.
//
//   --domain rack-a=simulated,topology=/etc/switchyard/rack-a.json
//   --domain rack-b=simulated,generate-gpus=64,latency-ms=5
//   --domain cxl-west=redfish,url=https://fm-west:8443,fabric=CXL,user=admin,password-file=/etc/switchyard/fm.pw,ca=/etc/switchyard/fm-ca.pem
//
// simulated keys: topology (JSON file) or generate-gpus (ids prefixed "NAME-"), state (binding table file;
// default <state-dir>/sim-fabric-NAME.json; none: memory only), latency-ms.
// redfish keys: url (required), fabric (default CXL), user, password-file, ca.
// switchtec keys: endpoint (required). cxl keys: endpoint (required), dialect (spec, or jackrabbit for cse).
// qemu keys: pool (required: the VMs and device pool file, docs/qemu.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "composer/model/error.h"

namespace switchyard {

struct DomainSpec {
  std::string name;
  std::string driver;  // simulated | redfish | switchtec | cxl | qemu
  // simulated
  std::filesystem::path topology;
  int generateGpus = 0;
  std::optional<std::string> state;  // unset: the default file; "none": memory only
  int latencyMs = 0;
  // redfish
  std::string url;
  std::string fabric = "CXL";
  std::string user;
  std::filesystem::path passwordFile;
  std::filesystem::path ca;
  // switchtec, cxl
  std::string endpoint;
  // cxl
  std::string dialect = "spec";
  // qemu
  std::filesystem::path pool;
};

// Checks the syntax and each key for its driver; whether files exist is left to opening the driver.
[[nodiscard]] Result<DomainSpec> parseDomainSpec(const std::string& text);

}  // namespace switchyard

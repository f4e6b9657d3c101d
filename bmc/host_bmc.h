// A client for a host's BMC over Redfish: what the host is (model, processors, memory, PCIe devices) and
// its power, with ComputerSystem.Reset for hosts that only see a newly bound device after a reset
// (cold-plug). It logs in with a Redfish session (POST SessionService/Sessions, X-Auth-Token) and logs out
// when destroyed; https verifies the BMC's certificate (the system's store, or a pinned CA).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "composer/model/clock.h"
#include "composer/model/error.h"
#include "net/redfish_client.h"

namespace switchyard::bmc {

struct HostBmcOptions {
  std::string url;       // https://BMC[:PORT] (http:// only on a trusted network)
  std::string user;
  std::string password;
  std::string caFile;    // trust this CA (PEM) for https instead of the system's store
  std::string system;    // the ComputerSystem id; empty: the BMC must manage exactly one
  Duration timeout = std::chrono::seconds(10);  // per request
};

struct PcieDeviceInfo {
  std::string id;
  std::string name;
  std::string manufacturer;
  std::string deviceType;
};

struct HostInventory {
  std::string systemId;
  std::string model;
  std::string powerState;  // On, Off, PoweringOn, PoweringOff, Paused
  int processors = 0;
  double memoryGiB = 0;
  std::vector<PcieDeviceInfo> pcieDevices;
};

class HostBmc {
 public:
  [[nodiscard]] static Result<std::unique_ptr<HostBmc>> connect(const HostBmcOptions& options);
  ~HostBmc();  // logs out
  HostBmc(const HostBmc&) = delete;
  HostBmc& operator=(const HostBmc&) = delete;

  [[nodiscard]] Result<HostInventory> inventory();
  [[nodiscard]] Result<std::string> powerState();
  // ComputerSystem.Reset with a ResetType the BMC lists as allowed (kInvalidArgument otherwise).
  [[nodiscard]] Result<void> reset(const std::string& resetType = "ForceRestart");

 private:
  HostBmc(HostBmcOptions options, redfish::Client client) : options_(std::move(options)), client_(std::move(client)) {}
  [[nodiscard]] redfish::Deadline deadline() const;
  HostBmcOptions options_;
  redfish::Client client_;
  std::string systemUri_;
  std::string sessionUri_;
};

}  // namespace switchyard::bmc

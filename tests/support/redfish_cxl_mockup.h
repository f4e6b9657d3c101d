// A Redfish mockup of a CXL fabric of any size, in the short form the Redfish emulator serves: what a
// benchmark or test needs beyond DMTF's multi-switch mockup (3 hosts, 5 targets). Each switch CXL<s> has
// its own hosts (upstream ports U<h>, each with a VirtualCXLSwitch and an initiator endpoint linked to
// ComputerSystem host<n>) and GPUs (downstream ports D<g>, each with a target endpoint whose processor is
// an "H100"); no zones. The service root offers $expand (ExpandQuery.NoLinks, 3 levels) unless told not to.
#pragma once

#include <filesystem>

#include "composer/model/error.h"

namespace switchyard::testing {

struct CxlMockupShape {
  int switches = 4;
  int hostsPerSwitch = 4;
  int gpusPerSwitch = 16;
  // After the GPUs, downstream ports whose target endpoints connect a NetworkController ("ConnectX-7") or a
  // Drive ("PM1743"), with ids T<s>-<n> numbered on from the GPUs'.
  int nicsPerSwitch = 0;
  int drivesPerSwitch = 0;
  bool expand = true;  // ProtocolFeaturesSupported.ExpandQuery in the service root
};

// Writes the mockup's index.json files under `folder` (created).
[[nodiscard]] Result<void> writeCxlMockup(const std::filesystem::path& folder, const CxlMockupShape& shape);

}  // namespace switchyard::testing

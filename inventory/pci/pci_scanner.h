// Enumerates a host's PCI functions with libpci. The source is the live bus through sysfs (the root is
// configurable, so a test can point it at a fake tree) or a recorded `lspci -xxxx` dump (libpci's "dump"
// access method). What config space cannot say (the driver bound, the NUMA node) is read from the sysfs
// tree under the same root; a dump with no tree beside it simply has none.
//
// libpci reports fatal errors (a malformed dump, an unreadable sysfs file) through a callback that must
// not return; the scanner turns those into an INVALID_ARGUMENT / UNAVAILABLE Result and frees what
// libpci had allocated, so bad input never ends the process.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "composer/model/error.h"
#include "inventory/pci/pci_function.h"

namespace switchyard {

struct PciSource {
  // The tree that holds bus/pci/devices/<address>/...: "/sys" when empty for the live bus. With a dump,
  // driver and NUMA node are read from it only when it is set (the live /sys says nothing about a dump).
  std::filesystem::path sysfsRoot;
  std::filesystem::path dumpFile;  // when set, config space comes from this `lspci -xxxx` dump
};

class PciScanner {
 public:
  explicit PciScanner(PciSource source) : source_(std::move(source)) {}

  // Every function, in address order, with its parent chain filled in.
  [[nodiscard]] Result<std::vector<PciFunction>> scan() const;
  [[nodiscard]] const PciSource& source() const { return source_; }

 private:
  [[nodiscard]] std::filesystem::path liveRoot() const;

  PciSource source_;
};

// The function at `address` in a scan, or nullptr.
[[nodiscard]] const PciFunction* findFunction(const std::vector<PciFunction>& functions, const PciAddress& address);

}  // namespace switchyard

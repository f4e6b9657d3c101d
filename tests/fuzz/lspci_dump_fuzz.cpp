// Fuzz target: arbitrary bytes as an `lspci -xxxx` dump, read by the host agent's PCI scanner (libpci's
// dump method, then our parent-chain and capability decoding). Whatever the bytes, the scan returns a
// list or an error, never crashes, hangs or leaks; every function it returns has a parent chain that
// ends (no bridge appears twice in it).
//
// Built like the Redfish target (tests/CMakeLists.txt): a libFuzzer binary in the fuzz build, and a replay
// of the committed corpus (tests/fuzz/corpus/lspci) in every build.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "inventory/pci/pci_scanner.h"

namespace {

// libpci reads dumps from a file: one per process, rewritten for each input.
const std::filesystem::path& dumpFile() {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("switchyard-lspci-fuzz-" + std::to_string(::getpid()) + ".lspci");
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(dumpFile(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto scanned = switchyard::PciScanner({.dumpFile = dumpFile()}).scan();
  if (!scanned) {
    if (scanned.error().message.empty()) std::abort();  // an error must say what was wrong
    return 0;
  }
  for (const auto& f : *scanned) {
    std::set<switchyard::PciAddress> seen;
    for (const auto& parent : f.parents)
      if (!seen.insert(parent).second) std::abort();
  }
  return 0;
}

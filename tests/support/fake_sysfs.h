// A sysfs tree for host-side tests, built from a recorded `lspci -xxxx` dump: for each function
// <root>/bus/pci/devices/<address>/ with its binary `config` (what libpci's sysfs method reads), a
// `driver` link into <root>/bus/pci/drivers/<name>/ when one is given, and `numa_node`. The agent's
// writes (rescan, remove, reset, driver unbind) land in files here, where the test can read them back.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace switchyard::testing {

struct FakeFunction {
  std::string address;  // "0000:12:00.0"
  std::vector<unsigned char> config;
};

// The functions of a dump, in its order; lines that are neither a header nor "offset: bytes" are skipped.
inline std::vector<FakeFunction> readDump(const std::filesystem::path& dump) {
  std::ifstream in(dump);
  std::vector<FakeFunction> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > 13 && line[4] == ':' && line[7] == ':' && line[10] == '.') {
      out.push_back({line.substr(0, 12), {}});
    } else if (!out.empty() && line.find(": ") != std::string::npos) {
      std::istringstream bytes(line.substr(line.find(": ") + 2));
      std::string byte;
      while (bytes >> byte) out.back().config.push_back(static_cast<unsigned char>(std::stoul(byte, nullptr, 16)));
    }
  }
  return out;
}

inline void writeFile(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// Adds one function to a tree, as the kernel does when it enumerates a device: whole, so that a reader
// polling the tree (the agent after a rescan) never sees it half made. It is built beside devices/ and
// renamed into place (the driver link is relative, so it resolves the same there).
inline void writeFakeFunction(const std::filesystem::path& root, const FakeFunction& f, const std::string& driver = "", int numaNode = 0) {
  const auto pci = root / "bus/pci";
  const auto staging = pci / "staging" / f.address;
  std::filesystem::create_directories(staging);
  std::ofstream(staging / "config", std::ios::binary).write(reinterpret_cast<const char*>(f.config.data()), static_cast<std::streamsize>(f.config.size()));
  writeFile(staging / "numa_node", std::to_string(numaNode) + "\n");
  writeFile(staging / "remove", "");
  writeFile(staging / "reset", "");  // the kernel offers a reset (FLR or bus) for the function
  if (!driver.empty()) {
    writeFile(pci / "drivers" / driver / "unbind", "");
    std::filesystem::create_directory_symlink(std::filesystem::path("../../drivers") / driver, staging / "driver");
  }
  std::filesystem::create_directories(pci / "devices");
  std::filesystem::rename(staging, pci / "devices" / f.address);
}

// Builds the tree; `drivers` maps an address to the driver bound to it, `numaNode` applies to all;
// functions listed in `absent` are left out (not enumerated yet).
inline void writeFakeSysfs(const std::filesystem::path& root, const std::filesystem::path& dump,
                           const std::map<std::string, std::string>& drivers = {}, int numaNode = 0,
                           const std::vector<std::string>& absent = {}) {
  std::filesystem::create_directories(root / "bus/pci/devices");
  writeFile(root / "bus/pci/rescan", "");
  for (const auto& f : readDump(dump)) {
    if (std::find(absent.begin(), absent.end(), f.address) != absent.end()) continue;
    auto it = drivers.find(f.address);
    writeFakeFunction(root, f, it == drivers.end() ? "" : it->second, numaNode);
  }
}

}  // namespace switchyard::testing

#include "inventory/pci/pci_scanner.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <system_error>

extern "C" {
#include <pci/pci.h>
}

namespace switchyard {

namespace {

// What the guarded phase copies out of libpci: plain data only, so that the longjmp out of libpci's
// error callback skips no destructor (the C++ rule for setjmp/longjmp).
struct RawFunction {
  unsigned domain, bus, device, function;
  unsigned vendor, deviceId, subsystemVendor, subsystem, classCode, revision;
  unsigned headerType, secondaryBus, subordinateBus;
  int expFlags;  // the PCIe capability's flags word, -1 when absent
  unsigned linkStatus;
  bool hasSerial;
  std::uint64_t serial;
};

struct Collected {
  std::vector<RawFunction> functions;
  char error[256] = {};
};

thread_local std::jmp_buf* tEscape = nullptr;
thread_local Collected* tCollected = nullptr;

// GNU noreturn, as libpci declares the callback (clang makes it part of the function type).
extern "C" __attribute__((noreturn)) void onPciError(char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(tCollected->error, sizeof tCollected->error, format, args);
  va_end(args);
  std::longjmp(*tEscape, 1);
}

extern "C" void onPciMessage(char*, ...) {}  // warnings and debug output: the scan reports what it found

void collect(pci_access* access, Collected* out) {
  pci_init(access);
  pci_scan_bus(access);
  for (pci_dev* d = access->devices; d != nullptr; d = d->next) {
    pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_CLASS | PCI_FILL_CLASS_EXT | PCI_FILL_SUBSYS | PCI_FILL_CAPS | PCI_FILL_EXT_CAPS);
    RawFunction f{};
    f.domain = static_cast<unsigned>(d->domain);
    f.bus = d->bus;
    f.device = d->dev;
    f.function = d->func;
    f.vendor = d->vendor_id;
    f.deviceId = d->device_id;
    f.classCode = (static_cast<unsigned>(d->device_class) << 8) | pci_read_byte(d, PCI_CLASS_PROG);
    f.revision = pci_read_byte(d, PCI_REVISION_ID);
    f.headerType = pci_read_byte(d, PCI_HEADER_TYPE) & 0x7Fu;
    if (f.headerType == PCI_HEADER_TYPE_NORMAL) {
      f.subsystemVendor = pci_read_word(d, PCI_SUBSYSTEM_VENDOR_ID);
      f.subsystem = pci_read_word(d, PCI_SUBSYSTEM_ID);
    } else if (f.headerType == PCI_HEADER_TYPE_BRIDGE) {
      f.secondaryBus = pci_read_byte(d, PCI_SECONDARY_BUS);
      f.subordinateBus = pci_read_byte(d, PCI_SUBORDINATE_BUS);
    }
    f.expFlags = -1;
    if (pci_cap* exp = pci_find_cap(d, PCI_CAP_ID_EXP, PCI_CAP_NORMAL)) {
      const int at = static_cast<int>(exp->addr);
      f.expFlags = pci_read_word(d, at + PCI_EXP_FLAGS);
      f.linkStatus = pci_read_word(d, at + PCI_EXP_LNKSTA);
    }
    if (pci_cap* dsn = pci_find_cap(d, PCI_EXT_CAP_ID_DSN, PCI_CAP_EXTENDED)) {
      f.hasSerial = true;
      const int at = static_cast<int>(dsn->addr);
      f.serial = (static_cast<std::uint64_t>(pci_read_long(d, at + 8)) << 32) | pci_read_long(d, at + 4);
    }
    out->functions.push_back(f);
  }
}

// Runs collect() with libpci's fatal errors turned into a false return; the caller frees `access`.
bool collectGuarded(pci_access* access, Collected* out) {
  std::jmp_buf escape;
  tEscape = &escape;
  tCollected = out;
  if (setjmp(escape) != 0) return false;
  collect(access, out);
  return true;
}

PciePortType portTypeOf(int expFlags) {
  if (expFlags < 0) return PciePortType::kNone;
  switch ((expFlags & PCI_EXP_FLAGS_TYPE) >> 4) {
    case PCI_EXP_TYPE_ENDPOINT:
    case PCI_EXP_TYPE_LEG_END:
    case PCI_EXP_TYPE_ROOT_INT_EP: return PciePortType::kEndpoint;
    case PCI_EXP_TYPE_ROOT_PORT: return PciePortType::kRootPort;
    case PCI_EXP_TYPE_UPSTREAM: return PciePortType::kSwitchUpstream;
    case PCI_EXP_TYPE_DOWNSTREAM: return PciePortType::kSwitchDownstream;
    default: return PciePortType::kOther;
  }
}

std::string readLine(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The driver bound, the identity it reports and the NUMA node, from <root>/bus/pci/devices/<address>/;
// absent files leave defaults.
void readSysfsAttributes(const std::filesystem::path& root, PciFunction& f) {
  if (root.empty()) return;
  const auto dir = root / "bus/pci/devices" / toString(f.address);
  std::error_code ec;
  const auto target = std::filesystem::read_symlink(dir / "driver", ec);
  if (!ec) f.driver = target.filename().string();
  // The driver's identity of the device: an NVMe controller's serial (padded with spaces), a NIC's MAC.
  for (const auto& [sub, attribute] : {std::pair{"nvme", "serial"}, std::pair{"net", "address"}}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir / sub, ec)) {
      auto value = readLine(entry.path() / attribute);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
      if (!value.empty()) {
        f.kernelSerial = value;
        break;
      }
    }
    ec.clear();
    if (!f.kernelSerial.empty()) break;
  }
  const auto numa = readLine(dir / "numa_node");
  int node = -1;
  if (!numa.empty() && std::from_chars(numa.data(), numa.data() + numa.size(), node).ec == std::errc()) f.numaNode = node;
}

// Each function's bridges, nearest first, from the bridges' secondary bus numbers.
void fillParents(std::vector<PciFunction>& functions) {
  std::map<std::pair<std::uint32_t, std::uint8_t>, PciAddress> bridgeToBus;  // (domain, secondary bus) -> bridge
  for (const auto& f : functions)
    if (f.bridge && f.secondaryBus > f.address.bus) bridgeToBus.emplace(std::pair{f.address.domain, f.secondaryBus}, f.address);
  for (auto& f : functions) {
    auto bus = f.address.bus;
    // A chain can be at most 255 deep (each bridge's secondary bus is above its own bus): the bound stops
    // a malformed dump whose bus numbers loop.
    for (int depth = 0; depth < 256; ++depth) {
      auto it = bridgeToBus.find({f.address.domain, bus});
      if (it == bridgeToBus.end()) break;
      f.parents.push_back(it->second);
      bus = it->second.bus;
    }
  }
}

}  // namespace

Result<std::vector<PciFunction>> PciScanner::scan() const {
  std::unique_ptr<pci_access, decltype(&pci_cleanup)> access(pci_alloc(), &pci_cleanup);
  if (!access) return fail(Code::kInternal, "libpci: cannot allocate its access structure");
  access->error = &onPciError;
  access->warning = &onPciMessage;
  access->debug = &onPciMessage;
  access->buscentric = 1;  // ids and class from config space: a tree needs only each function's config file
  std::string param;  // libpci keeps its own copy of parameter values
  if (!source_.dumpFile.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(source_.dumpFile, ec))
      return fail(Code::kNotFound, fmt::format("PCI dump {} does not exist or is not a file", source_.dumpFile.string()));
    access->method = PCI_ACCESS_DUMP;
    param = source_.dumpFile.string();
    pci_set_param(access.get(), const_cast<char*>("dump.name"), param.data());
  } else {
    // libpci stops (and leaks what it allocated) at a directory entry that is not an address; say so first.
    const auto devices = liveRoot() / "bus/pci/devices";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(devices, ec))
      if (!parsePciAddress(entry.path().filename().string()))
        return fail(Code::kUnavailable, fmt::format("reading {}: entry '{}' is not a PCI address", devices.string(), entry.path().filename().string()));
    if (ec) return fail(Code::kUnavailable, fmt::format("reading {}: {}", devices.string(), ec.message()));
    access->method = PCI_ACCESS_SYS_BUS_PCI;
    param = (liveRoot() / "bus/pci").string();
    pci_set_param(access.get(), const_cast<char*>("sysfs.path"), param.data());
  }

  auto collected = std::make_unique<Collected>();
  if (!collectGuarded(access.get(), collected.get())) {
    const auto where = source_.dumpFile.empty() ? (liveRoot() / "bus/pci").string() : source_.dumpFile.string();
    return fail(source_.dumpFile.empty() ? Code::kUnavailable : Code::kInvalidArgument, fmt::format("reading {}: {}", where, collected->error));
  }

  std::vector<PciFunction> out;
  out.reserve(collected->functions.size());
  for (const auto& raw : collected->functions) {
    PciFunction f;
    f.address = {raw.domain, static_cast<std::uint8_t>(raw.bus), static_cast<std::uint8_t>(raw.device), static_cast<std::uint8_t>(raw.function)};
    f.vendorId = static_cast<std::uint16_t>(raw.vendor);
    f.deviceId = static_cast<std::uint16_t>(raw.deviceId);
    f.subsystemVendorId = static_cast<std::uint16_t>(raw.subsystemVendor);
    f.subsystemId = static_cast<std::uint16_t>(raw.subsystem);
    f.classCode = raw.classCode;
    f.revision = static_cast<std::uint8_t>(raw.revision);
    f.portType = portTypeOf(raw.expFlags);
    if (raw.expFlags >= 0) {
      f.linkGeneration = static_cast<int>(raw.linkStatus & PCI_EXP_LNKSTA_SPEED);
      f.linkWidth = static_cast<int>((raw.linkStatus & PCI_EXP_LNKSTA_WIDTH) >> 4);
    }
    if (raw.hasSerial) f.serialNumber = raw.serial;
    f.bridge = raw.headerType == PCI_HEADER_TYPE_BRIDGE;
    f.secondaryBus = static_cast<std::uint8_t>(raw.secondaryBus);
    f.subordinateBus = static_cast<std::uint8_t>(raw.subordinateBus);
    readSysfsAttributes(source_.dumpFile.empty() ? liveRoot() : source_.sysfsRoot, f);
    out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(), [](const PciFunction& a, const PciFunction& b) { return a.address < b.address; });
  // A dump may name one address twice; libpci keeps both. The first one wins, as in lspci's listing.
  out.erase(std::unique(out.begin(), out.end(), [](const PciFunction& a, const PciFunction& b) { return a.address == b.address; }), out.end());
  fillParents(out);
  return out;
}

std::filesystem::path PciScanner::liveRoot() const { return source_.sysfsRoot.empty() ? std::filesystem::path("/sys") : source_.sysfsRoot; }

const PciFunction* findFunction(const std::vector<PciFunction>& functions, const PciAddress& address) {
  auto it = std::lower_bound(functions.begin(), functions.end(), address, [](const PciFunction& f, const PciAddress& a) { return f.address < a; });
  return it != functions.end() && it->address == address ? &*it : nullptr;
}

}  // namespace switchyard

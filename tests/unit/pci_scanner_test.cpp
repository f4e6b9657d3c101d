// Host-side PCI discovery: libpci over recorded dumps, over a fake sysfs tree, over this machine's own
// bus, and against bad input; lspci (an independent decoder of the same dumps) is the cross-check.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>

#include "inventory/pci/pci_scanner.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"

namespace switchyard {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests/data/pci";

std::vector<PciFunction> scanDump(const std::string& name, std::filesystem::path sysfs = {}) {
  auto scanned = PciScanner({.sysfsRoot = std::move(sysfs), .dumpFile = kFixtures / name}).scan();
  EXPECT_TRUE(scanned) << scanned.error().message;
  return scanned ? *scanned : std::vector<PciFunction>{};
}

PciAddress at(std::string_view text) { return parsePciAddress(text).value(); }

TEST(PciAddressTest, ParsesAndPrintsTheSysfsForm) {
  EXPECT_EQ(toString(at("0000:3b:00.1")), "0000:3b:00.1");
  EXPECT_EQ(toString(at("3b:1f.7")), "0000:3b:1f.7");
  for (const char* bad : {"", "3b:00", "0000:3b:00.8", "3b:20.0", "zz:00.0", "00000:3b:00.0", "0000:3b:00.0 ", "+0:00.0"})
    EXPECT_FALSE(parsePciAddress(bad)) << bad;
}

TEST(PciAddressTest, SerialNumbersRoundTripInLspciForm) {
  EXPECT_EQ(formatSerialNumber(0x48B02DFFFFC12D02ULL), "48-b0-2d-ff-ff-c1-2d-02");
  EXPECT_EQ(parseSerialNumber("48-b0-2d-ff-ff-c1-2d-02"), 0x48B02DFFFFC12D02ULL);
  EXPECT_FALSE(parseSerialNumber("48-b0-2d-ff-ff-c1-2d"));
  EXPECT_FALSE(parseSerialNumber("48:b0:2d:ff:ff:c1:2d:02"));
}

TEST(PciScannerTest, AGpuBehindASwitchIsFoundWithItsIdsSerialLinkAndBridges) {
  const auto functions = scanDump("gpu-host-2sw.lspci");
  ASSERT_EQ(functions.size(), 24u);
  const PciFunction* gpu = findFunction(functions, at("0000:12:00.0"));
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->vendorId, 0x10de);
  EXPECT_EQ(gpu->deviceId, 0x2330);
  EXPECT_EQ(gpu->subsystemVendorId, 0x10de);
  EXPECT_EQ(gpu->subsystemId, 0x16c1);
  EXPECT_EQ(gpu->classCode, 0x030200u);
  EXPECT_TRUE(gpu->isGpu());
  EXPECT_EQ(gpu->portType, PciePortType::kEndpoint);
  EXPECT_EQ(gpu->linkGeneration, 5);
  EXPECT_EQ(gpu->linkWidth, 16);
  ASSERT_TRUE(gpu->serialNumber);
  EXPECT_EQ(formatSerialNumber(*gpu->serialNumber), "48-b0-2d-ff-ff-c1-2d-02");
  // Downstream port, the switch's upstream port, the root port.
  ASSERT_EQ(gpu->parents.size(), 3u);
  EXPECT_EQ(toString(gpu->parents[0]), "0000:11:00.0");
  EXPECT_EQ(toString(gpu->parents[1]), "0000:10:00.0");
  EXPECT_EQ(toString(gpu->parents[2]), "0000:00:01.0");
  EXPECT_EQ(findFunction(functions, gpu->parents[1])->portType, PciePortType::kSwitchUpstream);
  EXPECT_EQ(findFunction(functions, gpu->parents[2])->portType, PciePortType::kRootPort);
  // With no sysfs tree beside the dump, nothing is said about drivers or NUMA.
  EXPECT_EQ(gpu->driver, "");
  EXPECT_EQ(gpu->numaNode, -1);

  const PciFunction* nvme = findFunction(functions, at("0000:26:00.0"));
  ASSERT_NE(nvme, nullptr);
  EXPECT_EQ(nvme->classCode, 0x010802u);
  EXPECT_EQ(nvme->linkWidth, 4);
  EXPECT_EQ(toString(nvme->parents.back()), "0000:00:02.0");
}

// lspci decodes the same dump with its own code; every serial number and negotiated link it prints
// must be what the scanner read.
// lspci -vv of a dump: each function's serial number and link, as lspci decodes them; empty without lspci.
struct LspciReading {
  std::map<std::string, std::string> serials, links;
  bool ran = false;
};

LspciReading readWithLspci(const std::filesystem::path& dump) {
  std::unique_ptr<FILE, decltype(&pclose)> lspci(popen(("lspci -D -vv -F " + dump.string() + " 2>/dev/null").c_str(), "r"), &pclose);
  LspciReading reading;
  if (!lspci) return reading;
  std::string current, text;
  std::array<char, 512> buffer{};
  while (fgets(buffer.data(), buffer.size(), lspci.get())) text += buffer.data();
  reading.ran = !text.empty();
  std::istringstream lines(text);
  std::string line;
  const std::regex header(R"(^([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) )"), serial(R"(Device Serial Number ([0-9a-f-]+))"),
      link(R"(LnkSta:\s+Speed ([0-9.]+)GT/s[^,]*, Width x([0-9]+))");
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, header)) current = m[1];
    else if (std::regex_search(line, m, serial)) reading.serials[current] = m[1];
    else if (std::regex_search(line, m, link)) reading.links[current] = std::string(m[1]) + " GT/s x" + std::string(m[2]);
  }
  return reading;
}

// The scanner and lspci agree on every function's serial number and link (none where lspci prints none).
void expectAgreesWithLspci(const std::string& name, std::size_t functionCount, std::size_t linkCount) {
  const auto reading = readWithLspci(kFixtures / name);
  if (!reading.ran) GTEST_SKIP() << "lspci (Debian pciutils) is not installed: ./setup.sh installs it";
  const auto functions = scanDump(name);
  ASSERT_EQ(functions.size(), functionCount);
  EXPECT_EQ(reading.links.size(), linkCount);
  for (const auto& f : functions) {
    const auto address = toString(f.address);
    const auto serial = reading.serials.find(address);
    const auto link = reading.links.find(address);
    EXPECT_EQ(f.serialNumber ? formatSerialNumber(*f.serialNumber) : "", serial == reading.serials.end() ? "" : serial->second) << address;
    EXPECT_EQ(f.linkWidth ? linkSpeedText(f.linkGeneration) + " x" + std::to_string(f.linkWidth) : "",
              link == reading.links.end() ? "" : link->second)
        << address;
  }
}

TEST(PciScannerTest, AgreesWithLspciOnEveryFunction) { expectAgreesWithLspci("gpu-host-64fn.lspci", 64, 64); }

// Recorded on the lent H200 machine (tests/data/pci/README.md): six virtio functions without a PCI Express
// capability and the GPU, whose serial number sits at 0x2f0 behind Null extended capabilities.
TEST(PciScannerTest, AgreesWithLspciOnTheRecordedH200Machine) { expectAgreesWithLspci("h200-vm.lspci", 7, 1); }

TEST(PciScannerTest, TheRecordedH200ReadsAsTheGpuItIs) {
  const auto functions = scanDump("h200-vm.lspci");
  ASSERT_EQ(functions.size(), 7u);
  const auto& gpu = functions.back();
  EXPECT_EQ(toString(gpu.address), "0000:00:06.0");
  EXPECT_EQ(gpu.vendorId, 0x10de);
  EXPECT_EQ(gpu.deviceId, 0x2335) << "H200 SXM 141GB";
  EXPECT_EQ(gpu.classCode, 0x030200u) << "a 3D controller, not a VGA one";
  ASSERT_TRUE(gpu.serialNumber);
  EXPECT_EQ(formatSerialNumber(*gpu.serialNumber), "49-42-14-90-bb-2d-b0-48");
  EXPECT_EQ(linkSpeedText(gpu.linkGeneration), "32 GT/s");
  EXPECT_EQ(gpu.linkWidth, 16);
  EXPECT_TRUE(gpu.parents.empty()) << "the VM puts it on the root bus";
}

TEST(PciScannerTest, AFakeSysfsTreeGivesDriversAndNumaNodes) {
  testing::TempDir dir;
  testing::writeFakeSysfs(dir.path(), kFixtures / "gpu-host-2sw.lspci", {{"0000:12:00.0", "nvidia"}, {"0000:26:00.0", "nvme"}}, 1);
  auto scanned = PciScanner({.sysfsRoot = dir.path()}).scan();
  ASSERT_TRUE(scanned) << scanned.error().message;
  ASSERT_EQ(scanned->size(), 24u);
  const PciFunction* gpu = findFunction(*scanned, at("0000:12:00.0"));
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->driver, "nvidia");
  EXPECT_EQ(gpu->numaNode, 1);
  EXPECT_EQ(formatSerialNumber(gpu->serialNumber.value()), "48-b0-2d-ff-ff-c1-2d-02");
  EXPECT_EQ(gpu->parents.size(), 3u);
  EXPECT_EQ(findFunction(*scanned, at("0000:13:00.0"))->driver, "");
  EXPECT_EQ(findFunction(*scanned, at("0000:26:00.0"))->driver, "nvme");
}

// The real bus of the machine running the tests (whatever it has; a container may have none).
TEST(PciScannerTest, TheLiveBusMatchesSysfs) {
  const std::filesystem::path devices = "/sys/bus/pci/devices";
  if (!std::filesystem::is_directory(devices)) GTEST_SKIP() << devices << " does not exist here";
  auto scanned = PciScanner({}).scan();
  ASSERT_TRUE(scanned) << scanned.error().message;
  std::size_t listed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(devices)) {
    ++listed;
    const auto* f = findFunction(*scanned, parsePciAddress(entry.path().filename().string()).value());
    ASSERT_NE(f, nullptr) << entry.path();
    std::ifstream vendor(entry.path() / "vendor");
    unsigned id = 0;
    vendor >> std::hex >> id;
    EXPECT_EQ(f->vendorId, id) << entry.path();
  }
  EXPECT_EQ(scanned->size(), listed);
}

TEST(PciScannerTest, TheRecordedVirtualMachineDumpReads) {
  const auto functions = scanDump("vm-virtio-2vcpu.lspci");
  ASSERT_EQ(functions.size(), 6u);
  EXPECT_EQ(functions[0].vendorId, 0x8086);
  EXPECT_EQ(functions[3].vendorId, 0x1af4);  // virtio
  for (const auto& f : functions) EXPECT_TRUE(f.parents.empty());
}

TEST(PciScannerTest, MalformedDumpsAreClearErrors) {
  testing::TempDir dir;
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  };
  const auto scan = [](const std::filesystem::path& dump) { return PciScanner({.dumpFile = dump}).scan(); };

  auto missing = scan(dir / "absent.lspci");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);

  auto malformed = scan(write("bad.lspci", "00:01.0 bridge\n00: 86 80 zz 35\n"));
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.error().code, Code::kInvalidArgument);
  EXPECT_NE(malformed.error().message.find("Malformed"), std::string::npos) << malformed.error().message;

  auto huge = scan(write("offset.lspci", "00:01.0 bridge\n1000: 00 00\n"));
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("4096"), std::string::npos) << huge.error().message;

  auto unterminated = scan(write("long.lspci", "00:01.0 " + std::string(400, 'x')));
  ASSERT_FALSE(unterminated);

  // After all of that the scanner still works.
  EXPECT_EQ(scanDump("gpu-host-2sw.lspci").size(), 24u);
}

// sysfs content that is not what the kernel writes: a truncated config file, a NUMA node that is not a
// number, an entry that is not an address, a missing tree. What can be read is read for what it is; a tree
// libpci cannot walk is an error that names the problem.
TEST(PciScannerTest, MalformedSysfsContentIsReadForWhatItIsOrRefused) {
  testing::TempDir dir;
  testing::writeFakeSysfs(dir.path(), kFixtures / "gpu-host-2sw.lspci", {{"0000:12:00.0", "nvidia"}});
  const auto gpu = dir.path() / "bus/pci/devices/0000:12:00.0";
  testing::writeFile(gpu / "numa_node", "not-a-number\n");
  testing::writeFile(dir.path() / "bus/pci/devices/0000:13:00.0/config", "short");  // 5 bytes of config space
  auto scanned = PciScanner({.sysfsRoot = dir.path()}).scan();
  ASSERT_TRUE(scanned) << scanned.error().message;
  ASSERT_EQ(scanned->size(), 24u);
  const PciFunction* gpuFunction = findFunction(*scanned, at("0000:12:00.0"));
  ASSERT_NE(gpuFunction, nullptr);
  EXPECT_EQ(gpuFunction->numaNode, -1) << "a NUMA node that is not a number is unknown";
  EXPECT_EQ(gpuFunction->driver, "nvidia");
  // The truncated function is listed with what its 5 bytes say, and nothing it could be matched by: no
  // class a GPU has, no PCIe capability, no serial number.
  const PciFunction* truncated = findFunction(*scanned, at("0000:13:00.0"));
  ASSERT_NE(truncated, nullptr);
  EXPECT_FALSE(truncated->isGpu());
  EXPECT_EQ(truncated->portType, PciePortType::kNone);
  EXPECT_FALSE(truncated->serialNumber);

  std::filesystem::create_directories(dir.path() / "bus/pci/devices/garbage");
  auto withGarbage = PciScanner({.sysfsRoot = dir.path()}).scan();
  ASSERT_FALSE(withGarbage);
  EXPECT_EQ(withGarbage.error().code, Code::kUnavailable);
  EXPECT_NE(withGarbage.error().message.find("garbage"), std::string::npos) << withGarbage.error().message;

  auto missing = PciScanner({.sysfsRoot = dir.path() / "nowhere"}).scan();
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nowhere"), std::string::npos) << missing.error().message;
}

TEST(PciScannerTest, BusNumbersThatLoopDoNotHang) {
  testing::TempDir dir;
  // Two bridges that each claim the other's bus as their secondary.
  std::string text = "00:01.0 a\n00: 86 80 2a 35 00 00 10 00 00 00 04 06 00 00 01 00\n10: 00 00 00 00 00 00 00 00 01 01 01 00\n\n"
                     "01:00.0 b\n00: 86 80 2a 35 00 00 10 00 00 00 04 06 00 00 01 00\n10: 00 00 00 00 00 00 00 00 00 00 00 00\n";
  std::ofstream(dir / "loop.lspci") << text;
  auto scanned = PciScanner({.dumpFile = dir / "loop.lspci"}).scan();
  ASSERT_TRUE(scanned) << scanned.error().message;
  EXPECT_EQ(scanned->size(), 2u);
}

}  // namespace
}  // namespace switchyard

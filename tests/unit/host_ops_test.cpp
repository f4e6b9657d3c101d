// yard-agent's host actions against a fake sysfs tree (built from a recorded dump) and a fake /proc:
// a device that appears after the rescan, one that never does, one behind the wrong root port, one the
// kernel could not map, a GPU a process holds, dry runs that change nothing, and hooks.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "agent/host_ops.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"

namespace switchyard::agent {
namespace {

using namespace std::chrono_literals;

const std::filesystem::path kDump = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests/data/pci/gpu-host-2sw.lspci";
constexpr const char* kGpu = "0000:12:00.0";            // behind root port 0000:00:01.0
constexpr const char* kGpuSerial = "48-b0-2d-ff-ff-c1-2d-02";

std::string readAll(const std::filesystem::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class HostOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::writeFakeSysfs(sysfs(), kDump, {{kGpu, "nvidia"}}, 0, {kGpu});
    testing::writeFile(proc() / "driver/nvidia/gpus" / kGpu / "information",
                       "Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t GPU-5e1c6a3b-0f1d-4c55-9d2a-7b0e3f9a1c42\nDevice Minor: \t 0\n");
    testing::writeFile(proc() / "1" / "comm", "systemd\n");
  }

  std::filesystem::path sysfs() const { return dir_ / "sys"; }
  std::filesystem::path proc() const { return dir_ / "proc"; }

  HostOpsOptions options() const {
    HostOpsOptions o;
    o.sysfsRoot = sysfs();
    o.procRoot = proc();
    o.gpuUuidCommand = "";  // the proc information file is enough here
    o.upstreamPorts = {{"sw0-usp0", *parsePciAddress("0000:00:01.0")}, {"sw1-usp0", *parsePciAddress("0000:00:02.0")}};
    o.pollInterval = 10ms;
    return o;
  }

  // The kernel enumerates the GPU.
  void gpuAppears() {
    for (const auto& f : testing::readDump(kDump))
      if (f.address == kGpu) testing::writeFakeFunction(sysfs(), f, "nvidia");
  }

  static ExpectedDevice gpu(std::string port = "sw0-usp0") { return {"sw0-gpu0", kGpuSerial, 0x10de, std::move(port)}; }

  testing::TempDir dir_;
};

TEST(RunShell, AHungCommandIsKilledWithWhatItStartedAtItsDeadline) {
  testing::TempDir dir;
  const auto marker = dir / "still-running";
  const auto started = std::chrono::steady_clock::now();
  // The shell starts a child that would outlive it; both are in the command's process group.
  auto r = runShell("(sleep 1; touch " + marker.string() + ") & sleep 30", {}, 300ms);
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kDeadlineExceeded);
  EXPECT_NE(r.error().message.find("did not finish within 0.3 s"), std::string::npos) << r.error().message;
  EXPECT_LT(took, 1s);
  std::this_thread::sleep_for(1200ms);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the background child was killed too";
  // A command that finishes in time is unaffected.
  auto fine = runShell("echo \"$GREETING\"", {{"GREETING", "hello"}}, 5s);
  ASSERT_TRUE(fine) << fine.error().message;
  EXPECT_EQ(*fine, "hello\n");
}

TEST_F(HostOpsTest, ADeviceThatAppearsAfterTheRescanIsFoundWithItsAddressAndUuid) {
  HostOps ops(options());
  std::thread kernel([&] {
    std::this_thread::sleep_for(100ms);
    gpuAppears();
  });
  auto outcome = ops.verifyPresent({gpu()}, 5s, false);
  kernel.join();
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_EQ(outcome->found.size(), 1u);
  EXPECT_EQ(outcome->found[0].pciAddress, kGpu);
  EXPECT_EQ(outcome->found[0].gpuUuid, "GPU-5e1c6a3b-0f1d-4c55-9d2a-7b0e3f9a1c42");
  EXPECT_EQ(outcome->found[0].driver, "nvidia");
  EXPECT_EQ(readAll(sysfs() / "bus/pci/rescan"), "1");
}

// A function without the serial asked for in PCIe (no Device Serial Number capability, as on QEMU's
// emulated drives) is still found by what its kernel driver reports: an NVMe controller's serial, padded
// with spaces as the kernel shows it.
TEST_F(HostOpsTest, ADeviceIsFoundByTheSerialItsKernelDriverReports) {
  gpuAppears();
  testing::writeFile(sysfs() / "bus/pci/devices" / kGpu / "nvme/nvme0/serial", "SY-GPU-0007         \n");
  HostOps ops(options());
  auto outcome = ops.verifyPresent({{"qemu0-gpu7", "SY-GPU-0007", 0, "sw0-usp0"}}, 2s, false);
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_EQ(outcome->found.size(), 1u);
  EXPECT_EQ(outcome->found[0].pciAddress, kGpu);
  auto other = ops.verifyPresent({{"qemu0-gpu8", "SY-GPU-0008", 0, "sw0-usp0"}}, 100ms, false);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, Code::kDeadlineExceeded);
}

TEST_F(HostOpsTest, ADeviceThatNeverAppearsIsADeadlineWithItsSerial) {
  HostOps ops(options());
  const auto started = std::chrono::steady_clock::now();
  auto outcome = ops.verifyPresent({gpu()}, 200ms, false);
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, Code::kDeadlineExceeded);
  EXPECT_NE(outcome.error().message.find(kGpuSerial), std::string::npos) << outcome.error().message;
  EXPECT_GE(std::chrono::steady_clock::now() - started, 200ms);
}

TEST_F(HostOpsTest, ADeviceBehindTheWrongRootPortIsRefused) {
  gpuAppears();
  auto outcome = HostOps(options()).verifyPresent({gpu("sw1-usp0")}, 1s, false);
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, Code::kFailedPrecondition);
  EXPECT_NE(outcome.error().message.find("not behind sw1-usp0 (root port 0000:00:02.0)"), std::string::npos) << outcome.error().message;

  auto unmapped = HostOps(options()).verifyPresent({gpu("sw9-usp0")}, 1s, false);
  ASSERT_FALSE(unmapped);
  EXPECT_EQ(unmapped.error().code, Code::kInvalidArgument);
}

TEST_F(HostOpsTest, UnassignedBarsAreReportedAsSuch) {
  gpuAppears();
  testing::writeFile(sysfs() / "bus/pci/devices" / kGpu / "resource",
                     "0x0000000000000000 0x0000000000000000 0x0000000000000000\n0x0000000000000000 0x0000000000000000 0x0000000000000000\n");
  auto outcome = HostOps(options()).verifyPresent({gpu()}, 1s, false);
  ASSERT_FALSE(outcome);
  EXPECT_NE(outcome.error().message.find("no space for BAR"), std::string::npos) << outcome.error().message;
  EXPECT_NE(outcome.error().message.find("pci=realloc"), std::string::npos);
}

TEST_F(HostOpsTest, AGpuInUseIsNotReleasedAndTheProcessIsNamed) {
  gpuAppears();
  testing::writeFile(proc() / "4242" / "comm", "python3\n");
  std::filesystem::create_directories(proc() / "4242" / "fd");
  std::filesystem::create_symlink("/dev/nvidia0", proc() / "4242" / "fd" / "7");
  std::filesystem::create_symlink("/dev/null", proc() / "4242" / "fd" / "0");
  auto refused = HostOps(options()).prepareDetach({gpu()}, false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("in use by pid 4242 (python3) holding /dev/nvidia0"), std::string::npos) << refused.error().message;
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "remove"), "");
  EXPECT_EQ(readAll(sysfs() / "bus/pci/drivers/nvidia/unbind"), "");
}

// A drive is in use while a process holds its controller or a namespace or partition of it open (the
// node names come from sysfs: the function's nvme/nvmeN directory).
TEST_F(HostOpsTest, ADriveWhoseNamespaceAProcessHoldsIsNotReleased) {
  gpuAppears();
  testing::writeFile(sysfs() / "bus/pci/devices" / kGpu / "nvme/nvme3/serial", "SY-GPU-0007\n");
  testing::writeFile(proc() / "4343" / "comm", "dd\n");
  std::filesystem::create_directories(proc() / "4343" / "fd");
  std::filesystem::create_symlink("/dev/nvme3n1p2", proc() / "4343" / "fd" / "3");
  testing::writeFile(proc() / "4444" / "comm", "bash\n");
  std::filesystem::create_directories(proc() / "4444" / "fd");
  std::filesystem::create_symlink("/dev/nvme31n1", proc() / "4444" / "fd" / "3");  // another controller's
  auto refused = HostOps(options()).prepareDetach({{"qemu0-gpu7", "SY-GPU-0007", 0, "sw0-usp0"}}, false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("pid 4343 (dd) holding /dev/nvme3n1p2"), std::string::npos) << refused.error().message;
  EXPECT_EQ(refused.error().message.find("4444"), std::string::npos) << refused.error().message;
}

// The host's own kernel holds a drive while a filesystem on it is mounted or it is swap, and a NIC while its
// interface is up: reclaim and decompose never pull either from under the host (issue 62, item 5).
TEST_F(HostOpsTest, AMountedDriveAndANicThatIsUpAreNotReleased) {
  gpuAppears();
  const auto dev = sysfs() / "bus/pci/devices" / kGpu;
  testing::writeFile(dev / "nvme/nvme3/serial", "SY-GPU-0007\n");
  testing::writeFile(proc() / "mounts", "/dev/nvme31n1 /other ext4 rw 0 0\n/dev/nvme3n1p1 /checkpoints xfs rw,relatime 0 0\n");
  auto mounted = HostOps(options()).prepareDetach({{"sw0-nvme0", "SY-GPU-0007", 0, "sw0-usp0"}}, false);
  ASSERT_FALSE(mounted);
  EXPECT_EQ(mounted.error().code, Code::kFailedPrecondition);
  EXPECT_NE(mounted.error().message.find("/dev/nvme3n1p1 is mounted at /checkpoints"), std::string::npos) << mounted.error().message;
  EXPECT_EQ(mounted.error().message.find("/other"), std::string::npos) << "another controller's mount is not this drive's";
  testing::writeFile(proc() / "mounts", "");
  testing::writeFile(proc() / "swaps", "Filename\tType\tSize\tUsed\tPriority\n/dev/nvme3n1p2 partition 8388604 0 -2\n");
  auto swap = HostOps(options()).prepareDetach({{"sw0-nvme0", "SY-GPU-0007", 0, "sw0-usp0"}}, true);
  ASSERT_FALSE(swap);
  EXPECT_NE(swap.error().message.find("/dev/nvme3n1p2 is in use as swap"), std::string::npos) << swap.error().message;
  testing::writeFile(proc() / "swaps", "Filename\tType\tSize\tUsed\tPriority\n");
  std::filesystem::remove_all(dev / "nvme");

  testing::writeFile(dev / "net/ens7f0np0/operstate", "up\n");
  auto up = HostOps(options()).prepareDetach({gpu()}, true);
  ASSERT_FALSE(up);
  EXPECT_NE(up.error().message.find("its network interface ens7f0np0 is up"), std::string::npos) << up.error().message;
  testing::writeFile(dev / "net/ens7f0np0/operstate", "down\n");
  EXPECT_TRUE(HostOps(options()).prepareDetach({gpu()}, true)) << "down: released";

  // A virtio function keeps its disk and interface one level down, as the lent GPU machine showed
  // (virtio0/block/vda mounted at /, virtio2/net/eth0 up): found there too; vdaa is another disk, not vda's.
  PciFunction function;
  function.address = parsePciAddress(kGpu).value();
  testing::writeFile(dev / "virtio0/block/vda/size", "0\n");
  testing::writeFile(proc() / "mounts", "/dev/vdaa /elsewhere ext4 rw 0 0\n");
  EXPECT_TRUE(HostOps(options()).kernelHoldsOf(function).empty());
  testing::writeFile(proc() / "mounts", "/dev/vda1 / ext4 rw,relatime 0 0\n");
  EXPECT_EQ(HostOps(options()).kernelHoldsOf(function), (std::vector<std::string>{"/dev/vda1 is mounted at /"}));
  testing::writeFile(proc() / "mounts", "");
  testing::writeFile(dev / "virtio2/net/eth0/operstate", "up\n");
  EXPECT_EQ(HostOps(options()).kernelHoldsOf(function), (std::vector<std::string>{"its network interface eth0 is up (take it down first)"}));
}

TEST_F(HostOpsTest, ReleaseUnbindsTheDriverThenRemovesTheFunctionAndADryRunOnlySaysSo) {
  gpuAppears();
  auto options = this->options();
  const auto hookLog = dir_ / "hook.log";
  options.beforeDetach = {"echo \"$YARD_DEVICE_IDS at $YARD_PCI_ADDRESSES\" >> " + hookLog.string()};
  HostOps ops(options);

  auto dry = ops.prepareDetach({gpu()}, true);
  ASSERT_TRUE(dry) << dry.error().message;
  const auto& said = dry->actions;
  ASSERT_EQ(said.size(), 4u);
  EXPECT_EQ(said[0], "would run hook: " + options.beforeDetach[0]);
  EXPECT_NE(said[1].find("would run: echo 0000:12:00.0 > "), std::string::npos) << said[1];
  EXPECT_NE(said[2].find("would run: echo 1 > " + (sysfs() / "bus/pci/devices" / kGpu / "reset").string()), std::string::npos) << said[2];
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "remove"), "");
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "reset"), "");
  EXPECT_FALSE(std::filesystem::exists(hookLog));

  auto done = ops.prepareDetach({gpu()}, false);
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_TRUE(done->notReset.empty());
  EXPECT_EQ(readAll(sysfs() / "bus/pci/drivers/nvidia/unbind"), kGpu);
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "reset"), "1") << "reset as it leaves: the next tenant finds nothing in it";
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "remove"), "1");
  EXPECT_EQ(readAll(hookLog), "sw0-gpu0 at 0000:12:00.0\n");

  // A device the host does not see is already released.
  std::filesystem::remove_all(sysfs() / "bus/pci/devices" / kGpu);
  auto again = ops.prepareDetach({gpu()}, false);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_NE(again->actions.front().find("not on this host"), std::string::npos);
}

// Secure release (issue 39 item 11): a device that cannot be reset does not leave for another tenant.
TEST_F(HostOpsTest, ADeviceTheKernelCannotResetStaysOnTheHostAndNothingChanges) {
  gpuAppears();
  std::filesystem::remove(sysfs() / "bus/pci/devices" / kGpu / "reset");
  auto refused = HostOps(options()).prepareDetach({gpu()}, false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("cannot be reset"), std::string::npos) << refused.error().message;
  EXPECT_EQ(readAll(sysfs() / "bus/pci/drivers/nvidia/unbind"), "") << "still bound to its driver";
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "remove"), "");
  auto options = this->options();
  options.deviceReset = "none";  // the operator's choice, at the documented risk
  EXPECT_TRUE(HostOps(options).prepareDetach({gpu()}, false));
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "remove"), "1");
}

// A reset that fails does not keep the device on the host (the tenant is leaving it): it is removed and
// named, so that yardd quarantines it rather than hand it to the next tenant.
TEST_F(HostOpsTest, AVendorResetRunsWhileTheDriverIsBoundAndItsFailureIsReported) {
  gpuAppears();
  auto options = this->options();
  const auto log = dir_ / "reset.log";
  const auto unbind = sysfs() / "bus/pci/drivers/nvidia/unbind";
  options.deviceReset = "echo \"{pci} unbound=$(cat " + unbind.string() + ")\" >> " + log.string() + "; exit 4";
  auto failed = HostOps(options).prepareDetach({gpu()}, false);
  ASSERT_TRUE(failed) << failed.error().message;
  ASSERT_EQ(failed->notReset.size(), 1u);
  EXPECT_EQ(failed->notReset[0].deviceId, "sw0-gpu0");
  EXPECT_NE(failed->notReset[0].reason.find("resetting sw0-gpu0 at 0000:12:00.0"), std::string::npos) << failed->notReset[0].reason;
  EXPECT_NE(failed->notReset[0].reason.find("status 4"), std::string::npos) << failed->notReset[0].reason;
  EXPECT_EQ(readAll(log), std::string(kGpu) + " unbound=\n") << "run with the driver still bound";
  EXPECT_EQ(readAll(unbind), kGpu) << "then unbound and removed all the same";
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "remove"), "1");

  std::filesystem::remove_all(sysfs() / "bus/pci/devices" / kGpu);  // removed; it comes back on the next attach
  gpuAppears();
  options.deviceReset = "echo {pci} >> " + log.string();
  auto done = HostOps(options).prepareDetach({gpu()}, false);
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_TRUE(done->notReset.empty());
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "reset"), "") << "the vendor's reset instead of the kernel's";
  options.deviceReset = "reboot";
  auto bad = HostOps(options).prepareDetach({gpu()}, false);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
}

TEST_F(HostOpsTest, AKernelResetThatFailsIsReportedAndTheFunctionIsStillRemoved) {
  gpuAppears();
  const auto reset = sysfs() / "bus/pci/devices" / kGpu / "reset";
  std::filesystem::remove(reset);
  std::filesystem::create_directories(reset);  // exists, but writing to it fails (as a reset the device refuses does)
  auto outcome = HostOps(options()).prepareDetach({gpu()}, false);
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_EQ(outcome->notReset.size(), 1u);
  EXPECT_NE(outcome->notReset[0].reason.find(reset.string()), std::string::npos) << outcome->notReset[0].reason;
  EXPECT_EQ(readAll(sysfs() / "bus/pci/drivers/nvidia/unbind"), kGpu);
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "remove"), "1");
  EXPECT_TRUE(std::any_of(outcome->actions.begin(), outcome->actions.end(),
                          [](const std::string& a) { return a.find("yardd quarantines it") != std::string::npos; }));
}

// yardd may die between the agent's answer and its record of it, and then asks again: the device is gone, and
// the answer must still say it left unreset, or yardd would free a dirty device. Once the device is seen
// on a host again (an operator reset and released it, and it was composed), that is forgotten.
TEST_F(HostOpsTest, AReleaseAskedAgainStillNamesADeviceThatLeftUnresetUntilItIsSeenAgain) {
  gpuAppears();
  const auto reset = sysfs() / "bus/pci/devices" / kGpu / "reset";
  std::filesystem::remove(reset);
  std::filesystem::create_directories(reset);
  HostOps ops(options());
  auto first = ops.prepareDetach({gpu()}, false);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_EQ(first->notReset.size(), 1u);
  std::filesystem::remove_all(sysfs() / "bus/pci/devices" / kGpu);  // removed from the host
  auto again = ops.prepareDetach({gpu()}, false);
  ASSERT_TRUE(again) << again.error().message;
  ASSERT_EQ(again->notReset.size(), 1u) << "asked again, it still says so";
  EXPECT_EQ(again->notReset[0], first->notReset[0]);

  gpuAppears();  // back, reset by the operator
  std::filesystem::remove_all(reset);
  testing::writeFile(reset, "");
  ASSERT_TRUE(ops.verifyPresent({gpu()}, 1s, false));
  std::filesystem::remove_all(sysfs() / "bus/pci/devices" / kGpu);
  auto later = ops.prepareDetach({gpu()}, false);
  ASSERT_TRUE(later) << later.error().message;
  EXPECT_TRUE(later->notReset.empty()) << "seen again: the old failure is forgotten";
}

TEST_F(HostOpsTest, AFailingHookFailsTheAttachWithItsOutput) {
  gpuAppears();
  auto options = this->options();
  options.afterAttach = {"echo device plugin did not restart >&2; exit 3"};
  auto outcome = HostOps(options).verifyPresent({gpu()}, 1s, false);
  ASSERT_FALSE(outcome);
  EXPECT_NE(outcome.error().message.find("exited with status 3: device plugin did not restart"), std::string::npos)
      << outcome.error().message;
}

TEST_F(HostOpsTest, InventoryTakesGpuUuidsFromTheVendorTool) {
  gpuAppears();
  auto options = this->options();
  options.gpuUuidCommand = "printf '00000000:13:00.0, GPU-11111111-2222-3333-4444-555555555555\\n'";
  auto inventory = HostOps(options).inventory();
  ASSERT_TRUE(inventory) << inventory.error().message;
  std::map<std::string, std::string> uuids;
  for (const auto& f : *inventory)
    if (f.pci.isGpu()) uuids[toString(f.pci.address)] = f.gpuUuid;
  EXPECT_EQ(uuids.size(), 8u);
  EXPECT_EQ(uuids["0000:13:00.0"], "GPU-11111111-2222-3333-4444-555555555555");     // nvidia-smi
  EXPECT_EQ(uuids["0000:12:00.0"], "GPU-5e1c6a3b-0f1d-4c55-9d2a-7b0e3f9a1c42");     // the driver's proc file
  EXPECT_EQ(uuids["0000:14:00.0"], "");
}

TEST_F(HostOpsTest, ADryRunVerifyDoesNotRescan) {
  gpuAppears();
  auto outcome = HostOps(options()).verifyPresent({gpu()}, 1s, true);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(readAll(sysfs() / "bus/pci/rescan"), "");
  EXPECT_EQ(outcome->actions.front().rfind("would run: echo 1 > ", 0), 0u) << outcome->actions.front();
}


class HostOpsMigTest : public HostOpsTest {
 protected:
  void SetUp() override {
    HostOpsTest::SetUp();
    gpuAppears();
    std::filesystem::create_directories(dir_ / "bin");
    fake_ = "FAKE_NVIDIA_SMI_DIR=" + (dir_ / "bin").string() + " python3 " + SWITCHYARD_SOURCE_DIR + "/tests/support/fake_nvidia_smi.py";
  }
  HostOpsOptions migOptions() const {
    auto o = options();
    o.migCreateCommand = fake_ + " mig -i {pci} -cgi {profile}.{memory_gib}gb:{start} -C";
    o.migListCommand = fake_ + " mig -i {pci} -lgi";
    o.migDestroyCommand = fake_ + " mig -i {pci} -gi {gi} -dci && " + fake_ + " mig -i {pci} -gi {gi} -dgi";
    return o;
  }
  std::string instances() const { return readAll(dir_ / "bin" / "mig.json"); }
  std::string fake_;  // the stand-in for nvidia-smi (tests/support/fake_nvidia_smi.py)
};

TEST_F(HostOpsMigTest, InstancesAreCreatedAtTheirPlacementAndDestroyedByTheirInstanceId) {
  HostOps ops(migOptions());
  auto made = ops.verifyPresent({gpu()}, 1s, false, {{"sw0-gpu0", kGpuSerial, "3g", 4}, {"sw0-gpu0", kGpuSerial, "1g", 2}});
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_NE(instances().find(R"("name": "3g.40gb", "start": 4, "gi": 1)"), std::string::npos) << instances();
  EXPECT_NE(instances().find(R"("name": "1g.10gb", "start": 2, "gi": 2)"), std::string::npos) << instances();

  // Detach the 1g: the instance at slice 2 is found in the listing (GPU instance 2) and destroyed; the 3g stays.
  auto gone = ops.prepareDetach({}, false, {{"sw0-gpu0", kGpuSerial, "1g", 2}});
  ASSERT_TRUE(gone) << gone.error().message;
  EXPECT_EQ(instances().find(R"("start": 2)"), std::string::npos) << instances();
  EXPECT_NE(instances().find(R"("start": 4)"), std::string::npos) << instances();
  EXPECT_EQ(readAll(sysfs() / "bus/pci/devices" / kGpu / "remove"), "") << "the GPU stays";
  // Destroying it again finds nothing at slice 2: already gone.
  auto again = ops.prepareDetach({}, false, {{"sw0-gpu0", kGpuSerial, "1g", 2}});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_NE(again->actions.back().find("already gone"), std::string::npos) << again->actions.back();
}

TEST_F(HostOpsMigTest, AnInstanceThatCannotBeMadeUndoesTheOnesMadeBefore) {
  testing::writeFile(dir_ / "bin" / "fail-starts", "6\n");
  auto made = HostOps(migOptions()).verifyPresent({gpu()}, 1s, false, {{"sw0-gpu0", kGpuSerial, "2g", 0}, {"sw0-gpu0", kGpuSerial, "1g", 6}});
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, Code::kFailedPrecondition);
  EXPECT_NE(made.error().message.find("Insufficient Resources"), std::string::npos) << made.error().message;
  EXPECT_EQ(instances().find(R"("start": 0)"), std::string::npos) << "the 2g made first was destroyed again: " << instances();
}

}  // namespace
}  // namespace switchyard::agent

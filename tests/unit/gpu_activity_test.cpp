// yard-agent's GPU activity (idle reclaim): nvidia-smi's CSV as recorded on an H100 (tests/data/nvidia-smi/),
// its unreadable fields and garbage, and HostOps::activity against a fake sysfs tree and the nvidia-smi
// stand-in: utilization by bus id, processes from nvidia-smi and from /proc, what reaches the hooks.
#include <gtest/gtest.h>

#include <fstream>

#include "agent/gpu_activity.h"
#include "agent/host_ops.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"

namespace switchyard::agent {
namespace {

const std::filesystem::path kRecorded = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests/data/nvidia-smi/h100-80gb";
const std::filesystem::path kDump = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests/data/pci/gpu-host-2sw.lspci";
constexpr const char* kGpu = "0000:12:00.0";
constexpr const char* kGpuSerial = "48-b0-2d-ff-ff-c1-2d-02";

std::string readAll(const std::filesystem::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(GpuActivityParse, TheRecordedH100OutputsIdleAndBusy) {
  ParsedActivity idle;
  parseGpuUtilization(readAll(kRecorded / "query-gpu-idle.txt"), idle);
  parseComputeApps(readAll(kRecorded / "query-apps-idle.txt"), idle);
  ASSERT_EQ(idle.gpus.size(), 1u);
  EXPECT_EQ(idle.gpus.at("0000:00:06.0").utilizationPercent, 0);
  EXPECT_TRUE(idle.processes.empty()) << "nothing running prints nothing";
  EXPECT_EQ(idle.skippedLines, 0);

  ParsedActivity busy;
  parseGpuUtilization(readAll(kRecorded / "query-gpu-busy.txt"), busy);
  parseComputeApps(readAll(kRecorded / "query-apps-busy.txt"), busy);
  EXPECT_EQ(busy.gpus.at("0000:00:06.0").utilizationPercent, 100);
  EXPECT_EQ(busy.gpus.at("0000:00:06.0").memoryUsedMiB, 1231u);
  ASSERT_EQ(busy.processes.at("0000:00:06.0").size(), 1u);
  EXPECT_EQ(busy.processes.at("0000:00:06.0")[0], (GpuProcess{676, "python3", 1222}));
  EXPECT_EQ(busy.skippedLines, 0);
}

TEST(GpuActivityParse, UnreadableFieldsAndGarbageNeverMakeAGpuLookIdle) {
  ParsedActivity p;
  parseGpuUtilization("00000000:1B:00.0, [N/A], 0\n00000000:1C:00.0, 7, [N/A]\nNo devices were found\n\n00000000:1D:00.0, 250, 1\n"
                      "00000000:1E:00.0, 3\n",
                      p);
  EXPECT_FALSE(p.gpus.contains("0000:1b:00.0")) << "an unknown utilization leaves the GPU out: unknown is not idle";
  EXPECT_EQ(p.gpus.at("0000:1c:00.0").utilizationPercent, 7);
  EXPECT_EQ(p.gpus.at("0000:1c:00.0").memoryUsedMiB, 0u);
  EXPECT_FALSE(p.gpus.contains("0000:1d:00.0")) << "250 % is not a utilization";
  EXPECT_EQ(p.skippedLines, 4);
  parseComputeApps("00000000:1C:00.0, 99, /opt/app, with comma, 512\n00000000:1C:00.0, [N/A], x, 1\n00000000:1C:00.0, 100, y, [N/A]\n", p);
  ASSERT_EQ(p.processes.at("0000:1c:00.0").size(), 2u);
  EXPECT_EQ(p.processes.at("0000:1c:00.0")[0], (GpuProcess{99, "/opt/app, with comma", 512}));
  EXPECT_EQ(p.processes.at("0000:1c:00.0")[1], (GpuProcess{100, "y", 0}));
  EXPECT_EQ(p.skippedLines, 5);
  EXPECT_EQ(normalizeBusId(" 00000000:AB:00.1 "), "0000:ab:00.1");
}

class HostActivityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::writeFakeSysfs(dir_ / "sys", kDump, {{kGpu, "nvidia"}}, 0, {});
    testing::writeFile(dir_ / "proc" / "driver/nvidia/gpus" / kGpu / "information", "GPU UUID: \t GPU-5e1c6a3b\nDevice Minor: \t 0\n");
    testing::writeFile(dir_ / "proc" / "1" / "comm", "systemd\n");
    std::filesystem::create_directories(dir_ / "bin");
  }
  HostOpsOptions options() const {
    HostOpsOptions o;
    o.sysfsRoot = dir_ / "sys";
    o.procRoot = dir_ / "proc";
    o.gpuUuidCommand = "";
    const std::string fake = "FAKE_NVIDIA_SMI_DIR=" + (dir_ / "bin").string() + " python3 " + SWITCHYARD_SOURCE_DIR + "/tests/support/fake_nvidia_smi.py";
    o.gpuActivityCommand = fake + " --query-gpu=pci.bus_id,utilization.gpu,memory.used --format=csv,noheader,nounits";
    o.gpuProcessesCommand = fake + " --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv,noheader,nounits";
    return o;
  }
  void activity(const std::string& json) { testing::writeFile(dir_ / "bin" / "activity.json", json); }
  static ExpectedDevice gpu() { return {"sw0-gpu0", kGpuSerial, 0x10de, "sw0-usp0"}; }
  testing::TempDir dir_;
};

TEST_F(HostActivityTest, UtilizationAndProcessesComeFromTheVendorToolByBusId) {
  activity(R"({"0000:12:00.0": {"utilization": 97, "memory": 30000, "processes": [[4100, "python3", 30000]]},
               "0000:13:00.0": {"utilization": 0, "memory": 0}})");
  auto a = HostOps(options()).activity({gpu(), {"elsewhere", "00-00-00-00-00-00-00-01", 0, ""}});
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->size(), 1u) << "a device not on this host is left out";
  EXPECT_EQ((*a)[0], (GpuActivity{"sw0-gpu0", 97, 30000, {{4100, "python3", 30000}}}));
}

TEST_F(HostActivityTest, AProcessHoldingTheDeviceNodeCountsEvenWhenTheVendorToolDoesNotSeeIt) {
  activity(R"({"0000:12:00.0": {"utilization": 0, "memory": 0}})");
  testing::writeFile(dir_ / "proc" / "777" / "comm", "Xorg\n");
  std::filesystem::create_directories(dir_ / "proc" / "777" / "fd");
  std::filesystem::create_symlink("/dev/nvidia0", dir_ / "proc" / "777" / "fd" / "3");
  auto a = HostOps(options()).activity({gpu()});
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->size(), 1u);
  ASSERT_EQ((*a)[0].processes.size(), 1u) << "0 % but a process holds it: not idle";
  EXPECT_EQ((*a)[0].processes[0].pid, 777);
  EXPECT_EQ((*a)[0].processes[0].name, "Xorg");
}

TEST_F(HostActivityTest, AVendorToolThatFailsOrCannotReadTheGpuIsNotIdle) {
  activity(R"({"0000:12:00.0": {"utilization": null, "memory": 0}})");
  auto unknown = HostOps(options()).activity({gpu()});
  ASSERT_TRUE(unknown) << unknown.error().message;
  EXPECT_TRUE(unknown->empty()) << "[N/A]: left out, never reported idle";
  testing::writeFile(dir_ / "bin" / "activity-fails", "");
  auto failed = HostOps(options()).activity({gpu()});
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("Unknown Error"), std::string::npos) << failed.error().message;
}

TEST_F(HostActivityTest, TheHooksHearWhyDevicesLeaveAndReclaimHooksRunOnlyForAReclaim) {
  auto o = options();
  const auto log = dir_ / "hooks.log";
  o.beforeReclaim = {"echo reclaim-hook $YARD_DEVICE_IDS >> " + log.string()};
  o.beforePreempt = {"echo preempt-hook >> " + log.string()};
  o.beforeDetach = {"echo detach-hook $YARD_DETACH_REASON >> " + log.string()};
  ASSERT_TRUE(HostOps(o).prepareDetach({gpu()}, true, {}, "reclaim")) << "a dry run runs no hook";
  EXPECT_EQ(readAll(log), "");
  auto done = HostOps(o).prepareDetach({gpu()}, false, {}, "reclaim");
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(readAll(log), "reclaim-hook sw0-gpu0\ndetach-hook reclaim\n");
}

}  // namespace
}  // namespace switchyard::agent

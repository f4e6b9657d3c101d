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

// The same queries on an H200 (driver 580, a 20 s PyTorch matmul loop for the busy pair), recorded on the lent
// machine by tests/device/record_machine.sh; the whole-GPU table names no GPU instance.
TEST(GpuActivityParse, TheRecordedH200OutputsIdleAndBusy) {
  const auto dir = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests/data/nvidia-smi/h200-141gb";
  ParsedActivity idle;
  parseGpuUtilization(readAll(dir / "query-gpu-idle.txt"), idle);
  parseComputeApps(readAll(dir / "query-apps-idle.txt"), idle);
  ASSERT_EQ(idle.gpus.size(), 1u);
  EXPECT_EQ(idle.gpus.at("0000:00:06.0").utilizationPercent, 0);
  EXPECT_EQ(idle.gpus.at("0000:00:06.0").memoryUsedMiB, 0u);
  EXPECT_TRUE(idle.processes.empty());
  ParsedActivity busy;
  parseGpuUtilization(readAll(dir / "query-gpu-busy.txt"), busy);
  parseComputeApps(readAll(dir / "query-apps-busy.txt"), busy);
  EXPECT_EQ(busy.gpus.at("0000:00:06.0").utilizationPercent, 100);
  EXPECT_EQ(busy.processes.at("0000:00:06.0").at(0), (GpuProcess{865, "python3", 1222}));
  EXPECT_EQ(busy.skippedLines + idle.skippedLines, 0);
  EXPECT_TRUE(parseMigProcesses(readAll(dir / "nvidia-smi-busy.txt")).empty()) << "MIG is off: GI N/A";
}

TEST(GpuActivityParse, UnreadableFieldsAndGarbageNeverMakeAGpuLookIdle) {
  ParsedActivity p;
  parseGpuUtilization("00000000:1B:00.0, [N/A], 0\n00000000:1C:00.0, 7, [N/A]\nNo devices were found\n\n00000000:1D:00.0, 250, 1\n"
                      "00000000:1E:00.0, 3\n",
                      p);
  EXPECT_FALSE(p.gpus.contains("0000:1b:00.0")) << "an unknown utilization leaves the GPU out: unknown is not idle";
  EXPECT_TRUE(p.utilizationUnread.contains("0000:1b:00.0")) << "kept apart, for HostOps to ask whether it is in MIG mode";
  EXPECT_EQ(p.gpus.at("0000:1c:00.0").utilizationPercent, 7);
  EXPECT_EQ(p.gpus.at("0000:1c:00.0").memoryUsedMiB, 0u);
  EXPECT_FALSE(p.gpus.contains("0000:1d:00.0")) << "250 % is not a utilization";
  EXPECT_EQ(p.skippedLines, 3);
  parseComputeApps("00000000:1C:00.0, 99, /opt/app, with comma, 512\n00000000:1C:00.0, [N/A], x, 1\n00000000:1C:00.0, 100, y, [N/A]\n", p);
  ASSERT_EQ(p.processes.at("0000:1c:00.0").size(), 2u);
  EXPECT_EQ(p.processes.at("0000:1c:00.0")[0], (GpuProcess{99, "/opt/app, with comma", 512}));
  EXPECT_EQ(p.processes.at("0000:1c:00.0")[1], (GpuProcess{100, "y", 0}));
  EXPECT_EQ(p.skippedLines, 4);
  EXPECT_EQ(normalizeBusId(" 00000000:AB:00.1 "), "0000:ab:00.1");
}

// MIG mode. Constructed outputs (tests/data/nvidia-smi/constructed-mig/, in the recorded H100 table's layout):
// GPU 0 carved into two 3g instances with a server in one, GPU 1 whole with a process.
TEST(GpuActivityParse, InMigModeTheTableNamesEachProcesssGpuInstance) {
  const auto dir = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests/data/nvidia-smi/constructed-mig";
  ParsedActivity p;
  parseGpuUtilization(readAll(dir / "query-gpu.txt"), p);
  EXPECT_EQ(p.utilizationUnread.at("0000:00:06.0"), 9930u) << "MIG mode reads no utilization";
  EXPECT_EQ(p.gpus.at("0000:00:07.0").utilizationPercent, 0);
  const MigProcesses byInstance = parseMigProcesses(readAll(dir / "nvidia-smi.txt"));
  ASSERT_EQ(byInstance.size(), 1u) << "GPU 1's process runs in no instance (GI N/A)";
  ASSERT_EQ(byInstance.at("0000:00:06.0").size(), 1u);
  EXPECT_EQ(byInstance.at("0000:00:06.0").at(1), (std::vector<GpuProcess>{{5150, "tritonserver --model-repo", 9884}}))
      << "GPU index 0 is the bus id of its row; the MIG devices rows are not processes";
  EXPECT_EQ(parseGpuInstanceStarts(readAll(dir / "lgi.txt")), (std::map<int, int>{{1, 4}, {2, 0}}));
  EXPECT_TRUE(parseMigProcesses(readAll(kRecorded / "nvidia-smi-busy.txt")).empty()) << "the recorded whole-GPU table: GI N/A";
  EXPECT_TRUE(parseMigProcesses("garbage\n| Processes: |\n| 0 x 0 12 C a 1MiB |\n").empty());
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
    o.migListCommand = fake + " mig -i {pci} -lgi";
    o.gpuMigProcessesCommand = fake;
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
  EXPECT_EQ((*a)[0], (GpuActivity{"sw0-gpu0", 97, 30000, {{4100, "python3", 30000}}, {}}));
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

TEST_F(HostActivityTest, InMigModeEachGpuInstanceSaysWhatRunsInIt) {
  testing::writeFile(dir_ / "bin" / "mig.json", R"({"next": 3, "instances": [{"pci": "0000:12:00.0", "name": "3g.40gb", "start": 4, "gi": 1},
                                                                          {"pci": "0000:12:00.0", "name": "3g.40gb", "start": 0, "gi": 2}]})");
  activity(R"({"0000:12:00.0": {"utilization": 60, "memory": 9930, "instance_processes": {"4": [[5150, "tritonserver", 9884]]}}})");
  auto a = HostOps(options()).activity({gpu()});
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->size(), 1u) << "[N/A] utilization, but in MIG mode: reported";
  const GpuActivity& g = (*a)[0];
  EXPECT_TRUE(g.migMode());
  EXPECT_EQ(g.utilizationPercent, 0);
  EXPECT_EQ(g.instances, (std::vector<MigInstanceActivity>{{0, {}}, {4, {{5150, "tritonserver", 9884}}}}));
  EXPECT_EQ(g.processes, (std::vector<GpuProcess>{{5150, "tritonserver", 9884}}));

  // A process holding the device node that the table does not place may run in either: each counts it.
  testing::writeFile(dir_ / "proc" / "777" / "comm", "python3\n");
  std::filesystem::create_directories(dir_ / "proc" / "777" / "fd");
  std::filesystem::create_symlink("/dev/nvidia0", dir_ / "proc" / "777" / "fd" / "3");
  a = HostOps(options()).activity({gpu()});
  ASSERT_TRUE(a) << a.error().message;
  for (const auto& i : (*a)[0].instances)
    EXPECT_TRUE(std::any_of(i.processes.begin(), i.processes.end(), [](const GpuProcess& p) { return p.pid == 777; })) << i.start;

  auto o = options();
  o.gpuMigProcessesCommand = "";
  EXPECT_TRUE(HostOps(o).activity({gpu()})->empty()) << "without the table a MIG GPU is not reported";
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

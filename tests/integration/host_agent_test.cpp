// yardd with a real yard-agent: the agent runs on a fake sysfs tree built from the recorded two-switch
// GPU host dump (the devices already enumerated, as on a host that sees them at boot) and a fake /proc;
// the topology's serial numbers are the dump's Device Serial Numbers. Compose verifies each GPU through
// the agent and reports its host address and UUID; a GPU a process holds is not released; release writes
// the driver unbind and the PCI remove; an agent that is gone fails the compose with the reason.
#include <sstream>
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "switchyard/v1/agent.grpc.pb.h"
#include "tests/support/daemon_process.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"

namespace switchyard {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

const std::filesystem::path kDump = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests/data/pci/gpu-host-2sw.lspci";

// One switch of the dump's host: its GPUs at 12..15:00.0 carry serials ...-02 to ...-05.
json topology() {
  json ports = json::array({{{"id", "sw0-usp0"}, {"kind", "upstream"}}});
  json devices = json::array();
  for (int i = 0; i < 4; ++i) {
    ports.push_back({{"id", fmt::format("sw0-dsp{}", i)}, {"kind", "downstream"}});
    devices.push_back({{"id", fmt::format("gpu{}", i)}, {"kind", "gpu"}, {"port", fmt::format("sw0-dsp{}", i)}, {"model", "H100-SXM5-80GB"},
                       {"memoryGiB", 80}, {"serial", fmt::format("48-b0-2d-ff-ff-c1-2d-{:02x}", i + 2)}, {"migCapable", true}});
  }
  return {{"switches", json::array({{{"id", "sw0"}, {"kind", "pcie"}, {"model", "PEX89144"}, {"ports", ports}}})},
          {"hosts", json::array({{{"id", "host0"}, {"upstreamPorts", json::array({{{"port", "sw0-usp0"}}})}}})},
          {"devices", devices}};
}

class HostAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::map<std::string, std::string> drivers;
    for (int bus = 0x12; bus <= 0x15; ++bus) {
      const auto address = fmt::format("0000:{:02x}:00.0", bus);
      drivers[address] = "nvidia";
      testing::writeFile(proc() / "driver/nvidia/gpus" / address / "information",
                         fmt::format("Model: \t NVIDIA H100 80GB HBM3\nGPU UUID: \t GPU-00000000-0000-0000-0000-0000000000{:02x}\nDevice Minor: \t {}\n",
                                     bus, bus - 0x12));
    }
    testing::writeFakeSysfs(sysfs(), kDump, drivers);
    std::ofstream(dir_ / "topology.json") << topology().dump(2);
    std::filesystem::create_directories(dir_ / "yardd");
    std::filesystem::create_directories(dir_ / "agent");
    std::vector<std::string> yarddArgs{"--topology", (dir_ / "topology.json").string(), "--no-sim-host-agents", "--agent-heartbeat", "1",
                                       "--host-timeout", "15"};  // generous: a loaded CI machine runs the agent's fake nvidia-smi slowly
    yarddArgs.insert(yarddArgs.end(), yarddTls_.begin(), yarddTls_.end());
    yarddArgs.insert(yarddArgs.end(), yarddExtra_.begin(), yarddExtra_.end());
    yardd_ = std::make_unique<testing::DaemonProcess>(YARDD_PATH, dir_ / "yardd");
    ASSERT_TRUE(yardd_->start(yarddArgs)) << yardd_->log();
    agent_ = std::make_unique<testing::DaemonProcess>(YARD_AGENT_PATH, dir_ / "agent");
    const std::string smi = "FAKE_NVIDIA_SMI_DIR=" + (dir_ / "agent").string() + " python3 " + SWITCHYARD_SOURCE_DIR + "/tests/support/fake_nvidia_smi.py";
    std::vector<std::string> agentArgs{"--host", "host0", "--listen", "127.0.0.1:0", "--yardd", yardd_->address(), "--yardd-plaintext", "--sysfs-root",
                                      sysfs().string(), "--proc-root", proc().string(), "--gpu-uuid-command", "", "--port",
                                      "sw0-usp0=0000:00:01.0", "--before-detach", "echo \"$YARD_DEVICE_IDS\" >> " + (dir_ / "hook.log").string(),
                                      "--mig-create-command", smi + " mig -i {pci} -cgi {profile}.{memory_gib}gb:{start} -C",
                                      "--mig-list-command", smi + " mig -i {pci} -lgi",
                                      "--mig-destroy-command", smi + " mig -i {pci} -gi {gi} -dci && " + smi + " mig -i {pci} -gi {gi} -dgi",
                                      "--gpu-activity-command", smi + " --query-gpu=pci.bus_id,utilization.gpu,memory.used --format=csv,noheader,nounits",
                                      "--gpu-processes-command",
                                      smi + " --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv,noheader,nounits",
                                      "--gpu-mig-processes-command", smi};
    agentArgs.insert(agentArgs.end(), agentTls_.begin(), agentTls_.end());
    ASSERT_TRUE(agent_->startProgram(agentArgs)) << agent_->log();
    // The agent registers in the background.
    for (int i = 0; i < 500 && yardd_->log().find("host agent for host0 registered") == std::string::npos; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_NE(yardd_->log().find("host agent for host0 registered"), std::string::npos) << yardd_->log() << agent_->log();
  }

  std::filesystem::path sysfs() const { return dir_ / "sys"; }
  std::filesystem::path proc() const { return dir_ / "proc"; }

  testing::CommandResult yardctl(const std::string& args) {
    return testing::runCommand(std::string(YARDCTL_PATH) + " --server " + yardd_->address() + " --plaintext " + yardctlAuth_ + " " + args,
                               dir_.path());
  }

  testing::TempDir dir_;
  std::vector<std::string> yarddTls_, agentTls_;  // set by a subclass before SetUp
  std::vector<std::string> yarddExtra_;           // likewise: more yardd flags
  std::string yardctlAuth_;                       // yardctl's credentials, when yardd has identities
  std::unique_ptr<testing::DaemonProcess> yardd_;
  std::unique_ptr<testing::DaemonProcess> agent_;
};

// The same with mutual TLS between yardd and the agent: certificates made by the openssl command line.
class HostAgentTlsTest : public HostAgentTest {
 protected:
  void SetUp() override {
    for (const char* who : {"agent", "yardd"}) {
      const auto made = testing::runCommand(
          fmt::format("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN={0} "
                      "-addext subjectAltName=IP:127.0.0.1 -keyout {1}/{0}.key -out {1}/{0}.pem",
                      who, dir_.path().string()),
          dir_.path());
      if (made.exitCode != 0) GTEST_SKIP() << "the openssl command is not available (./setup.sh installs it): " << made.err;
    }
    const auto file = [&](const char* name) { return (dir_ / name).string(); };
    agentTls_ = {"--tls-cert", file("agent.pem"), "--tls-key", file("agent.key"), "--tls-client-ca", file("yardd.pem")};
    yarddTls_ = {"--agent-ca", file("agent.pem"), "--agent-cert", file("yardd.pem"), "--agent-key", file("yardd.key")};
    HostAgentTest::SetUp();
  }
};

// yardd with identities: the agent registers with its own token (an operator identity); a tenant's token
// would not do (SecurityTest checks that refusal).
class HostAgentIdentityTest : public HostAgentTest {
 protected:
  void SetUp() override {
    auto sha = [](const std::string& s) { return testing::runCommand("printf %s " + s + " | sha256sum", "/tmp").out.substr(0, 64); };
    nlohmann::json ids{{"identities",
                        {{{"name", "agent-host0"}, {"role", "operator"}, {"token_sha256", sha("token-agent")}},
                         {{"name", "ops"}, {"role", "operator"}, {"token_sha256", sha("token-ops")}}}}};
    std::ofstream(dir_ / "identities.json") << ids.dump();
    std::filesystem::permissions(dir_ / "identities.json", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    std::ofstream(dir_ / "agent.token") << "token-agent\n";
    std::ofstream(dir_ / "ops.token") << "token-ops\n";
    yarddTls_ = {"--identities", (dir_ / "identities.json").string()};
    agentTls_ = {"--yardd-token-file", (dir_ / "agent.token").string()};
    yardctlAuth_ = "--token-file " + (dir_ / "ops.token").string();
    HostAgentTest::SetUp();
  }
};

TEST_F(HostAgentIdentityTest, TheAgentRegistersWithItsTokenAndComposesGoThroughIt) {
  auto composed = yardctl("-o json compose train --gpus 1");
  ASSERT_EQ(composed.exitCode, 0) << composed.err << yardd_->log() << agent_->log();
  const auto op = nlohmann::json::parse(composed.out);
  EXPECT_EQ(op["requested_by"]["identity"], "ops");
  ASSERT_EQ(yardctl("decompose train").exitCode, 0);
}

TEST_F(HostAgentTlsTest, YarddAndTheAgentTalkOverMutualTls) {
  auto composed = yardctl("compose train --gpus 1");
  ASSERT_EQ(composed.exitCode, 0) << composed.err << yardd_->log() << agent_->log();
  EXPECT_NE(agent_->log().find("(mutual TLS;"), std::string::npos) << agent_->log();
  ASSERT_EQ(yardctl("decompose train").exitCode, 0);

  // A client that trusts the agent but has no certificate of yardd's is turned away, and so is plaintext.
  grpc::SslCredentialsOptions trustOnly;
  trustOnly.pem_root_certs = testing::readFile(dir_ / "agent.pem");
  for (const auto& credentials : {grpc::SslCredentials(trustOnly), grpc::InsecureChannelCredentials()}) {
    auto stub = switchyard::v1::HostAgent::NewStub(grpc::CreateChannel(agent_->address(), credentials));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 3s);
    switchyard::v1::HostInventory inventory;
    const auto status = stub->Inventory(&context, switchyard::v1::InventoryRequest{}, &inventory);
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(inventory.functions_size(), 0);
  }
}

TEST_F(HostAgentTest, TheAgentVerifiesAttachAndReleasesOnlyWhatIsUnused) {
  const json host = json::parse(yardctl("-o json hosts").out)["hosts"][0];
  EXPECT_EQ(host["host_policy"], "agent");
  EXPECT_EQ(host["host_side"].get<std::string>().rfind("yard-agent at 127.0.0.1:", 0), 0u) << host.dump();
  auto composed = yardctl("compose train --gpus 2");
  ASSERT_EQ(composed.exitCode, 0) << composed.err << yardd_->log() << agent_->log();
  EXPECT_NE(composed.err.find("host-admit gpu0, gpu1 (rescan, verify on the host) ... done"), std::string::npos) << composed.err;
  auto shown = yardctl("-o json systems");
  ASSERT_EQ(shown.exitCode, 0) << shown.err;
  const json system = json::parse(shown.out)["systems"][0];
  std::map<std::string, std::pair<std::string, std::string>> seen;
  for (const auto& b : system["bindings"]) seen[b["device_id"]] = {b["host_pci_address"], b["uuid"]};
  using Seen = std::pair<std::string, std::string>;
  EXPECT_EQ(seen["gpu0"], Seen("0000:12:00.0", "GPU-00000000-0000-0000-0000-000000000012"));
  EXPECT_EQ(seen["gpu1"], Seen("0000:13:00.0", "GPU-00000000-0000-0000-0000-000000000013"));
  EXPECT_EQ(testing::readFile(sysfs() / "bus/pci/rescan"), "1");

  // A training job holds gpu0 (/dev/nvidia0): the decompose is refused and nothing is unbound or removed.
  testing::writeFile(proc() / "4242/comm", "python3\n");
  std::filesystem::create_directories(proc() / "4242/fd");
  std::filesystem::create_symlink("/dev/nvidia0", proc() / "4242/fd/5");
  auto refused = yardctl("decompose train");
  EXPECT_NE(refused.exitCode, 0);
  EXPECT_NE(refused.err.find("gpu0 at 0000:12:00.0 is in use by pid 4242 (python3) holding /dev/nvidia0"), std::string::npos) << refused.err;
  EXPECT_EQ(testing::readFile(sysfs() / "bus/pci/devices/0000:12:00.0/remove"), "");
  EXPECT_EQ(json::parse(yardctl("-o json systems").out)["systems"][0]["state"], "SYSTEM_STATE_COMPOSED");

  // The job ends: the release runs the hook, unbinds the driver and removes both functions, then the switch unbinds.
  std::filesystem::remove_all(proc() / "4242");
  auto decomposed = yardctl("decompose train");
  ASSERT_EQ(decomposed.exitCode, 0) << decomposed.err;
  EXPECT_EQ(testing::readFile(sysfs() / "bus/pci/devices/0000:12:00.0/remove"), "1");
  EXPECT_EQ(testing::readFile(sysfs() / "bus/pci/devices/0000:13:00.0/remove"), "1");
  EXPECT_EQ(testing::readFile(sysfs() / "bus/pci/drivers/nvidia/unbind"), "0000:13:00.0");  // the last one written
  EXPECT_EQ(testing::readFile(dir_ / "hook.log"), "gpu0 gpu1\n");
}

// Secure release end to end (issue 39 item 11): the kernel refuses gpu0's reset (its reset file cannot be
// written); the agent removes it all the same and says so, yardd quarantines it, and only an operator's
// `yardctl devices release` returns it. gpu1 was reset and is free at once.
TEST_F(HostAgentTest, AGpuWhoseResetFailsIsQuarantinedUntilReleased) {
  ASSERT_EQ(yardctl("compose train --gpus 2").exitCode, 0) << yardd_->log() << agent_->log();
  const auto reset = sysfs() / "bus/pci/devices/0000:12:00.0/reset";
  std::filesystem::remove(reset);
  std::filesystem::create_directories(reset);
  auto decomposed = yardctl("decompose train");
  ASSERT_EQ(decomposed.exitCode, 0) << decomposed.err << agent_->log();
  EXPECT_EQ(testing::readFile(sysfs() / "bus/pci/devices/0000:12:00.0/remove"), "1");
  EXPECT_EQ(testing::readFile(sysfs() / "bus/pci/devices/0000:13:00.0/reset"), "1");
  std::map<std::string, json> devices;
  const json listedJson = json::parse(yardctl("-o json devices").out);  // held: a range-for over a temporary's member dangles
  for (const auto& d : listedJson["devices"]) devices[d["id"].get<std::string>()] = d;
  ASSERT_EQ(devices["gpu0"]["allocation"], "DEVICE_ALLOCATION_QUARANTINED") << devices["gpu0"].dump();
  EXPECT_NE(devices["gpu0"]["owner"].get<std::string>().find("not reset: resetting gpu0 at 0000:12:00.0"), std::string::npos)
      << devices["gpu0"].dump();
  EXPECT_EQ(devices["gpu1"]["allocation"], "DEVICE_ALLOCATION_FREE");
  auto listed = yardctl("devices");
  EXPECT_NE(listed.out.find("not reset"), std::string::npos) << listed.out;

  auto composed = yardctl("compose next --gpus 4");
  EXPECT_NE(composed.exitCode, 0) << "gpu0 is not handed out: " << composed.out;
  auto released = yardctl("devices release gpu0");
  ASSERT_EQ(released.exitCode, 0) << released.err;
  EXPECT_EQ(json::parse(yardctl("-o json devices").out)["devices"][0]["allocation"], "DEVICE_ALLOCATION_FREE");
}

// Idle reclaim's input end to end: yardd asks the agent every second (--activity-interval 1s), the agent runs
// nvidia-smi's activity queries (the stand-in prints what an H100 printed, tests/data/nvidia-smi/), and
// `yardctl idle` shows the idle GPU with its system and the busy one (with --all) with its process. Only
// here: elsewhere a look every second (a few Python processes) would crowd a loaded CI machine's host calls.
class HostAgentActivityTest : public HostAgentTest {
 protected:
  HostAgentActivityTest() { yarddExtra_ = {"--activity-interval", "1s"}; }
  // `yardctl -o json idle --for 0s` once it lists something (the first round may take a second), or its last answer.
  json firstIdleList() {
    json idle;
    for (int i = 0; i < 100; ++i) {
      auto listed = yardctl("-o json idle --for 0s");
      EXPECT_EQ(listed.exitCode, 0) << listed.err;
      idle = json::parse(listed.out);
      if (!idle["gpus"].empty()) break;
      std::this_thread::sleep_for(100ms);
    }
    return idle;
  }
};

TEST_F(HostAgentActivityTest, IdleShowsWhatTheAgentsNvidiaSmiReports) {
  testing::writeFile(dir_ / "agent" / "activity.json",
                     R"({"0000:12:00.0": {"utilization": 93, "memory": 40000, "processes": [[5150, "python3", 40000]]},
                         "0000:13:00.0": {"utilization": 0, "memory": 0}})");
  ASSERT_EQ(yardctl("compose train --gpus 2").exitCode, 0);
  const json idle = firstIdleList();
  ASSERT_EQ(idle["gpus"].size(), 1u) << idle.dump() << yardd_->log() << agent_->log();
  EXPECT_EQ(idle["gpus"][0]["device_id"], "gpu1");
  EXPECT_EQ(idle["gpus"][0]["system_name"], "train");
  EXPECT_EQ(idle["gpus"][0]["reclaim"], "off");
  const json all = json::parse(yardctl("-o json idle --all").out);
  ASSERT_EQ(all["gpus"].size(), 2u) << all.dump();
  const json& busy = all["gpus"][1]["device_id"] == "gpu0" ? all["gpus"][1] : all["gpus"][0];
  EXPECT_EQ(busy["utilization_percent"], 93);
  ASSERT_EQ(busy["processes"].size(), 1u);
  EXPECT_EQ(busy["processes"][0]["pid"], 5150);
  auto table = yardctl("idle --all");
  EXPECT_NE(table.out.find("5150 (python3)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("busy"), std::string::npos) << table.out;
}

// MIG mode end to end: the agent made the instances; nvidia-smi reads no utilization there, so the agent maps
// the plain table's processes to instances through `mig -lgi`, and `yardctl idle` lists the GPU for its idle
// instance while its sibling serves.
TEST_F(HostAgentActivityTest, InMigModeIdleShowsEachInstanceAndWhatRunsInIt) {
  testing::writeFile(dir_ / "agent" / "activity.json",
                     R"({"0000:12:00.0": {"memory": 9000, "instance_processes": {"0": [[5150, "tritonserver", 9000]]}}})");
  auto composed = yardctl("compose infer --mig 3g,3g");
  ASSERT_EQ(composed.exitCode, 0) << composed.err << yardd_->log() << agent_->log();
  const json idle = firstIdleList();
  ASSERT_EQ(idle["gpus"].size(), 1u) << idle.dump() << yardd_->log() << agent_->log();
  const json& gpu = idle["gpus"][0];
  EXPECT_EQ(gpu["device_id"], "gpu0");
  EXPECT_FALSE(gpu.value("idle", false)) << "a server runs in one instance";
  ASSERT_EQ(gpu["instances"].size(), 2u) << gpu.dump();
  EXPECT_EQ(gpu["instances"][0]["start"], 0) << gpu.dump();
  EXPECT_FALSE(gpu["instances"][0].value("idle", false));
  EXPECT_EQ(gpu["instances"][0]["processes"][0]["pid"], 5150);
  EXPECT_EQ(gpu["instances"][1]["start"], 4);
  EXPECT_TRUE(gpu["instances"][1].value("idle", false)) << gpu.dump();
  auto table = yardctl("idle --for 0s");
  EXPECT_NE(table.out.find("gpu0@4"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("MIG 3g"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("5150 (tritonserver)"), std::string::npos) << table.out;
}

TEST_F(HostAgentTest, MigInstancesAreMadeByTheAgentAndDestroyedBeforeTheGpuLeaves) {
  auto composed = yardctl("compose infer --mig 3g,2g");
  ASSERT_EQ(composed.exitCode, 0) << composed.err << yardd_->log() << agent_->log();
  const std::string made = testing::readFile(dir_ / "agent" / "mig.json");
  EXPECT_NE(made.find(R"("pci": "0000:12:00.0", "name": "3g.40gb")"), std::string::npos) << made;
  EXPECT_NE(made.find(R"("name": "2g.20gb")"), std::string::npos) << made;
  auto decomposed = yardctl("decompose infer");
  ASSERT_EQ(decomposed.exitCode, 0) << decomposed.err << agent_->log();
  EXPECT_NE(testing::readFile(dir_ / "agent" / "mig.json").find(R"("instances": [])"), std::string::npos)
      << testing::readFile(dir_ / "agent" / "mig.json");
  EXPECT_EQ(testing::readFile(sysfs() / "bus/pci/devices/0000:12:00.0/remove"), "1");
}

TEST_F(HostAgentTest, AnAgentThatIsGoneFailsTheComposeWithTheReasonAndLeavesNothingBound) {
  agent_->kill(SIGKILL);
  auto composed = yardctl("compose train --gpus 1");
  EXPECT_NE(composed.exitCode, 0);
  EXPECT_NE(composed.err.find("yard-agent on host0"), std::string::npos) << composed.err;
  EXPECT_NE(composed.err.find("UNAVAILABLE"), std::string::npos) << composed.err;
  auto devices = json::parse(yardctl("-o json devices").out);
  for (const auto& d : devices["devices"]) EXPECT_EQ(d["allocation"], "DEVICE_ALLOCATION_FREE") << d.dump();
}

// An agent that stops heartbeating: its host gets no new system (no bind that must roll back), `yardctl
// agents` says it is silent, and it can be removed only once it is (audited).
TEST_F(HostAgentTest, ASilentAgentsHostGetsNoWorkAndOnlyASilentAgentCanBeRemoved) {
  const json listed = json::parse(yardctl("-o json agents").out);
  ASSERT_EQ(listed["agents"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["agents"][0]["host_id"], "host0");
  EXPECT_EQ(listed["agents"][0]["alive"], true);
  auto early = yardctl("agents remove host0");
  EXPECT_NE(early.exitCode, 0);
  EXPECT_NE(early.err.find("stop it first"), std::string::npos) << early.err;

  agent_->kill(SIGKILL);
  // Silent after 3 missed heartbeats of 1 s; yardd looks at agents every second.
  bool silent = false;
  for (int i = 0; i < 100 && !silent; ++i) {
    std::this_thread::sleep_for(100ms);
    silent = yardd_->log().find("placement passes it by") != std::string::npos;
  }
  ASSERT_TRUE(silent) << yardd_->log();
  EXPECT_NE(yardctl("agents").out.find("silent"), std::string::npos);
  auto composed = yardctl("compose train --gpus 1");
  EXPECT_NE(composed.exitCode, 0);
  EXPECT_NE(composed.err.find("yard-agent is silent"), std::string::npos) << composed.err;
  EXPECT_EQ(yardctl("-o json ops").out.find("bind"), std::string::npos) << "nothing was bound and rolled back";

  auto removed = yardctl("agents remove host0");
  ASSERT_EQ(removed.exitCode, 0) << removed.err;
  EXPECT_NE(removed.out.find("forgot the yard-agent of host0"), std::string::npos) << removed.out;
  EXPECT_EQ(json::parse(yardctl("-o json agents").out).value("agents", json::array()).size(), 0u);
  EXPECT_NE(yardctl("agents remove host0").err.find("no yard-agent is registered"), std::string::npos);
  const std::string audit = yardctl("audit").out;
  EXPECT_NE(audit.find("agent-remove"), std::string::npos) << audit;
  EXPECT_NE(audit.find("FAILED_PRECONDITION"), std::string::npos) << "the early refusal is audited too: " << audit;
}

// yard-agent --print-activity judges idle as yardd does, with the same threshold (--idle-busy-above).
TEST_F(HostAgentTest, PrintActivityJudgesIdleWithTheThresholdItIsGiven) {
  testing::writeFile(dir_ / "agent" / "activity.json",
                     R"({"0000:12:00.0": {"utilization": 3, "memory": 500}, "0000:13:00.0": {"utilization": 20, "memory": 900}})");
  const std::string smi = "FAKE_NVIDIA_SMI_DIR=" + (dir_ / "agent").string() + " python3 " + SWITCHYARD_SOURCE_DIR + "/tests/support/fake_nvidia_smi.py";
  auto printed = [&](const std::string& extra) {
    return testing::runCommand(std::string(YARD_AGENT_PATH) + " --print-activity --gpu-uuid-command '' --sysfs-root " + sysfs().string() +
                                   " --proc-root " + proc().string() + " --gpu-activity-command '" + smi +
                                   " --query-gpu=pci.bus_id,utilization.gpu,memory.used --format=csv,noheader,nounits' --gpu-processes-command '" +
                                   smi + " --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv,noheader,nounits' " + extra,
                               dir_.path());
  };
  auto print = [&](const std::string& extra) {
    auto r = printed("--json " + extra);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    std::map<std::string, bool> idle;
    for (const auto& g : json::parse(r.out))
      if (g["reported"]) idle[g["address"]] = g["idle"];
    return idle;
  };
  const auto byDefault = print("");
  EXPECT_TRUE(byDefault.at("0000:12:00.0")) << "3 % with no process";
  EXPECT_FALSE(byDefault.at("0000:13:00.0")) << "20 % is busy at the default 5 %";
  EXPECT_TRUE(print("--idle-busy-above 25").at("0000:13:00.0"));
  EXPECT_NE(testing::runCommand(std::string(YARD_AGENT_PATH) + " --print-activity --idle-busy-above 101", dir_.path()).exitCode, 0);
  // A host with no GPU says so (issue 63), rather than print nothing.
  std::filesystem::create_directories(dir_ / "empty-sysfs" / "bus" / "pci" / "devices");
  auto none = testing::runCommand(std::string(YARD_AGENT_PATH) + " --print-activity --gpu-uuid-command '' --sysfs-root " + (dir_ / "empty-sysfs").string(),
                                  dir_.path());
  EXPECT_EQ(none.exitCode, 0) << none.err;
  EXPECT_NE(none.out.find("no GPU on this host"), std::string::npos) << none.out << none.err;

  // In MIG mode: no utilization, each instance with what runs in it.
  testing::writeFile(dir_ / "agent" / "mig.json", R"({"next": 3, "instances": [{"pci": "0000:12:00.0", "name": "3g.40gb", "start": 0, "gi": 1},
                                                                              {"pci": "0000:12:00.0", "name": "3g.40gb", "start": 4, "gi": 2}]})");
  testing::writeFile(dir_ / "agent" / "activity.json", R"({"0000:12:00.0": {"memory": 500, "instance_processes": {"4": [[5150, "tritonserver", 400]]}}})");
  const std::string mig = " --mig-list-command '" + smi + " mig -i {pci} -lgi' --gpu-mig-processes-command '" + smi + "'";
  EXPECT_FALSE(print(mig).at("0000:12:00.0")) << "a server runs in one instance";
  auto text = printed(mig);
  EXPECT_NE(text.out.find("GPU instance at slice 0  idle"), std::string::npos) << text.out << text.err;
  EXPECT_NE(text.out.find("GPU instance at slice 4  busy: pid 5150"), std::string::npos) << text.out;
}

TEST_F(HostAgentTest, PrintInventoryShowsTheHostAsLibpciReadsIt) {
  auto printed = testing::runCommand(std::string(YARD_AGENT_PATH) + " --print-inventory --json --gpu-uuid-command '' --sysfs-root " +
                                         sysfs().string() + " --proc-root " + proc().string(),
                                     dir_.path());
  ASSERT_EQ(printed.exitCode, 0) << printed.err;
  const json functions = json::parse(printed.out);
  ASSERT_EQ(functions.size(), 24u);
  const auto gpu = std::find_if(functions.begin(), functions.end(), [](const json& f) { return f["address"] == "0000:12:00.0"; });
  ASSERT_NE(gpu, functions.end());
  EXPECT_EQ((*gpu)["serial_number"], "48-b0-2d-ff-ff-c1-2d-02");
  EXPECT_EQ((*gpu)["driver"], "nvidia");
  EXPECT_EQ((*gpu)["link"], "32 GT/s x16");
  EXPECT_EQ((*gpu)["gpu_uuid"], "GPU-00000000-0000-0000-0000-000000000012");
  EXPECT_EQ((*gpu)["parents"].back(), "0000:00:01.0");
  // The table: every column starts where its header does, in every row (issue 39 item 13: they drifted).
  auto table = testing::runCommand(std::string(YARD_AGENT_PATH) + " --print-inventory --gpu-uuid-command '' --sysfs-root " + sysfs().string() +
                                       " --proc-root " + proc().string(),
                                   dir_.path());
  ASSERT_EQ(table.exitCode, 0) << table.err;
  std::istringstream lines(table.out);
  std::string header, row;
  std::getline(lines, header);
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] != ' ' && (i == 0 || (i >= 2 && header[i - 1] == ' ' && header[i - 2] == ' '))) starts.push_back(i);
  ASSERT_EQ(starts.size(), 9u) << header;
  int rows = 0;
  while (std::getline(lines, row)) {
    ++rows;
    for (std::size_t s = 1; s < starts.size(); ++s)
      EXPECT_TRUE(starts[s] < row.size() && row[starts[s]] != ' ' && row[starts[s] - 1] == ' ') << "column " << s << " of\n" << header << "\n" << row;
  }
  EXPECT_EQ(rows, 24);
}

}  // namespace
}  // namespace switchyard

// The yardd integration fixture: the real yardd on port 0 with a private state directory, the real
// yardctl binary and a gRPC client, and the simulated switch's own table for checks.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "switchyard/v1/switchyard.grpc.pb.h"
#include "tests/support/daemon_process.h"
#include "tests/support/temp_dir.h"

namespace switchyard::testing {

namespace pb = ::switchyard::v1;
using nlohmann::json;
using namespace std::chrono_literals;

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override { daemon_ = std::make_unique<DaemonProcess>(YARDD_PATH, dir_.path()); }

  void startDaemon(const std::vector<std::string>& args = {}) {
    ASSERT_TRUE(daemon_->start(args)) << daemon_->log();
    channel_ = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
    stub_ = pb::Switchyard::NewStub(channel_);
  }

  // How yardctl connects: plaintext, as the fixture's yardd serves; TLS tests set their flags.
  std::string yardctlConnection_ = "--plaintext";
  CommandResult yardctl(const std::string& args) {
    return runCommand(std::string(YARDCTL_PATH) + " --server " + daemon_->address() + " " + yardctlConnection_ + " " + args, dir_.path());
  }

  json yardctlJson(const std::string& args) {
    auto r = yardctl("-o json " + args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return json::parse(r.out);
  }

  template <typename Req, typename Resp, typename Method>
  grpc::Status call(Method method, const Req& req, Resp& resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 20s);
    return (stub_.get()->*method)(&ctx, req, &resp);
  }

  pb::Operation composeAndWait(const std::string& name, int gpus) {
    pb::ComposeRequest req;
    req.set_name(name);
    req.mutable_gpus()->set_count(gpus);
    pb::Operation op;
    auto s = call(&pb::Switchyard::Stub::Compose, req, op);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return wait(op.id());
  }

  pb::Operation wait(const std::string& id) {
    pb::WaitOperationRequest w;
    w.set_id(id);
    w.set_timeout_ms(15'000);
    pb::Operation op;
    auto s = call(&pb::Switchyard::Stub::WaitOperation, w, op);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return op;
  }

  // The pool's GPUs in that allocation (the embedded default also has 8 NICs and 8 drives).
  int countGpus(pb::DeviceAllocation allocation) {
    pb::ListDevicesResponse r;
    EXPECT_TRUE(call(&pb::Switchyard::Stub::ListDevices, pb::ListDevicesRequest{}, r).ok());
    return static_cast<int>(
        std::count_if(r.devices().begin(), r.devices().end(), [&](auto& d) { return d.allocation() == allocation && d.kind() == "gpu"; }));
  }

  // The simulated switch's own table (written by rename, so always whole; absent before the first bind).
  json simulatedSwitch() {
    const std::string text = readFile(dir_ / "sim-fabric.json");
    return text.empty() ? json::object() : json::parse(text)["bindings"];
  }

  // The redfish-emulator over DMTF's multi-switch CXL mockup, zones cleared (a fabric manager with nothing
  // bound), and the password file of its account (admin); nullptr when the mockup is not there (skip then).
  // The Redfish emulator over DMTF's CXL multi-switch mockup, nothing bound; with `https`, behind a
  // self-signed certificate yardd must be told to trust (fabricManagerCa()).
  std::unique_ptr<DaemonProcess> startCxlFabricManager(bool https = false) {
    const auto mockup = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / ".." / "shared" / "redfish-mockups" / "dmtf-public-cxl-multiswitch";
    if (!std::filesystem::exists(mockup)) return nullptr;
    std::filesystem::create_directories(dir_.path() / "redfish");
    auto emulator = std::make_unique<DaemonProcess>(REDFISH_EMULATOR_PATH, dir_.path() / "redfish");
    std::vector<std::string> args{"--mockup", mockup.string(), "--clear-zones"};
    if (https) args.insert(args.end(), {"--tls-dir", (dir_.path() / "redfish-tls").string()});
    EXPECT_TRUE(emulator->startProgram(args)) << emulator->log();
    std::ofstream(fabricManagerPasswordFile()) << "switchyard\n";
    return emulator;
  }
  std::filesystem::path fabricManagerPasswordFile() { return dir_.path() / "rf-password"; }
  std::filesystem::path fabricManagerCa() { return dir_.path() / "redfish-tls" / "cert.pem"; }

  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Switchyard::Stub> stub_;
};

}  // namespace switchyard::testing

// The real yardd on port 0 with a temp database, driven by the real yardctl binary and a gRPC client.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <tuple>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/integration/daemon_fixture.h"

namespace switchyard {
namespace {

using testing::DaemonTest;
namespace pb = ::switchyard::v1;
using nlohmann::json;
using namespace std::chrono_literals;


TEST_F(DaemonTest, PlacementProfileFromTheCommandLine) {
  EXPECT_FALSE(daemon_->start({"--placement-profile", "fgd"}));
  EXPECT_NE(daemon_->log().find("hived-buddy"), std::string::npos) << "the error names the known profiles: " << daemon_->log();

  startDaemon({"--placement-profile", "hived-buddy"});
  for (const char* name : {"a", "b", "c"}) ASSERT_EQ(yardctl(std::string("compose ") + name + " --gpus 1").exitCode, 0);
  ASSERT_EQ(yardctl("decompose b").exitCode, 0);
  // sw0-gpu1 and sw0-gpu3..7 are free. Buddy cells take the aligned pair sw0-gpu4,5, where switchyard-v1
  // would gather sw0-gpu1 and sw0-gpu3.
  auto composed = yardctl("compose d --gpus 2");
  ASSERT_EQ(composed.exitCode, 0) << composed.err;
  std::set<std::string> devices;
  const json systems = yardctlJson("systems");
  for (const auto& s : systems["systems"])
    if (s["name"] == "d")
      for (const auto& b : s["bindings"]) devices.insert(b["device_id"].get<std::string>());
  EXPECT_EQ(devices, (std::set<std::string>{"sw0-gpu4", "sw0-gpu5"})) << systems.dump();
}

TEST_F(DaemonTest, AdmissionProfileFromTheCommandLine) {
  EXPECT_FALSE(daemon_->start({"--admission-queue-sort", "age", "--admission-queue-sort", "age"}));
  EXPECT_NE(daemon_->log().find("queue-sort plugin 'age' named twice"), std::string::npos) << daemon_->log();

  startDaemon({"--admission-profile", "share-first", "--admission-queue-sort", "share-first", "--admission-queue-sort", "age"});
  EXPECT_NE(daemon_->log().find("admission profile share-first: queue sort share-first, age; pre-filter backfill-per-tenant; permit quota, host-policy, head-shadow"),
            std::string::npos)
      << "the log says which rules admit: " << daemon_->log();
  ASSERT_EQ(yardctl("compose a --gpus 1").exitCode, 0);
}

TEST_F(DaemonTest, ComposeListDecomposeWithYardctl) {
  startDaemon();
  auto composed = yardctl("compose train-a --gpus 4 --p2p required --label team=ml");
  ASSERT_EQ(composed.exitCode, 0) << composed.err;
  EXPECT_NE(composed.err.find("[2/5] bind sw0-gpu0, sw0-gpu1, sw0-gpu2, sw0-gpu3 -> sw0-usp0 ... done"), std::string::npos) << composed.err;
  // The simulated hosts verified each device before the system was composed; it reports them as the host sees them.
  EXPECT_NE(composed.err.find("[4/5] host-admit sw0-gpu0, sw0-gpu1, sw0-gpu2, sw0-gpu3 (rescan, verify on the host) ... done"),
            std::string::npos) << composed.err;
  auto shown = yardctl("ops show op-000001");
  EXPECT_NE(shown.out.find("2. bind sw0-gpu0, sw0-gpu1, sw0-gpu2, sw0-gpu3 -> sw0-usp0"), std::string::npos) << shown.out;
  EXPECT_NE(composed.err.find("succeeded"), std::string::npos);

  json systems = yardctlJson("systems");
  ASSERT_EQ(systems["systems"].size(), 1u);
  const json& s = systems["systems"][0];
  EXPECT_EQ(s["name"], "train-a");
  EXPECT_EQ(s["state"], "SYSTEM_STATE_COMPOSED");
  EXPECT_EQ(s["labels"]["team"], "ml");
  ASSERT_EQ(s["bindings"].size(), 4u);
  for (const auto& b : s["bindings"]) {
    EXPECT_EQ(b["host_pci_address"].get<std::string>().size(), 12u) << b.dump();
    EXPECT_EQ(b["uuid"].get<std::string>().rfind("GPU-", 0), 0u) << b.dump();
  }
  EXPECT_EQ(simulatedSwitch().size(), 4u) << "the switch itself holds the bindings";

  auto table = yardctl("systems");
  EXPECT_NE(table.out.find("train-a"), std::string::npos);
  auto topology = yardctl("topology");
  EXPECT_NE(topology.out.find("=> host0 via sw0-usp0"), std::string::npos) << topology.out;

  auto decomposed = yardctl("decompose train-a");
  ASSERT_EQ(decomposed.exitCode, 0) << decomposed.err;
  EXPECT_TRUE(yardctlJson("systems")["systems"].empty());
  EXPECT_TRUE(simulatedSwitch().empty());
  EXPECT_EQ(countGpus(pb::DEVICE_ALLOCATION_FREE), 16);
}

TEST_F(DaemonTest, AttachAndDetachOverGrpc) {
  startDaemon();
  pb::Operation op = composeAndWait("infer", 1);
  ASSERT_EQ(op.state(), pb::OPERATION_STATE_SUCCEEDED) << op.error();
  pb::AttachRequest attach;
  attach.set_system("infer");
  attach.mutable_gpus()->set_count(2);
  ASSERT_TRUE(call(&pb::Switchyard::Stub::Attach, attach, op).ok());
  EXPECT_EQ(wait(op.id()).state(), pb::OPERATION_STATE_SUCCEEDED);

  pb::GetSystemRequest get;
  get.set_system("infer");
  pb::System system;
  ASSERT_TRUE(call(&pb::Switchyard::Stub::GetSystem, get, system).ok());
  ASSERT_EQ(system.bindings_size(), 3);

  auto detached = yardctl("detach infer -d " + system.bindings(0).device_id());
  ASSERT_EQ(detached.exitCode, 0) << detached.err;
  ASSERT_TRUE(call(&pb::Switchyard::Stub::GetSystem, get, system).ok());
  EXPECT_EQ(system.bindings_size(), 2);
  EXPECT_EQ(simulatedSwitch().size(), 2u);
}

TEST_F(DaemonTest, BadInputGivesAClearErrorAndChangesNothing) {
  startDaemon();
  auto unknownHost = yardctl("compose a --gpus 1 --host ghost");
  EXPECT_EQ(unknownHost.exitCode, 3);
  EXPECT_NE(unknownHost.err.find("no host 'ghost'"), std::string::npos) << unknownHost.err;
  auto zero = yardctl("compose a --gpus 0");
  EXPECT_EQ(zero.exitCode, 2);
  EXPECT_NE(zero.err.find("gpu count must be at least 1"), std::string::npos) << zero.err;
  auto tooMany = yardctl("compose a --gpus 64");
  EXPECT_EQ(tooMany.exitCode, 3);
  EXPECT_NE(tooMany.err.find("whole pool has 16"), std::string::npos) << tooMany.err;
  auto badFlag = yardctl("compose a --gpus 2 --p2p sometimes");
  EXPECT_EQ(badFlag.exitCode, 2);
  auto unknownSystem = yardctl("decompose nothing-here");
  EXPECT_EQ(unknownSystem.exitCode, 3);

  pb::ComposeRequest req;
  req.set_name("enum");
  req.mutable_gpus()->set_count(1);
  req.mutable_gpus()->set_peer_to_peer(static_cast<pb::PeerToPeer>(42));
  pb::Operation op;
  auto s = call(&pb::Switchyard::Stub::Compose, req, op);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("peer_to_peer: unknown value 42"), std::string::npos);
  req.clear_gpus();
  EXPECT_EQ(call(&pb::Switchyard::Stub::Compose, req, op).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  ASSERT_EQ(composeAndWait("dup", 1).state(), pb::OPERATION_STATE_SUCCEEDED);
  req.set_name("dup");
  req.mutable_gpus()->set_count(1);
  EXPECT_EQ(call(&pb::Switchyard::Stub::Compose, req, op).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  pb::AttachRequest attach;
  attach.set_system("dup");
  attach.mutable_gpus()->add_device_ids("sw0-gpu0");
  EXPECT_EQ(call(&pb::Switchyard::Stub::Attach, attach, op).error_code(), grpc::StatusCode::FAILED_PRECONDITION) << "busy device";

  pb::ListOperationsResponse ops;
  ASSERT_TRUE(call(&pb::Switchyard::Stub::ListOperations, pb::ListOperationsRequest{}, ops).ok());
  EXPECT_EQ(ops.operations_size(), 1) << "rejected requests leave no operation behind";
  EXPECT_EQ(countGpus(pb::DEVICE_ALLOCATION_FREE), 15);
}

TEST_F(DaemonTest, ThirtyTwoParallelComposesNeverShareADevice) {
  startDaemon({"--generate-gpus", "256", "--sim-state", "none"});
  std::vector<std::thread> clients;
  std::vector<pb::Operation> results(32);
  for (int i = 0; i < 32; ++i)
    clients.emplace_back([&, i] {
      auto stub = pb::Switchyard::NewStub(channel_);
      pb::ComposeRequest req;
      req.set_name("job-" + std::to_string(i));
      req.mutable_gpus()->set_count(4);
      grpc::ClientContext ctx;
      pb::Operation op;
      if (!stub->Compose(&ctx, req, &op).ok()) return;
      grpc::ClientContext wctx;
      pb::WaitOperationRequest w;
      w.set_id(op.id());
      w.set_timeout_ms(15'000);
      stub->WaitOperation(&wctx, w, &results[static_cast<std::size_t>(i)]);
    });
  for (auto& c : clients) c.join();
  for (const auto& r : results) EXPECT_EQ(r.state(), pb::OPERATION_STATE_SUCCEEDED) << r.id() << " " << r.error();
  pb::ListSystemsResponse systems;
  ASSERT_TRUE(call(&pb::Switchyard::Stub::ListSystems, pb::ListSystemsRequest{}, systems).ok());
  std::set<std::string> devices, hosts;
  for (const auto& s : systems.systems()) {
    EXPECT_TRUE(hosts.insert(s.host_id()).second) << s.host_id();
    for (const auto& b : s.bindings()) EXPECT_TRUE(devices.insert(b.device_id()).second) << b.device_id() << " in two systems";
  }
  EXPECT_EQ(devices.size(), 128u);
  EXPECT_EQ(countGpus(pb::DEVICE_ALLOCATION_ALLOCATED), 128);
}

TEST_F(DaemonTest, InjectedSwitchFaultsRollBackCleanly) {
  startDaemon({"--sim-fail-probability", "0.25", "--sim-seed", "11"});
  int failed = 0;
  for (int i = 0; i < 12; ++i) {
    auto r = yardctl("compose job-" + std::to_string(i) + " --gpus 3");
    if (r.exitCode == 1) {
      ++failed;
      EXPECT_NE(r.err.find("rolled back"), std::string::npos) << r.err;
    } else if (r.exitCode == 0) {
      // A decompose whose unbind keeps failing is itself rolled back (the system stays whole): retry it.
      int rc = 1;
      for (int attempt = 0; attempt < 10 && rc == 1; ++attempt) rc = yardctl("decompose job-" + std::to_string(i)).exitCode;
      EXPECT_EQ(rc, 0);
    } else {
      ADD_FAILURE() << r.exitCode << " " << r.err;
    }
  }
  EXPECT_GT(failed, 0) << "the fault rate should have failed some binds";
  EXPECT_TRUE(yardctlJson("systems")["systems"].empty());
  EXPECT_TRUE(simulatedSwitch().empty()) << "every partial compose was unbound";
  EXPECT_EQ(countGpus(pb::DEVICE_ALLOCATION_FREE), 16);

  daemon_->kill(SIGTERM);
  startDaemon();
  EXPECT_NE(daemon_->log().find("0 drift(s) found"), std::string::npos);
}

TEST_F(DaemonTest, DriftFoundAtStartIsReportedAsEvents) {
  startDaemon();
  ASSERT_EQ(composeAndWait("a", 2).state(), pb::OPERATION_STATE_SUCCEEDED);
  daemon_->kill(SIGTERM);
  json bindings = simulatedSwitch();
  bindings.erase(bindings.begin());     // the switch lost one binding
  bindings["sw1-gpu7"] = "sw1-usp3";    // and gained one nobody asked for
  std::ofstream(dir_ / "sim-fabric.json") << json{{"bindings", bindings}}.dump();
  startDaemon();
  // The switch's two drifts, and the same two as the (simulated) hosts see them: host0 no longer sees the
  // lost GPU, host3 sees the one nobody asked for.
  EXPECT_NE(daemon_->log().find("4 drift(s) found"), std::string::npos) << daemon_->log();
  // Replay the recorded events through Watch until the four drift events have been seen.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  pb::WatchRequest from;
  from.set_after_sequence(1);
  auto reader = stub_->Watch(&ctx, from);
  std::set<std::string> drifts;
  pb::Event e;
  while (drifts.size() < 4 && reader->Read(&e))
    if (e.type().rfind("drift.", 0) == 0) drifts.insert(e.type());
  ctx.TryCancel();
  EXPECT_EQ(drifts, (std::set<std::string>{"drift.missing-binding", "drift.unexpected-binding", "drift.host-missing-device",
                                           "drift.host-unexpected-device"}));
  json system = yardctlJson("systems a");
  EXPECT_EQ(system["state"], "SYSTEM_STATE_DEGRADED");
}

TEST_F(DaemonTest, WatchStreamsOperationEvents) {
  startDaemon();
  ASSERT_EQ(composeAndWait("w", 1).state(), pb::OPERATION_STATE_SUCCEEDED);
  // From the first recorded event: the same stream whether the watch registers before the compose or after.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  pb::WatchRequest from;
  from.set_from_start(true);
  for (const char* family : {"operation", "device", "system"}) from.add_types(family);
  auto reader = stub_->Watch(&ctx, from);
  std::vector<std::string> types;
  pb::Event e;
  while (reader->Read(&e)) {
    types.push_back(e.type());
    if (e.type() == "operation.succeeded") break;
  }
  ctx.TryCancel();
  EXPECT_EQ(types, (std::vector<std::string>{"operation.accepted", "device.bound", "device.online", "system.composed", "operation.succeeded"}));
}

TEST_F(DaemonTest, ServesReflectionSoGrpcurlCanListTheApi) {
  startDaemon();
  // grpc.reflection.v1alpha ServerReflectionInfo with list_services (field 7, empty string).
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  const grpc::internal::RpcMethod info("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                       grpc::internal::RpcMethod::BIDI_STREAMING);
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(channel_.get(), info, &ctx));
  grpc::Slice listServices("\x3a\x00", 2);
  grpc::ByteBuffer request(&listServices, 1), response;
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  ASSERT_TRUE(stream->Read(&response));
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_NE(bytes.find("switchyard.v1.Switchyard"), std::string::npos);
  EXPECT_NE(bytes.find("grpc.health.v1.Health"), std::string::npos);
}

TEST_F(DaemonTest, CtrlCWhileFollowingSaysTheOperationGoesOnAndHowToFollowIt) {
  startDaemon({"--sim-host-delay-ms", "3000"});  // the compose waits 3 s for its device to appear on the host
  const std::string yardctl = std::string(YARDCTL_PATH) + " --plaintext --server " + daemon_->address();
  auto r = testing::runCommand("(" + yardctl + " compose slow --gpus 1 & pid=$!; sleep 1; kill -INT $pid; wait $pid; echo exit=$?)", dir_.path());
  EXPECT_NE(r.out.find("exit=130"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("interrupted: op-000001 goes on in yardd"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("`yardctl ops wait op-000001`"), std::string::npos) << r.err;
  auto waited = testing::runCommand(yardctl + " ops wait op-000001", dir_.path());
  EXPECT_EQ(waited.exitCode, 0) << waited.err;
  EXPECT_NE(waited.err.find("op-000001 succeeded"), std::string::npos) << "it went on: " << waited.err;
}

// Issue 27: `yardctl hosts -o json` failed ("The following arguments were not expected"); global flags must
// work after the command too, as in kubectl, and be listed in every command's --help.
TEST_F(DaemonTest, GlobalFlagsWorkBeforeAndAfterTheCommand) {
  startDaemon();
  auto after = testing::runCommand("YARD_PLAINTEXT=1 " + std::string(YARDCTL_PATH) + " hosts -o json --server " + daemon_->address(), dir_.path());
  ASSERT_EQ(after.exitCode, 0) << after.err;
  EXPECT_EQ(json::parse(after.out)["hosts"].size(), 4u);
  auto nested = testing::runCommand(std::string(YARDCTL_PATH) + " ops --server " + daemon_->address() + " --output json --plaintext", dir_.path());
  ASSERT_EQ(nested.exitCode, 0) << nested.err;
  EXPECT_TRUE(json::parse(nested.out).is_object()) << nested.out;
  auto help = testing::runCommand(std::string(YARDCTL_PATH) + " ops show --help", dir_.path());
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("--output"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--server"), std::string::npos) << help.out;
}

// Who asked is recorded: the operation keeps its caller, and its events name them as actor.
TEST_F(DaemonTest, TheCallerIsRecordedOnTheOperationAndItsEvents) {
  startDaemon();
  ASSERT_EQ(yardctl("compose train --gpus 2 --as alice").exitCode, 0);
  auto shown = yardctl("ops show op-000001");
  ASSERT_EQ(shown.exitCode, 0) << shown.err;
  EXPECT_NE(shown.out.find("by:    alice"), std::string::npos) << shown.out;
  auto op = yardctlJson("ops show op-000001");
  EXPECT_EQ(op["requested_by"]["identity"], "alice") << op.dump();
  // Watch replays what was recorded, then pushes live events: the decompose's arrive as they happen.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  pb::WatchRequest req;
  req.set_after_sequence(1);
  auto reader = stub_->Watch(&ctx, req);
  pb::Event e;
  std::map<std::string, std::string> actorOf;
  while (reader->Read(&e)) {
    actorOf[e.type()] = e.actor();
    if (e.type() == "operation.succeeded" && e.subject() == "op-000001") ASSERT_EQ(yardctl("decompose train --as bob").exitCode, 0);
    if (e.type() == "operation.succeeded" && e.subject() == "op-000002") break;
  }
  ctx.TryCancel();
  EXPECT_EQ(actorOf["operation.accepted"], "bob");
  EXPECT_EQ(actorOf["device.unbound"], "bob");
  EXPECT_EQ(actorOf["device.bound"], "alice");
}

// Time-sliced GPU shares from the command line: compose, attach onto the same GPU, capacity, detach.
TEST_F(DaemonTest, GpuSharesWithYardctl) {
  startDaemon();
  ASSERT_EQ(yardctl("compose svc --gpu-share 0.25").exitCode, 0);
  ASSERT_EQ(yardctl("attach svc --gpu-share 0.5").exitCode, 0);
  auto system = yardctlJson("systems svc");
  ASSERT_EQ(system["gpu_shares"].size(), 2u) << system.dump();
  EXPECT_EQ(system["gpu_shares"][0]["milli"], 250);
  EXPECT_EQ(system["gpu_shares"][1]["device_id"], system["gpu_shares"][0]["device_id"]) << "the second share filled the first GPU";
  EXPECT_EQ(system["bindings"].size(), 1u);
  auto capacity = yardctlJson("capacity --gpu-share 0.25 --mig none");
  ASSERT_EQ(capacity["shares"].size(), 1u) << capacity.dump();
  EXPECT_EQ(capacity["shares"][0]["on_partly_used_gpus"], 1);
  auto table = yardctl("systems svc");
  EXPECT_NE(table.out.find("share #2: 50% of its time"), std::string::npos) << table.out;
  auto tooBig = yardctl("attach svc --gpu-share 1.5");
  EXPECT_EQ(tooBig.exitCode, 2) << tooBig.err;
  ASSERT_EQ(yardctl("detach svc --share 1").exitCode, 0);
  ASSERT_EQ(yardctl("detach svc --share 2").exitCode, 0);
  EXPECT_EQ(yardctl("systems svc").exitCode, 3) << "the GPU left with its last share, and the system with it";
}

// Issue 27: `yardctl detach x -i a@99999999999` aborted with an uncaught std::out_of_range (exit 134).
TEST_F(DaemonTest, AnOutOfRangeInstanceIsAUsageError) {
  startDaemon();
  auto r = yardctl("detach x -i a@99999999999");
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("DEVICE@START"), std::string::npos) << r.err;
  EXPECT_EQ(yardctl("detach x -i a@8").exitCode, 2) << "a GPU has memory slices 0-7";
}

TEST_F(DaemonTest, CapacityShowsWhatStillFits) {
  startDaemon();
  ASSERT_EQ(yardctl("compose a --gpus 2 --host host0").exitCode, 0);
  json capacity = yardctlJson("capacity");
  EXPECT_EQ(capacity["free_gpus"], 14);
  EXPECT_EQ(capacity["stranded_gpus"], 0);
  ASSERT_EQ(capacity["shapes"].size(), 5u);
  EXPECT_EQ(capacity["shapes"][0]["gpus"], 1);
  EXPECT_EQ(capacity["shapes"][0]["placeable"], 3) << "three hosts are left";
  EXPECT_EQ(capacity["shapes"][3]["gpus"], 8);
  EXPECT_EQ(capacity["shapes"][3]["placeable"], 1) << "only sw1 still has 8 together";
  auto table = yardctl("capacity --gpus 4 --p2p none");
  EXPECT_EQ(table.exitCode, 0) << table.err;
  EXPECT_NE(table.out.find("4 GPUs"), std::string::npos) << table.out;
  // Drives and NICs by kind (issue 62): the embedded pool's 8 NICs and 8 drives, all beside a free GPU.
  ASSERT_EQ(capacity["endpoints"].size(), 2u) << capacity.dump();
  for (const auto& e : capacity["endpoints"]) EXPECT_EQ((std::tuple{e["total"], e["free"], e["beside_free_gpus"]}), (std::tuple{8, 8, 8})) << e.dump();
  EXPECT_NE(yardctl("capacity").out.find("DRIVES AND NICS"), std::string::npos);
  EXPECT_EQ(yardctl("capacity --gpus 0").exitCode, 2);
}

TEST_F(DaemonTest, FractionalGpusFromTheCommandLine) {
  startDaemon();
  auto composed = yardctl("compose infer --mig 3g,1g");
  ASSERT_EQ(composed.exitCode, 0) << composed.err;
  json system = yardctlJson("systems infer");
  ASSERT_EQ(system["bindings"].size(), 1u);
  ASSERT_EQ(system["gpu_instances"].size(), 2u);
  const std::string device = system["bindings"][0]["device_id"];

  auto filled = yardctl("attach infer --mig 2g");
  ASSERT_EQ(filled.exitCode, 0) << filled.err;
  EXPECT_EQ(yardctlJson("systems infer")["bindings"].size(), 1u) << "the 2g went beside the 3g and the 1g";
  EXPECT_EQ(simulatedSwitch().size(), 1u);

  json capacity = yardctlJson("capacity --mig 1g,7g");
  ASSERT_EQ(capacity["mig"].size(), 2u);
  EXPECT_EQ(capacity["mig"][0]["profile"], "1g");
  EXPECT_EQ(capacity["mig"][0]["on_partly_used_gpus"], 1);
  EXPECT_EQ(capacity["attachable_mig_gpus"], 15);
  auto table = yardctl("capacity");
  EXPECT_NE(table.out.find("MIG PROFILE"), std::string::npos) << table.out;

  auto badProfile = yardctl("attach infer --mig 5g");
  EXPECT_EQ(badProfile.exitCode, 2);
  auto badRef = yardctl("detach infer -i " + device);
  EXPECT_EQ(badRef.exitCode, 2);
  EXPECT_NE(badRef.err.find("DEVICE@START"), std::string::npos) << badRef.err;
  auto noSuch = yardctl("detach infer -i " + device + "@1");
  EXPECT_EQ(noSuch.exitCode, 3);
  EXPECT_NE(noSuch.err.find("no MIG instance"), std::string::npos) << noSuch.err;

  const json carved = yardctlJson("systems infer")["gpu_instances"];
  ASSERT_EQ(carved.size(), 3u);
  for (const auto& i : carved) {
    auto r = yardctl("detach infer -i " + i["device_id"].get<std::string>() + "@" + std::to_string(i.value("start", 0)));
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  EXPECT_TRUE(simulatedSwitch().empty()) << "the GPU went back when its last instance left";
  EXPECT_EQ(yardctl("systems infer").exitCode, 3) << "with nothing left the system is decomposed, not kept empty";
}

TEST_F(DaemonTest, PlanExplainsWithoutChangingAnything) {
  startDaemon();
  auto fits = yardctl("plan --gpus 8 --p2p required --model A100-SXM4-40GB --explain");
  ASSERT_EQ(fits.exitCode, 0) << fits.err;
  EXPECT_NE(fits.out.find("under sw1"), std::string::npos) << fits.out;
  auto no = yardctl("plan --gpus 9 --p2p required");
  EXPECT_EQ(no.exitCode, 3);
  EXPECT_NE(no.out.find("host0: peer-to-peer required"), std::string::npos) << no.out;
  EXPECT_EQ(countGpus(pb::DEVICE_ALLOCATION_FREE), 16);
}

// Issue 63, item 5: the tour's busy GPU. --sim-gpu-busy makes the simulated host report a GPU at a utilization with a
// process, so idle reclaim spares it and `yardctl idle --all` shows it busy beside its idle sibling.
TEST_F(DaemonTest, ASimulatedGpuCanBeMadeBusyForTheDemo) {
  testing::DaemonProcess bad(YARDD_PATH, dir_.path());
  EXPECT_FALSE(bad.start({"--sim-gpu-busy", "nope=50"}));
  EXPECT_NE(bad.log().find("no simulated GPU 'nope'"), std::string::npos) << bad.log();
  auto malformed = testing::runCommand(std::string(YARDD_PATH) + " --sim-gpu-busy sw0-gpu0=150 --plaintext --listen 127.0.0.1:0 --state-dir " +
                                           (dir_ / "other").string(),
                                       dir_.path());
  EXPECT_NE(malformed.exitCode, 0);
  EXPECT_NE(malformed.err.find("PERCENT 0 to 100"), std::string::npos) << malformed.err;

  startDaemon({"--sim-gpu-busy", "sw0-gpu0=90", "--activity-interval", "1s"});
  ASSERT_EQ(yardctl("compose train --gpus 2 --host host0").exitCode, 0);
  json all = json::object();
  for (int i = 0; i < 100 && all.value("gpus", json::array()).size() < 2; ++i) {
    std::this_thread::sleep_for(100ms);
    all = yardctlJson("idle --all");
  }
  ASSERT_EQ(all["gpus"].size(), 2u) << all.dump() << daemon_->log();
  std::map<std::string, json> byDevice;
  for (const auto& g : all["gpus"]) byDevice[g["device_id"]] = g;
  ASSERT_TRUE(byDevice.contains("sw0-gpu0")) << all.dump();
  EXPECT_EQ(byDevice["sw0-gpu0"]["utilization_percent"], 90);
  ASSERT_EQ(byDevice["sw0-gpu0"]["processes"].size(), 1u);
  EXPECT_EQ(byDevice["sw0-gpu0"]["processes"][0]["name"], "sim-job");
  const json idle = yardctlJson("idle --for 0s");
  ASSERT_EQ(idle["gpus"].size(), 1u) << idle.dump();
  EXPECT_NE(idle["gpus"][0]["device_id"], "sw0-gpu0") << "the busy GPU is not idle";
}

}  // namespace
}  // namespace switchyard

namespace switchyard::testing {
namespace {

TEST_F(DaemonTest, ListsComeInPagesInIdOrderAndYardctlReadsThemAll) {
  startDaemon({"--generate-gpus", "2500"});
  std::vector<std::string> seen;
  pb::ListDevicesRequest req;
  req.set_page_size(700);
  int pages = 0;
  while (true) {
    pb::ListDevicesResponse page;
    ASSERT_TRUE(call(&pb::Switchyard::Stub::ListDevices, req, page).ok());
    ++pages;
    EXPECT_LE(page.devices_size(), 700);
    for (const auto& d : page.devices()) seen.push_back(d.id());
    if (page.next_page_token().empty()) break;
    req.set_page_token(page.next_page_token());
  }
  EXPECT_EQ(pages, 4);
  ASSERT_EQ(seen.size(), 2500u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), seen.size()) << "no device twice";
  pb::ListDevicesResponse unasked;
  ASSERT_TRUE(call(&pb::Switchyard::Stub::ListDevices, pb::ListDevicesRequest{}, unasked).ok());
  EXPECT_EQ(unasked.devices_size(), 1000) << "a client that does not ask for a size gets the default page, not everything";
  EXPECT_FALSE(unasked.next_page_token().empty());
  auto all = yardctlJson("devices");
  EXPECT_EQ(all["devices"].size(), 2500u) << "yardctl follows the pages";
  EXPECT_FALSE(all.contains("next_page_token") && !all["next_page_token"].get<std::string>().empty());
}

}  // namespace
}  // namespace switchyard::testing

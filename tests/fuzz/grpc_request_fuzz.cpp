// Fuzz target: arbitrary bytes as switchyard.v1 requests, sent over a real gRPC channel to the real
// service (validation, translation, the engine with a simulated switch and a SQLite store). The first byte
// picks the method, the rest is the request's wire form; bytes protobuf cannot parse never reach the server
// (gRPC would refuse them before any handler). The oracle: the server answers every request, and never
// with INTERNAL or UNKNOWN (a bug, not bad input).
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "composer/engine/engine.h"
#include "composer/api/switchyard_service.h"
#include "fabric/simulated_fabric.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"

using namespace switchyard;
namespace pb = switchyard::v1;

namespace {

struct World {
  World() {
    std::string dir = "/tmp/switchyard-grpc-fuzz-XXXXXX";
    if (!mkdtemp(dir.data())) std::abort();
    fabric = std::move(*SimulatedFabric::create(defaultTopology(), clock, {}));
    store = std::move(*SqliteStore::open(dir + "/yard.db"));
    engine = std::make_unique<Engine>(*fabric, *store, clock, EngineOptions{.fabricPollInterval = std::chrono::milliseconds(0)});
    if (!engine->start()) std::abort();
    service = std::make_unique<SwitchyardService>(*engine, authenticator);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service.get());
    server = builder.BuildAndStart();
    stub = pb::Switchyard::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  SystemClock clock;
  std::unique_ptr<SimulatedFabric> fabric;
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<Engine> engine;
  Authenticator authenticator{nullptr};
  std::unique_ptr<SwitchyardService> service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<pb::Switchyard::Stub> stub;
};

World& world() {
  static World* w = new World();  // lives for the process, as a daemon's would
  return *w;
}

template <typename Req, typename Resp>
void send(grpc::Status (pb::Switchyard::Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const std::uint8_t* data, std::size_t size) {
  Req request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  Resp response;
  const grpc::Status status = (world().stub.get()->*method)(&ctx, request, &response);
  if (status.error_code() == grpc::StatusCode::INTERNAL || status.error_code() == grpc::StatusCode::UNKNOWN) {
    std::fprintf(stderr, "server answered %d: %s\nrequest: %s\n", status.error_code(), status.error_message().c_str(),
                 request.ShortDebugString().c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t* body = data + 1;
  const std::size_t n = size - 1;
  using S = pb::Switchyard::Stub;
  switch (data[0] % 14) {
    case 0: send(&S::Compose, body, n); break;
    case 1: send(&S::Decompose, body, n); break;
    case 2: send(&S::Attach, body, n); break;
    case 3: send(&S::Detach, body, n); break;
    case 4: send(&S::Plan, body, n); break;
    case 5: send(&S::GetCapacity, body, n); break;
    case 6: send(&S::GetSystem, body, n); break;
    case 7: send(&S::ListSystems, body, n); break;
    case 8: send(&S::GetOperation, body, n); break;
    case 9: send(&S::ListOperations, body, n); break;
    case 10: send(&S::WaitOperation, body, n); break;
    case 11: send(&S::ListAudit, body, n); break;
    case 12: send(&S::ListDevices, body, n); break;
    default: send(&S::ListHosts, body, n); break;
  }
  return 0;
}

// What a standby yardd serves while it waits for leadership (active/standby on etcd, issue 26): the gRPC
// API over a replica engine (Engine::startReplica) that follows the store through etcd's watch. Reads are
// answered from it (systems, devices, hosts, topology, capacity, plans, operations, WaitOperation, Watch,
// the audit); every change is refused with UNAVAILABLE and the leader's address in the message and in the
// `switchyard-leader` trailing metadata, which yardctl and the Python client follow. It never opens the
// fabric. When this yardd wins the election, stop() closes it and the leader's server takes the same port.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "composer/api/authenticator.h"
#include "composer/engine/engine.h"
#include "inventory/etcd/etcd_store.h"

namespace switchyard {

class SwitchyardService;
class ResourceProviderService;

struct StandbyReadsOptions {
  std::string listen;  // HOST:PORT, the address the leader's server will take over
  std::shared_ptr<grpc::ServerCredentials> credentials;
  EngineOptions engine;  // placement and quotas as the leader has them (plans and capacity read the same)
};

class StandbyReads {
 public:
  // Loads the store and listens; fails when either cannot be done (the caller stands by without serving).
  [[nodiscard]] static Result<std::unique_ptr<StandbyReads>> start(EtcdStore& store, Clock& clock, const Authenticator& authenticator,
                                                                   StandbyReadsOptions options);
  ~StandbyReads();
  StandbyReads(const StandbyReads&) = delete;
  StandbyReads& operator=(const StandbyReads&) = delete;

  // The address refusals name (the leader key's value); empty while none leads.
  void setLeader(const std::string& leader) { engine_->setStandbyLeader(leader); }
  [[nodiscard]] int port() const { return port_; }
  // Stops serving: the server, then the change feed, then the replica engine.
  void stop();

 private:
  StandbyReads(EtcdStore& store, Clock& clock, const Authenticator& authenticator, StandbyReadsOptions options);
  // Follows the store from revision `loadedAt` on: waits for a change through etcd's watch, then
  // refreshes the replica.
  void followChanges(std::int64_t loadedAt);

  class NoFabric;
  EtcdStore& store_;
  StandbyReadsOptions options_;
  std::unique_ptr<NoFabric> fabric_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<SwitchyardService> service_;
  std::unique_ptr<ResourceProviderService> provider_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread follower_;
};

}  // namespace switchyard

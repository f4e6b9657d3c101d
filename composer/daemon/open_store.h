// yardd's store step: the SQLite file (locked against a second yardd), or etcd, where this yardd stands by
// (serving reads, refusing changes with the leader's address) until it is elected leader.
#pragma once

#include <memory>
#include <optional>

#include "composer/auth/identities.h"
#include "composer/daemon/daemon_options.h"
#include "composer/daemon/grpc_security.h"
#include "composer/daemon/signal_waiter.h"
#include "composer/daemon/state_lock.h"
#include "composer/engine/engine.h"
#include "inventory/etcd/leader_election.h"
#include "inventory/store.h"

namespace switchyard {

struct OpenedStore {
  std::unique_ptr<Store> store;
  std::optional<StateLock> databaseLock;            // a SQLite file outside the state directory
  std::unique_ptr<etcd::LeaderElection> election;  // an etcd store: this yardd leads while it holds the key
};

struct StoreStepContext {
  const DaemonOptions& options;
  Clock& clock;
  SignalWaiter& signals;                // SIGTERM while standing by ends the wait
  const auth::Identities* identities;  // who may read from a standby (null: everyone, as an admin)
  const GrpcSecurity& security;         // the standby's reads are served as the leader's would be
  EngineOptions replicaOptions;         // placement and quotas as the leader will have them
};

// The store --store names. With etcd it returns once this yardd is the leader and its writes are fenced
// on the leader key (a lost lease exits 75 for the service manager to restart it as a standby); nullopt
// when a signal stopped it while it stood by.
[[nodiscard]] Result<std::optional<OpenedStore>> openStore(const StoreStepContext& context);

}  // namespace switchyard

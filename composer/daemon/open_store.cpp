#include "composer/daemon/open_store.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>

#include "composer/daemon/secret_files.h"
#include "composer/daemon/service_manager.h"
#include "composer/daemon/standby_reads.h"
#include "inventory/etcd/etcd_store.h"
#include "inventory/sqlite_store.h"

namespace switchyard {
namespace {

// How yardd reaches etcd: TLS files for an etcds:// store, an etcd user for a cluster with authentication on.
Result<etcd::ClientSecurity> etcdClientSecurity(const DaemonOptions& o, const etcd::EtcdUrl& url) {
  etcd::ClientSecurity s{o.etcdCa.string(), o.etcdCert.string(), o.etcdKey.string(), o.etcdUser, {}};
  const bool tls = url.endpoints.front().starts_with("https://");
  if (!tls && (!s.caFile.empty() || !s.certFile.empty()))
    return fail(Code::kInvalidArgument, fmt::format("--etcd-ca/--etcd-cert are for TLS: write the store as etcds://{}", o.store.substr(7)));
  if (s.certFile.empty() != s.keyFile.empty()) return fail(Code::kInvalidArgument, "--etcd-cert and --etcd-key go together");
  if (s.user.empty() != o.etcdPasswordFile.empty()) return fail(Code::kInvalidArgument, "--etcd-user and --etcd-password-file go together");
  if (!s.user.empty()) {
    SY_TRY(refuseIfOthersMayRead(o.etcdPasswordFile, "--etcd-password-file"));
    SY_ASSIGN(s.password, readPasswordFile(o.etcdPasswordFile, "--etcd-password-file"));
    if (!tls) spdlog::warn("the etcd password for {} goes over plain HTTP: use an etcds:// store", s.user);
  }
  return s;
}

Result<OpenedStore> openSqlite(const DaemonOptions& o) {
  OpenedStore opened;
  const std::filesystem::path path = o.store.empty() ? o.db() : std::filesystem::path(o.store.substr(7));
  if (std::filesystem::weakly_canonical(path.parent_path()) != std::filesystem::weakly_canonical(o.stateDir)) {
    SY_ASSIGN(auto locked, StateLock::acquire(std::filesystem::path(path.string() + ".yardd-lock"), "the database " + path.string()));
    opened.databaseLock.emplace(std::move(locked));
  }
  SY_ASSIGN(opened.store, SqliteStore::open(path, o.durability == "full" ? Durability::kFull : Durability::kNormal));
  spdlog::info("store {} (SQLite WAL, synchronous={})", path.string(), o.durability == "full" ? "FULL" : "NORMAL");
  return opened;
}

// Active/standby: only the leader opens the engine; the others wait here for the leader key to go, serving
// reads from the store (and refusing changes, naming the leader) on the gRPC port meanwhile.
Result<std::optional<OpenedStore>> openEtcdAsLeader(const StoreStepContext& c) {
  const DaemonOptions& o = c.options;
  SY_ASSIGN(const etcd::EtcdUrl url, etcd::parseEtcdUrl(o.store));
  SY_ASSIGN(etcd::ClientSecurity etcdSecurity, etcdClientSecurity(o, url));
  SY_ASSIGN(auto remote, EtcdStore::open(EtcdStoreOptions{url.endpoints, url.prefix, std::chrono::milliseconds(5000), etcdSecurity}));
  spdlog::info("store etcd {} under {} ({} member(s){}{})", o.store, url.prefix, url.endpoints.size(),
               url.endpoints.front().starts_with("https://") ? fmt::format(", TLS{}", etcdSecurity.certFile.empty() ? "" : " with a client certificate") : "",
               etcdSecurity.user.empty() ? "" : fmt::format(", as etcd user {}", etcdSecurity.user));
  OpenedStore opened;
  opened.election = std::make_unique<etcd::LeaderElection>(
      remote->client(), etcd::ElectionOptions{url.prefix, o.advertise.empty() ? o.listen : o.advertise, std::chrono::seconds(o.leaseTtlSeconds)});
  const auto waitStarted = std::chrono::steady_clock::now();
  Authenticator standbyAuthenticator(c.identities);
  std::unique_ptr<StandbyReads> standbyReads;
  if (auto reads = StandbyReads::start(*remote, c.clock, standbyAuthenticator, {o.listen, c.security.credentials, c.replicaOptions}); reads) {
    standbyReads = std::move(*reads);
    spdlog::info("standby: serving reads on {}; changes are refused with the leader's address", o.listen);
    notifyServiceManager("READY=1\nSTATUS=standing by: serving reads, waiting for the leadership");
  } else {
    spdlog::warn("standby: not serving reads while standing by: {}", reads.error().message);
  }
  auto won = opened.election->campaign([&c] { return c.signals.received() != 0; },
                                       [&standbyReads](const std::string& leader) {
                                         spdlog::info("standing by: the leader is {}", leader.empty() ? "(none yet)" : leader);
                                         if (standbyReads) standbyReads->setLeader(leader.starts_with("(") ? std::string() : leader);
                                       });
  if (standbyReads) standbyReads->stop();  // the leader's server takes the port over
  if (!won) {
    spdlog::info("stopped while standing by");
    return std::optional<OpenedStore>();
  }
  notifyServiceManager("STATUS=elected leader: recovering");
  spdlog::info("elected leader after {} ms of standing by (lease {}, fencing revision {}); recovering as after a restart",
               std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - waitStarted).count(), won->lease,
               won->keyRevision);
  remote->fenceOn(url.prefix + "leader", won->keyRevision);
  opened.election->keepLeading([](const std::string& why) {
    // A successor may be elected any moment now, and every write of ours is fenced off: stop at once and
    // let the service manager start this yardd again, as a standby.
    spdlog::critical("leadership lost: {}; exiting so a standby takes over (restart this yardd to stand by again)", why);
    spdlog::shutdown();
    std::_Exit(75);
  });
  opened.store = std::move(remote);
  return std::optional<OpenedStore>(std::move(opened));
}

}  // namespace

Result<std::optional<OpenedStore>> openStore(const StoreStepContext& context) {
  const std::string& store = context.options.store;
  if (store.empty() || store.starts_with("sqlite:")) {
    SY_ASSIGN(auto opened, openSqlite(context.options));
    return std::optional<OpenedStore>(std::move(opened));
  }
  return openEtcdAsLeader(context);
}

}  // namespace switchyard

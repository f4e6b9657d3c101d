// Active/standby on etcd: one yardd holds the leader key (P leader), attached to a lease it keeps alive;
// the others wait for the key to go. Losing the lease (a missed keep-alive, etcd unreachable for longer
// than the TTL, the key gone) is reported once through onLost: the holder must stop acting at once, since
// a successor may be elected as soon as the lease runs out. The store's writes are fenced twice: by the
// writer epoch the new leader claims, and by the leader key's creation revision (EtcdStore::fenceOn), so a
// leader whose lease expired cannot write even before a successor claims the store.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "inventory/etcd/etcd_client.h"

namespace switchyard::etcd {

struct ElectionOptions {
  std::string prefix = "/switchyard/";  // the leader key is prefix + "leader"
  std::string candidate;                // this yardd's name (host:port), stored as the key's value
  std::chrono::seconds ttl{6};          // the lease: how long a dead leader holds the key
  std::chrono::milliseconds pollInterval{200};  // how often a standby looks at the key
};

struct Leadership {
  std::int64_t lease = 0;
  std::int64_t keyRevision = 0;  // the leader key's creation revision: the fencing token
};

class LeaderElection {
 public:
  LeaderElection(Client& client, ElectionOptions options);
  ~LeaderElection();
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Blocks until this candidate is the leader, or `stop` says to give up (then kAborted). `onWaiting`
  // is told who leads while waiting (once per change).
  [[nodiscard]] Result<Leadership> campaign(const std::function<bool()>& stop, const std::function<void(const std::string&)>& onWaiting = {});
  // Keeps the lease alive in the background from now on; `onLost` runs once (on that thread) if it lapses.
  void keepLeading(std::function<void(const std::string& why)> onLost);
  // Gives the key up at once (a clean shutdown), so a standby takes over without waiting for the TTL.
  void resign();
  // The current leader's name, or "" when none.
  [[nodiscard]] Result<std::string> leader();

 private:
  Client& client_;
  ElectionOptions options_;
  Leadership leadership_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread keeper_;
};

}  // namespace switchyard::etcd

#include "inventory/etcd/leader_election.h"

#include <fmt/format.h>

namespace switchyard::etcd {

LeaderElection::LeaderElection(Client& client, ElectionOptions options) : client_(client), options_(std::move(options)) {}

LeaderElection::~LeaderElection() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (keeper_.joinable()) keeper_.join();
}

Result<std::string> LeaderElection::leader() {
  SY_ASSIGN(auto r, client_.range({options_.prefix + "leader", {}, 1, false, false}));
  return r.kvs.empty() ? std::string{} : r.kvs.front().value;
}

Result<Leadership> LeaderElection::campaign(const std::function<bool()>& stop, const std::function<void(const std::string&)>& onWaiting) {
  const std::string key = options_.prefix + "leader";
  std::string lastSeen = "\x01";
  while (!stop()) {
    auto lease = client_.leaseGrant(options_.ttl);
    if (lease) {
      // Create the key only if there is none; else read who holds it.
      auto t = client_.txn({Compare{key, Compare::Target::kCreate, Compare::Result::kEqual, 0, {}}},
                           {Op{Op::Kind::kPut, key, options_.candidate, {}, *lease}, Op{Op::Kind::kRange, key, {}, {}, 0}},
                           {Op{Op::Kind::kRange, key, {}, {}, 0}});
      if (t && t->succeeded && !t->ranges.empty() && !t->ranges.front().empty()) {
        leadership_ = {*lease, t->ranges.front().front().createRevision};
        return leadership_;
      }
      (void)client_.leaseRevoke(*lease);
      const std::string holder = t && !t->ranges.empty() && !t->ranges.front().empty() ? t->ranges.front().front().value : "";
      if (holder != lastSeen && onWaiting) onWaiting(t ? holder : fmt::format("(etcd: {})", t.error().message));
      lastSeen = holder;
    } else if (onWaiting && lastSeen != "(unreachable)") {
      onWaiting(fmt::format("(etcd unreachable: {})", lease.error().message));
      lastSeen = "(unreachable)";
    }
    // Wait for the key to go: poll (the gateway's watch is a long-lived stream; a poll is enough at this rate).
    while (!stop()) {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, options_.pollInterval, [this] { return stopping_; });
      if (stopping_) return fail(Code::kAborted, "stopped while standing by");
      lock.unlock();
      auto r = client_.range({key, {}, 1, false, false});
      if (r && r->kvs.empty()) break;
    }
  }
  return fail(Code::kAborted, "stopped while standing by");
}

void LeaderElection::keepLeading(std::function<void(const std::string&)> onLost) {
  keeper_ = std::thread([this, onLost = std::move(onLost)] {
    const auto every = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(100), std::chrono::duration_cast<std::chrono::milliseconds>(options_.ttl) / 3);
    auto lastRenewed = std::chrono::steady_clock::now();
    while (true) {
      {
        std::unique_lock lock(mutex_);
        if (wake_.wait_for(lock, every, [this] { return stopping_; })) return;
      }
      auto ttl = client_.leaseKeepAlive(leadership_.lease);
      if (ttl && *ttl > 0) {
        lastRenewed = std::chrono::steady_clock::now();
        continue;
      }
      // A lease that etcd says is gone is lost now; one that cannot be renewed is lost once the TTL has
      // passed since the last renewal (etcd may already have elected a successor by then).
      if (ttl) return onLost("the leader lease expired");
      if (std::chrono::steady_clock::now() - lastRenewed >= options_.ttl * 2 / 3)
        return onLost(fmt::format("the leader lease could not be renewed for {} s: {}", options_.ttl.count(), ttl.error().message));
    }
  });
}

void LeaderElection::resign() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  if (leadership_.lease != 0) (void)client_.leaseRevoke(leadership_.lease);  // deletes the key with it
  leadership_ = {};
}

}  // namespace switchyard::etcd

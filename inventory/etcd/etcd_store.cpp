#include "inventory/etcd/etcd_store.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "composer/model/fail_points.h"
#include "inventory/etcd/records.h"
#include "inventory/record_number.h"

namespace switchyard {

using etcd::Compare;
using etcd::Op;

namespace {

std::uint64_t numberOfKey(std::string_view key) {
  const auto slash = key.rfind('/');
  std::uint64_t n = 0;
  for (char c : key.substr(slash + 1)) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

// Per-key deletes in one prune transaction (etcd bounds a transaction's operations).
constexpr std::size_t kMaxKeyDeletesPerPrune = 1000;

// etcd refuses a request over --max-request-bytes (1.5 MiB by default): an inventory larger than this is
// written as chunks of this size, each in a transaction of its own.
constexpr std::size_t kInventoryChunkBytes = 768 * 1024;

}  // namespace

// The writes of one batch as etcd operations, with reads that see the batch's own earlier puts.
class EtcdStore::Batch {
 public:
  Batch(EtcdStore& store, WriterEpoch epoch) : store_(store), epoch_(epoch) {}

  Result<std::optional<std::string>> read(const std::string& key) {
    if (auto it = pending_.find(key); it != pending_.end()) return it->second;
    return store_.get(key);
  }
  // A key written twice in a batch is written once, with its last value (etcd refuses a transaction that
  // names a key twice).
  void put(const std::string& key, std::string value) { pending_[key] = std::move(value); }
  void erase(const std::string& key) { pending_[key] = std::nullopt; }
  [[nodiscard]] std::vector<Op> ops() const {
    std::vector<Op> out;
    out.reserve(pending_.size() + rangeDeletes_.size());
    for (const auto& [key, value] : pending_)
      out.push_back(value ? Op{Op::Kind::kPut, key, *value, {}, 0} : Op{Op::Kind::kDelete, key, {}, {}, 0});
    out.insert(out.end(), rangeDeletes_.begin(), rangeDeletes_.end());
    return out;
  }
  void mustBeNew(const std::string& key) { compares_.push_back(Compare{key, Compare::Target::kVersion, Compare::Result::kEqual, 0, {}}); }

  // A small inventory is the value of P inventory. A large one (100,000 GPUs is about 28 MB) is written
  // first, as chunks under P inventory/GENERATION/, each in a fenced transaction of its own; the batch then
  // points P inventory at them ({"generation", "chunks", "bytes"}) and deletes every other generation, in
  // its one transaction. Until it commits the chunks are unreferenced, so the batch stays all-or-nothing;
  // chunks a failed batch left behind go with the next inventory written.
  Result<void> apply(const PutInventory& w) {
    const std::string& p = store_.options_.prefix;
    std::string text = etcd::toJson(w.topology).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const std::string chunks = p + "inventory/";
    rangeDeletes_.clear();
    if (text.size() <= kInventoryChunkBytes) {
      put(p + "inventory", std::move(text));
      rangeDeletes_.push_back(Op{Op::Kind::kDelete, chunks, {}, etcd::prefixEnd(chunks), 0});
      return {};
    }
    const std::string generation = fmt::format("{:020}-{:06}", epoch_, ++store_.inventoriesWritten_);
    const std::size_t count = (text.size() + kInventoryChunkBytes - 1) / kInventoryChunkBytes;
    for (std::size_t i = 0; i < count; ++i)
      SY_TRY(store_.commit(epoch_, {},
                           {Op{Op::Kind::kPut, fmt::format("{}{}/{:08}", chunks, generation, i), text.substr(i * kInventoryChunkBytes, kInventoryChunkBytes),
                               {}, 0}}));
    put(p + "inventory", nlohmann::json{{"generation", generation}, {"chunks", count}, {"bytes", text.size()}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    const std::string mine = chunks + generation + "/";
    rangeDeletes_.push_back(Op{Op::Kind::kDelete, chunks, {}, mine, 0});
    rangeDeletes_.push_back(Op{Op::Kind::kDelete, etcd::prefixEnd(mine), {}, etcd::prefixEnd(chunks), 0});
    return {};
  }
  Result<void> apply(const PutSystem& w) {
    put(store_.key("systems/", numberFromId(w.system.id)), etcd::toJson(w.system).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return {};
  }
  Result<void> apply(const PutOperation& w) {
    const Operation& op = w.operation;
    put(store_.key("ops/", numberFromId(op.id)), etcd::toJson(op).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!op.requestId.empty()) {
      const std::string requestKey = store_.options_.prefix + "requests/" + op.requestId;
      SY_ASSIGN(auto holder, read(requestKey));
      if (holder && *holder != op.id)
        return fail(Code::kAlreadyExists, fmt::format("request id '{}' started {} already", op.requestId, *holder));
      if (!holder) put(requestKey, op.id);
    }
    return {};
  }
  Result<void> apply(const PutAssignment& w) {
    const std::string k = store_.options_.prefix + "assignments/" + w.assignment.deviceId;
    if (w.assignment.allocation == DeviceAllocation::kFree) erase(k);
    else put(k, etcd::toJson(w.assignment).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return {};
  }
  Result<void> apply(const PutEvent& w) {
    const std::string k = store_.key("events/", w.event.sequence);
    mustBeNew(k);
    put(k, etcd::toJson(w.event).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return {};
  }
  // Keyed by start, then device: a window's stretches are one range read. A later checkpoint replaces an earlier.
  Result<void> apply(const PutIdleStretch& w) {
    put(store_.idleKey(w.stretch.from, w.stretch.deviceId), etcd::toJson(w.stretch).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return {};
  }
  Result<void> apply(const PutDemand& w) {
    if (!nextDemand_) {
      SY_ASSIGN(auto last, store_.lastNumber("demand/"));
      nextDemand_ = last + 1;
    }
    put(store_.key("demand/", (*nextDemand_)++), etcd::toJson(w.shape).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return {};
  }
  Result<void> apply(const PutAudit& w) {
    const std::string k = store_.key("audit/", w.record.sequence);
    mustBeNew(k);
    put(k, etcd::toJson(w.record).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!w.record.operationId.empty()) put(store_.options_.prefix + "auditops/" + w.record.operationId, std::to_string(w.record.sequence));
    return {};
  }
  Result<void> apply(const PutAuditOutcome& w) {
    SY_ASSIGN(auto sequence, read(store_.options_.prefix + "auditops/" + w.operationId));
    if (!sequence) return {};  // no audit record names the operation (as SQLite's UPDATE of no row)
    const std::string k = store_.key("audit/", std::stoull(*sequence));
    SY_ASSIGN(auto text, read(k));
    if (!text) return {};  // pruned
    SY_ASSIGN(AuditRecord record, etcd::auditFrom(*text, k));
    record.outcome = w.outcome;
    record.finishedAt = w.finishedAt;
    put(k, etcd::toJson(record).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return {};
  }

  std::vector<Compare> compares_;

 private:
  EtcdStore& store_;
  WriterEpoch epoch_;
  std::map<std::string, std::optional<std::string>> pending_;
  std::vector<Op> rangeDeletes_;  // inventory chunks of other generations
  std::optional<std::uint64_t> nextDemand_;
};

EtcdStore::EtcdStore(EtcdStoreOptions options)
    : options_(std::move(options)), client_(std::make_unique<etcd::Client>(etcd::ClientOptions{options_.endpoints, options_.timeout, options_.security})) {}

Result<std::unique_ptr<EtcdStore>> EtcdStore::open(EtcdStoreOptions options) {
  if (options.prefix.empty() || options.prefix.back() != '/') options.prefix += '/';
  auto store = std::unique_ptr<EtcdStore>(new EtcdStore(std::move(options)));
  if (auto r = store->get(store->options_.prefix + "writer"); !r)
    return fail(r.error().wrap(fmt::format("etcd store at {}", store->client_->endpoint())));
  return store;
}

std::string EtcdStore::key(std::string_view kind, std::uint64_t number) const {
  return fmt::format("{}{}{:020}", options_.prefix, kind, number);
}

Result<std::optional<std::string>> EtcdStore::get(const std::string& k) {
  SY_ASSIGN(auto r, client_->range({k, {}, 1, false, false}));
  if (r.kvs.empty()) return std::optional<std::string>{};
  return std::optional<std::string>(std::move(r.kvs.front().value));
}

Result<std::vector<etcd::KeyValue>> EtcdStore::scan(const std::string& from, const std::string& to, std::size_t limit, bool descending) {
  std::vector<etcd::KeyValue> out;
  std::string low = from, high = to;
  constexpr std::int64_t kPage = 1000;
  while (true) {
    const std::int64_t want = limit == 0 ? kPage : std::min<std::int64_t>(kPage, static_cast<std::int64_t>(limit - out.size()));
    SY_ASSIGN(auto page, client_->range({low, high, want, descending, false}));
    for (auto& kv : page.kvs) out.push_back(std::move(kv));
    if (!page.more || page.kvs.empty() || (limit != 0 && out.size() >= limit)) break;
    if (descending) high = out.back().key;  // [low, last) excludes the last one read
    else low = out.back().key + std::string(1, '\0');
  }
  return out;
}

Result<std::uint64_t> EtcdStore::lastNumber(std::string_view kind) {
  const std::string p = options_.prefix + std::string(kind);
  SY_ASSIGN(auto r, client_->range({p, etcd::prefixEnd(p), 1, true, false}));
  return r.kvs.empty() ? 0 : numberOfKey(r.kvs.front().key);
}

Result<std::uint64_t> EtcdStore::firstNumber(std::string_view kind) {
  const std::string p = options_.prefix + std::string(kind);
  SY_ASSIGN(auto r, client_->range({p, etcd::prefixEnd(p), 1, false, false}));
  return r.kvs.empty() ? 0 : numberOfKey(r.kvs.front().key);
}

Result<WriterEpoch> EtcdStore::claimWriter() {
  const std::string k = options_.prefix + "writer";
  for (int attempt = 0; attempt < 100; ++attempt) {
    SY_ASSIGN(auto r, client_->range({k, {}, 1, false, false}));
    const WriterEpoch current = r.kvs.empty() ? 0 : std::stoull(r.kvs.front().value);
    const WriterEpoch next = current + 1;
    Compare unchanged = r.kvs.empty() ? Compare{k, Compare::Target::kVersion, Compare::Result::kEqual, 0, {}}
                                      : Compare{k, Compare::Target::kMod, Compare::Result::kEqual, r.kvs.front().modRevision, {}};
    SY_ASSIGN(auto t, client_->txn({unchanged}, {Op{Op::Kind::kPut, k, std::to_string(next), {}, 0}}));
    if (t.succeeded) return next;  // another claimant got in between: read and try again
  }
  return fail(Code::kAborted, "could not claim the etcd store's writer key: it kept changing");
}

Result<void> EtcdStore::commit(WriterEpoch epoch, std::vector<Compare> compares, std::vector<Op> ops) {
  const std::string writer = options_.prefix + "writer";
  compares.insert(compares.begin(), Compare{writer, Compare::Target::kValue, Compare::Result::kEqual, 0, std::to_string(epoch)});
  if (!leaderKey_.empty()) compares.insert(compares.begin(), Compare{leaderKey_, Compare::Target::kCreate, Compare::Result::kEqual, leaderRevision_, {}});
  SY_TRY(failpoints::hit("store.before-commit"));
  SY_ASSIGN(auto t, client_->txn(compares, ops));
  if (!t.succeeded) {
    if (!leaderKey_.empty()) {
      SY_ASSIGN(auto r, client_->range({leaderKey_, {}, 1, false, false}));
      if (r.kvs.empty() || r.kvs.front().createRevision != leaderRevision_)
        return fail(Code::kFailedPrecondition, "fenced: this yardd's leader lease has lapsed (another yardd may lead now)");
    }
    SY_ASSIGN(auto current, get(writer));
    const std::string now = current.value_or("0");
    if (now != std::to_string(epoch))
      return fail(Code::kFailedPrecondition,
                  fmt::format("fenced: this writer's epoch is {}, the store's is {} (another yardd has taken over the store)", epoch, now));
    return fail(Code::kAlreadyExists, "the batch writes an event or audit record whose sequence is taken; nothing was written");
  }
  failpoints::crashPoint("store.after-commit");
  return {};
}

Result<void> EtcdStore::write(std::span<const StoreWrite> batch, WriterEpoch epoch) {
  if (epoch == 0) return fail(Code::kFailedPrecondition, "fenced: epoch 0 is never a writer");
  Batch b(*this, epoch);
  for (const auto& w : batch) SY_TRY(std::visit([&b](const auto& item) { return b.apply(item); }, w));
  return commit(epoch, std::move(b.compares_), b.ops());
}

Result<std::int64_t> EtcdStore::inventoryRevision() {
  SY_ASSIGN(auto r, client_->range({options_.prefix + "inventory", {}, 1, false, false}));
  return r.kvs.empty() ? std::int64_t{0} : r.kvs.front().modRevision;
}

Result<StoreSnapshot> EtcdStore::load(LoadScope scope) {
  StoreSnapshot snap;
  const std::string& p = options_.prefix;
  if (scope == LoadScope::kEverything) {
    SY_ASSIGN(auto inventory, loadInventory());
    snap.inventory = std::move(inventory);
  }
  SY_ASSIGN(auto systems, scan(p + "systems/", etcd::prefixEnd(p + "systems/")));
  for (const auto& kv : systems) {
    SY_ASSIGN(System s, etcd::systemFrom(kv.value, kv.key));
    if (s.state != SystemState::kDecomposed && s.state != SystemState::kFailed) snap.systems.push_back(std::move(s));
  }
  SY_ASSIGN(auto ops, scan(p + "ops/", etcd::prefixEnd(p + "ops/")));
  for (const auto& kv : ops) {
    SY_ASSIGN(Operation op, etcd::operationFrom(kv.value, kv.key));
    if (!op.finished()) snap.unfinishedOperations.push_back(std::move(op));
  }
  SY_ASSIGN(auto assignments, scan(p + "assignments/", etcd::prefixEnd(p + "assignments/")));
  for (const auto& kv : assignments) {
    SY_ASSIGN(auto a, etcd::assignmentFrom(kv.value, kv.key));
    snap.assignments.push_back(std::move(a));
  }
  SY_ASSIGN(auto demand, scan(p + "demand/", etcd::prefixEnd(p + "demand/"), kDemandWindow, true));
  for (auto it = demand.rbegin(); it != demand.rend(); ++it) {
    SY_ASSIGN(auto d, etcd::demandFrom(it->value, it->key));
    snap.recentDemand.push_back(std::move(d));
  }
  SY_ASSIGN(snap.lastEventSequence, lastNumber("events/"));
  SY_ASSIGN(snap.lastAuditSequence, lastNumber("audit/"));
  SY_ASSIGN(snap.lastSystemNumber, lastNumber("systems/"));
  SY_ASSIGN(snap.lastOperationNumber, lastNumber("ops/"));
  return snap;
}

Result<std::int64_t> EtcdStore::revision() {
  SY_ASSIGN(auto r, client_->range({options_.prefix, etcd::prefixEnd(options_.prefix), 0, false, true}));
  return r.revision;
}

Result<bool> EtcdStore::waitForChange(std::int64_t fromRevision, std::chrono::milliseconds wait) {
  SY_ASSIGN(auto change, client_->watch(options_.prefix, etcd::prefixEnd(options_.prefix), fromRevision, wait));
  return change.has_value();
}

Result<std::optional<Topology>> EtcdStore::loadInventory() {
  const std::string k = options_.prefix + "inventory";
  SY_ASSIGN(auto value, get(k));
  if (!value) return std::optional<Topology>{};
  const auto manifest = nlohmann::json::parse(*value, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("generation")) {
    SY_ASSIGN(Topology t, etcd::topologyFrom(*value, k));
    return std::optional<Topology>(std::move(t));
  }
  const std::string generation = manifest.value("generation", "");
  const std::size_t count = manifest.value("chunks", std::size_t{0});
  const std::size_t bytes = manifest.value("bytes", std::size_t{0});
  std::string text;
  text.reserve(bytes);
  for (std::size_t i = 0; i < count; ++i) {  // one at a time: a page of chunks could exceed a reply's limit
    const std::string chunk = fmt::format("{}inventory/{}/{:08}", options_.prefix, generation, i);
    SY_ASSIGN(auto part, get(chunk));
    if (!part) return fail(Code::kInternal, fmt::format("etcd store: {} names {} chunks, but {} is missing", k, count, chunk));
    text += *part;
  }
  if (text.size() != bytes)
    return fail(Code::kInternal, fmt::format("etcd store: the inventory's chunks hold {} bytes, its manifest says {}", text.size(), bytes));
  SY_ASSIGN(Topology t, etcd::topologyFrom(text, k));
  return std::optional<Topology>(std::move(t));
}

Result<std::optional<Operation>> EtcdStore::getOperation(const OperationId& id) {
  const std::string k = key("ops/", numberFromId(id));
  SY_ASSIGN(auto text, get(k));
  if (!text) return std::optional<Operation>{};
  SY_ASSIGN(Operation op, etcd::operationFrom(*text, k));
  if (op.id != id) return std::optional<Operation>{};
  return std::optional<Operation>(std::move(op));
}

Result<std::optional<Operation>> EtcdStore::findOperationByRequest(std::string_view requestId) {
  if (requestId.empty()) return std::optional<Operation>{};
  SY_ASSIGN(auto id, get(options_.prefix + "requests/" + std::string(requestId)));
  if (!id) return std::optional<Operation>{};
  return getOperation(*id);
}

Result<std::vector<Operation>> EtcdStore::queryOperations(const OperationQuery& q) {
  // Newest first; with filters, every kept operation is read (the history's retention bounds them) and the
  // newest that match are kept.
  const std::string p = options_.prefix + "ops/";
  SY_ASSIGN(auto kvs, scan(p, etcd::prefixEnd(p), q.filtered() ? 0 : q.limit, true));
  std::vector<Operation> out;
  for (const auto& kv : kvs) {
    if (out.size() >= q.limit) break;
    SY_ASSIGN(auto op, etcd::operationFrom(kv.value, kv.key));
    if (q.matches(op)) out.push_back(std::move(op));
  }
  return out;
}

Result<std::vector<Event>> EtcdStore::listEvents(std::uint64_t afterSequence, std::size_t limit) {
  const std::string p = options_.prefix + "events/";
  std::vector<Event> out;
  if (limit == 0) return out;
  SY_ASSIGN(auto kvs, scan(key("events/", afterSequence + 1), etcd::prefixEnd(p), limit));
  for (const auto& kv : kvs) {
    SY_ASSIGN(auto e, etcd::eventFrom(kv.value, kv.key));
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<AuditRecord>> EtcdStore::listAudit(const AuditQuery& q) {
  const std::string p = options_.prefix + "audit/";
  std::vector<AuditRecord> out;
  std::string high = q.beforeSequence != 0 ? key("audit/", q.beforeSequence) : etcd::prefixEnd(p);
  // Newest first, a page at a time, filtered here (etcd has no secondary indexes).
  while (out.size() < q.limit) {
    SY_ASSIGN(auto page, client_->range({p, high, 500, true, false}));
    for (const auto& kv : page.kvs) {
      SY_ASSIGN(auto a, etcd::auditFrom(kv.value, kv.key));
      if (q.since != 0 && a.at < q.since) continue;
      if (q.until != 0 && a.at >= q.until) continue;
      if (!q.tenant.empty() && a.tenant != q.tenant && a.caller.tenant != q.tenant) continue;
      if (!q.identity.empty() && a.caller.identity != q.identity) continue;
      out.push_back(std::move(a));
      if (out.size() >= q.limit) break;
    }
    if (!page.more || page.kvs.empty()) break;
    high = page.kvs.back().key;
  }
  return out;
}

std::string EtcdStore::idleKey(Timestamp from, const DeviceId& device) const {
  return fmt::format("{}idle/{:020}/{}", options_.prefix, from, device);
}

Result<std::map<SystemId, SystemIdentity>> EtcdStore::systemIdentities(const std::set<SystemId>& ids) {
  std::map<SystemId, SystemIdentity> out;
  // A few (a page of operations): one read each. Many (a usage report over a long log): one scan of the systems,
  // whose history holds at most RetentionPolicy::finishedOperations of them.
  constexpr std::size_t kReadEachUpTo = 64;
  if (ids.size() <= kReadEachUpTo) {
    for (const auto& id : ids) {
      SY_ASSIGN(auto value, get(key("systems/", numberFromId(id))));
      if (!value) continue;
      SY_ASSIGN(System s, etcd::systemFrom(*value, id));
      out[s.id] = SystemIdentity{s.name, s.labels};
    }
    return out;
  }
  SY_ASSIGN(auto systems, scan(options_.prefix + "systems/", etcd::prefixEnd(options_.prefix + "systems/")));
  for (const auto& kv : systems) {
    SY_ASSIGN(System s, etcd::systemFrom(kv.value, kv.key));
    if (ids.contains(s.id)) out[s.id] = SystemIdentity{s.name, s.labels};
  }
  return out;
}

Result<std::vector<IdleStretch>> EtcdStore::listIdleStretches(Timestamp since, Timestamp until) {
  std::vector<IdleStretch> out;
  SY_ASSIGN(auto kvs, scan(options_.prefix + "idle/", idleKey(std::max<Timestamp>(0, until), "")));
  for (const auto& kv : kvs) {
    SY_ASSIGN(auto s, etcd::idleStretchFrom(kv.value, kv.key));
    if (s.to > since && s.from < until) out.push_back(std::move(s));
  }
  return out;
}

Result<PruneReport> EtcdStore::prune(const RetentionPolicy& policy, WriterEpoch epoch) {
  if (epoch == 0) return fail(Code::kFailedPrecondition, "fenced: epoch 0 is never a writer");
  {  // fenced before reading anything, so a deposed writer learns it here
    SY_ASSIGN(auto current, get(options_.prefix + "writer"));
    if (current.value_or("0") != std::to_string(epoch))
      return fail(Code::kFailedPrecondition, fmt::format("fenced: this writer's epoch is {}, the store's is {}", epoch, current.value_or("0")));
  }
  PruneReport report;
  std::vector<Op> ops;
  // A numbered trail (events, audit, demand): everything up to `last - keep`, at most maxRowsPerRun of it.
  auto trail = [&](std::string_view kind, std::size_t keep, std::size_t& counted) -> Result<std::vector<etcd::KeyValue>> {
    SY_ASSIGN(const std::uint64_t last, lastNumber(kind));
    SY_ASSIGN(const std::uint64_t first, firstNumber(kind));
    if (first == 0 || last < keep + first) return std::vector<etcd::KeyValue>{};
    const std::uint64_t upTo = std::min<std::uint64_t>(last - keep, first + policy.maxRowsPerRun - 1);
    SY_ASSIGN(auto doomed, scan(key(kind, first), key(kind, upTo + 1)));
    counted = doomed.size();
    if (!doomed.empty()) ops.push_back(Op{Op::Kind::kDelete, key(kind, first), {}, key(kind, upTo + 1), 0});
    return doomed;
  };
  SY_TRY(trail("events/", std::max<std::size_t>(1, policy.events), report.events));
  SY_ASSIGN(auto audit, trail("audit/", std::max<std::size_t>(1, policy.audit), report.audit));
  for (const auto& kv : audit)
    if (auto a = etcd::auditFrom(kv.value, kv.key); a && !a->operationId.empty() && ops.size() < kMaxKeyDeletesPerPrune)
      ops.push_back(Op{Op::Kind::kDelete, options_.prefix + "auditops/" + a->operationId, {}, {}, 0});
  SY_TRY(trail("demand/", policy.demand, report.demand));

  // Finished operations and ended systems beyond the newest `keep` numbers, oldest first.
  const std::size_t keep = std::max<std::size_t>(1, policy.finishedOperations);
  const std::size_t most = std::min(policy.maxRowsPerRun, kMaxKeyDeletesPerPrune);
  std::set<std::string> doomedOps;
  SY_ASSIGN(const std::uint64_t lastOp, lastNumber("ops/"));
  if (lastOp > keep) {
    SY_ASSIGN(auto old, scan(options_.prefix + "ops/", key("ops/", lastOp - keep + 1), most));
    for (const auto& kv : old) {
      SY_ASSIGN(auto op, etcd::operationFrom(kv.value, kv.key));
      if (!op.finished()) continue;
      ops.push_back(Op{Op::Kind::kDelete, kv.key, {}, {}, 0});
      doomedOps.insert(kv.key);
      if (!op.requestId.empty()) ops.push_back(Op{Op::Kind::kDelete, options_.prefix + "requests/" + op.requestId, {}, {}, 0});
      ++report.operations;
    }
  }
  SY_ASSIGN(const std::uint64_t lastSystem, lastNumber("systems/"));
  if (lastSystem > keep) {
    SY_ASSIGN(auto old, scan(options_.prefix + "systems/", key("systems/", lastSystem - keep + 1), most));
    for (const auto& kv : old) {
      SY_ASSIGN(auto s, etcd::systemFrom(kv.value, kv.key));
      if (s.state != SystemState::kDecomposed && s.state != SystemState::kFailed) continue;
      ops.push_back(Op{Op::Kind::kDelete, kv.key, {}, {}, 0});
      ++report.systems;
    }
  }
  // Idle stretches that ended before the oldest operation left: usage, which reads that log, reads no further.
  SY_ASSIGN(auto oldest, scan(options_.prefix + "ops/", etcd::prefixEnd(options_.prefix + "ops/"), doomedOps.size() + 1));
  std::erase_if(oldest, [&](const etcd::KeyValue& kv) { return doomedOps.contains(kv.key); });
  if (!oldest.empty()) {
    SY_ASSIGN(auto first, etcd::operationFrom(oldest.front().value, oldest.front().key));
    SY_ASSIGN(auto old, scan(options_.prefix + "idle/", idleKey(first.createdAt, ""), most));
    for (const auto& kv : old) {
      SY_ASSIGN(auto s, etcd::idleStretchFrom(kv.value, kv.key));
      if (s.to >= first.createdAt || ops.size() >= kMaxKeyDeletesPerPrune) continue;
      ops.push_back(Op{Op::Kind::kDelete, kv.key, {}, {}, 0});
      ++report.idleStretches;
    }
  }
  if (!ops.empty()) SY_TRY(commit(epoch, {}, std::move(ops)));
  return report;
}

}  // namespace switchyard

#include "composer/api/switchyard_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <mutex>

#include "composer/api/proto_convert.h"
#include "composer/api/service_support.h"
#include "net/grpc_status.h"
#include "composer/api/tenant_redaction.h"
#include "composer/model/access.h"
#include "composer/model/label_selector.h"
#include "composer/model/version.h"

// GCC 12 reports a std::expected<std::vector<...>> handed through std::function as "maybe used
// uninitialized" once inlined (a known false positive of -Wmaybe-uninitialized at -O2); it is initialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace switchyard {

namespace {

// One page of a list, in id order: the items after `token` (the last id of the page before), at most
// `pageSize` of them (0: 1000; at most 10000); the token of the next page, empty on the last.
constexpr int kDefaultPageSize = 1000;
constexpr int kMaxPageSize = 10000;
constexpr std::size_t kWatchReplayLimit = 100'000;
// A page ends before its message passes this many bytes, whatever its item count: under gRPC's default 4 MB
// limit on a received message, with room for the rest of the response (a system's labels alone can be 20 KB).
constexpr std::size_t kPageBytes = 3u << 20;  // recorded events a Watch replays before going live

template <typename T, typename IdOf, typename Keep>
std::vector<const T*> pageOf(const std::vector<T>& all, IdOf idOf, Keep keep, int pageSize, const std::string& token, std::string& next) {
  std::vector<const T*> sorted;
  sorted.reserve(all.size());
  for (const auto& item : all)
    if (keep(item)) sorted.push_back(&item);
  std::sort(sorted.begin(), sorted.end(), [&](const T* a, const T* b) { return idOf(*a) < idOf(*b); });
  auto from = token.empty() ? sorted.begin()
                            : std::upper_bound(sorted.begin(), sorted.end(), token, [&](const std::string& t, const T* item) { return t < idOf(*item); });
  const auto size = static_cast<std::size_t>(pageSize <= 0 ? kDefaultPageSize : std::min(pageSize, kMaxPageSize));
  const auto left = static_cast<std::size_t>(sorted.end() - from);
  std::vector<const T*> page(from, from + static_cast<std::ptrdiff_t>(std::min(size, left)));
  next = left > size ? idOf(*page.back()) : std::string{};
  return page;
}


}  // namespace

grpc::ServerUnaryReactor* SwitchyardService::Compose(Context* ctx, const v1::ComposeRequest* req, v1::Operation* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (!req->has_gpus() && !req->has_memory() && req->endpoints().empty() && req->machine_template().empty())
    return finished(ctx, invalid("gpus: required (how many GPUs, or which devices), or memory, or endpoints, or a machine_template"));
  // A tenant's identity composes for its tenant unless it names one (the engine refuses another).
  auto placement = fromProto(req->gpus(), req->tenant().empty() ? caller->tenant : req->tenant());
  if (!placement) return finished(ctx, toGrpcStatus(placement.error()));
  placement->pooledMemoryGiB = req->memory().gib();
  if (auto endpoints = endpointsFromProto(req->endpoints()); !endpoints) return finished(ctx, toGrpcStatus(endpoints.error()));
  else placement->endpoints = std::move(*endpoints);
  ComposeRequest request{req->name(), std::move(*placement), {req->labels().begin(), req->labels().end()}, req->request_id()};
  constexpr std::int64_t kTenYears = 10LL * 365 * 24 * 3600;
  if (req->queue_timeout_seconds() < 0 || req->queue_timeout_seconds() > kTenYears)
    return finished(ctx, invalid("queue_timeout_seconds: 0 (wait until cancelled) or a number of seconds"));
  if (req->lease_seconds() < 0 || req->lease_seconds() > kTenYears) return finished(ctx, invalid("lease_seconds: 0 (no lease) or a number of seconds"));
  request.queue = req->queue();
  request.priorityClass = req->priority_class();
  request.queueTimeout = std::chrono::seconds(req->queue_timeout_seconds());
  request.lease = std::chrono::seconds(req->lease_seconds());
  request.machineTemplate = req->machine_template();
  request.peerToPeerAsked = req->gpus().peer_to_peer() != v1::PEER_TO_PEER_UNSPECIFIED;
  return answer<Operation>(
      ctx, [c = *caller, r = std::move(request)](EngineCore& core) { return core.compose(c, r); }, fillOperation(engine_, out));
}

grpc::ServerUnaryReactor* SwitchyardService::Decompose(Context* ctx, const v1::DecomposeRequest* req, v1::Operation* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->system().empty()) return finished(ctx, invalid("system: required (id or name)"));
  return answer<Operation>(
      ctx, [c = *caller, system = req->system(), key = req->request_id()](EngineCore& core) { return core.decompose(c, system, key); }, fillOperation(engine_, out));
}

grpc::ServerUnaryReactor* SwitchyardService::Attach(Context* ctx, const v1::AttachRequest* req, v1::Operation* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->system().empty()) return finished(ctx, invalid("system: required (id or name)"));
  if (!req->has_gpus() && !req->has_memory() && req->endpoints().empty())
    return finished(ctx, invalid("gpus: required (how many GPUs, or which devices), or memory, or endpoints"));
  auto placement = fromProto(req->gpus(), {});
  if (!placement) return finished(ctx, toGrpcStatus(placement.error()));
  placement->pooledMemoryGiB = req->memory().gib();
  if (auto endpoints = endpointsFromProto(req->endpoints()); !endpoints) return finished(ctx, toGrpcStatus(endpoints.error()));
  else placement->endpoints = std::move(*endpoints);
  AttachRequest request{req->system(), std::move(*placement), req->request_id()};
  return answer<Operation>(
      ctx, [c = *caller, r = std::move(request)](EngineCore& core) { return core.attach(c, r); }, fillOperation(engine_, out));
}

grpc::ServerUnaryReactor* SwitchyardService::Detach(Context* ctx, const v1::DetachRequest* req, v1::Operation* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->system().empty()) return finished(ctx, invalid("system: required (id or name)"));
  DetachRequest request{req->system(), {req->device_ids().begin(), req->device_ids().end()}, {}, {req->gpu_shares().begin(), req->gpu_shares().end()},
                        req->request_id()};
  for (const auto& ref : req->gpu_instances()) {
    if (ref.device_id().empty()) return finished(ctx, invalid("gpu_instances: device_id required"));
    request.gpuInstances.push_back({ref.device_id(), ref.start()});
  }
  return answer<Operation>(
      ctx, [c = *caller, r = std::move(request)](EngineCore& core) { return core.detach(c, r); }, fillOperation(engine_, out));
}

grpc::ServerUnaryReactor* SwitchyardService::Plan(Context* ctx, const v1::PlanRequest* req, v1::PlanResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  auto placement = fromProto(req->gpus(), req->tenant().empty() ? caller->tenant : req->tenant());
  if (!placement) return finished(ctx, toGrpcStatus(placement.error()));
  placement->pooledMemoryGiB = req->memory().gib();
  if (auto endpoints = endpointsFromProto(req->endpoints()); !endpoints) return finished(ctx, toGrpcStatus(endpoints.error()));
  else placement->endpoints = std::move(*endpoints);
  placement->explain = true;
  auto* reactor = ctx->DefaultReactor();
  engine_.run<PlanOutcome>(
      [p = std::move(*placement), cls = req->priority_class()](EngineCore& core) { return core.plan(p, cls); },
      [reactor, out, c = *caller](Result<PlanOutcome> outcome) {
        if (!outcome) return reactor->Finish(toGrpcStatus(outcome.error()));
        const PlacementDecision& decision = outcome->decision;
        // A request that cannot be valid is an error; one that merely does not fit now is an answer.
        if (decision.error && decision.error->code != Code::kResourceExhausted) return reactor->Finish(toGrpcStatus(*decision.error));
        toProto(decision, *out);
        toProto(*outcome, c, *out);
        reactor->Finish(grpc::Status::OK);
      });
  return reactor;
}

grpc::ServerUnaryReactor* SwitchyardService::GetCapacity(Context* ctx, const v1::GetCapacityRequest* req, v1::Capacity* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  auto shapes = fromProto(*req);
  if (!shapes) return finished(ctx, toGrpcStatus(shapes.error()));
  auto mig = migProfilesOf(*req);
  if (!mig) return finished(ctx, toGrpcStatus(mig.error()));
  auto shares = shareSizesOf(*req);
  if (!shares) return finished(ctx, toGrpcStatus(shares.error()));
  // Computed on the engine's read pool: a large pool's capacity takes long enough not to hold a gRPC thread.
  auto* reactor = ctx->DefaultReactor();
  engine_.capacity(std::move(*shapes), std::move(*mig), std::move(*shares), [this, ctx, reactor, out](Result<CapacityReport> report) {
    finishWith(ctx, reactor, std::move(report), [out](const CapacityReport& r) { toProto(r, *out); });
  });
  return reactor;
}

grpc::ServerUnaryReactor* SwitchyardService::GetSystem(Context* ctx, const v1::GetSystemRequest* req, v1::System* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  return answerHere<System>(
      ctx,
      [this, c = *caller, id = req->system()]() -> Result<System> {
        auto s = engine_.getSystem(id);
        if (s && !maySee(c, s->tenant)) return fail(Code::kNotFound, fmt::format("no system '{}'", id));
        return s;
      },
      [this, out](const System& s) { toProto(s, *out, engine_.view().get()); });
}

grpc::ServerUnaryReactor* SwitchyardService::ListSystems(Context* ctx, const v1::ListSystemsRequest* req, v1::ListSystemsResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  auto selector = LabelSelector::parse(req->label_selector());
  if (!selector) return finished(ctx, toGrpcStatus(selector.error()));
  return answerHere<std::vector<System>>(
      ctx, [this] { return engine_.listSystems(); },
      [this, out, c = *caller, tenant = req->tenant(), size = req->page_size(), token = req->page_token(), selector = *selector](const std::vector<System>& systems) {
        const auto view = engine_.view();  // the devices' kinds
        std::string next;
        std::size_t bytes = 0;
        const auto page = pageOf(
            systems, [](const System& x) -> const std::string& { return x.id; },
            [&](const System& x) { return (tenant.empty() || x.tenant == tenant) && maySee(c, x.tenant) && selector.matches(x.labels); }, size,
            token, next);
        for (std::size_t i = 0; i < page.size(); ++i) {
          auto& system = *out->add_systems();
          toProto(*page[i], system, view.get());
          bytes += system.ByteSizeLong();
          if (bytes > kPageBytes && i > 0) {  // this one starts the next page
            out->mutable_systems()->RemoveLast();
            next = page[i - 1]->id;
            break;
          }
        }
        out->set_next_page_token(next);
      });
}

grpc::ServerUnaryReactor* SwitchyardService::ListDevices(Context* ctx, const v1::ListDevicesRequest* req, v1::ListDevicesResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  // Answered here, on the gRPC thread, from the engine's published view: one page costs the page, and
  // never waits for (or delays) the control thread.
  auto view = engine_.view();
  if (!view) return finished(ctx, grpc::Status(grpc::StatusCode::UNAVAILABLE, "yardd is starting: the pool is not loaded yet"));
  DeviceFilter filter{req->free_only(), req->model(), req->switch_id(), req->host_id(), req->system(), std::nullopt};
  if (!req->kind().empty()) {
    filter.kind = parseKindName(req->kind());
    if (!filter.kind) return finished(ctx, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, fmt::format("kind '{}' is not {}", req->kind(), kKindNameRule)));
  }
  const auto size = static_cast<std::size_t>(req->page_size() <= 0 ? kDefaultPageSize : std::min(req->page_size(), kMaxPageSize));
  std::string next;
  for (const DeviceView* d : pageOfDevices(*view, filter, [](const DeviceView&) { return true; }, size, req->page_token(), next)) {
    auto& device = *out->add_devices();
    toProto(*d, device);
    redactForCaller(*caller, view.get(), *d, device);
  }
  out->set_next_page_token(next);
  return finished(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* SwitchyardService::ReleaseDevice(Context* ctx, const v1::ReleaseDeviceRequest* req, v1::Device* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->device_id().empty()) return finished(ctx, invalid("device_id: required (see `yardctl devices`)"));
  auto* reactor = ctx->DefaultReactor();
  engine_.releaseQuarantined(*caller, req->device_id(), {req->unbind(), req->host_is_down()}, [this, ctx, reactor, out](Result<DeviceView> r) {
                               if (!r) {
                                 if (r.error().code == Code::kUnavailable)
                                   if (const std::string leader = engine_.standbyLeader(); !leader.empty())
                                     ctx->AddTrailingMetadata(kLeaderMetadata, leader);
                                 return reactor->Finish(toGrpcStatus(r.error()));
                               }
                               toProto(*r, *out);
                               reactor->Finish(grpc::Status::OK);
                             });
  return reactor;
}

grpc::ServerUnaryReactor* SwitchyardService::ForgetSystem(Context* ctx, const v1::ForgetSystemRequest* req, v1::System* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->system().empty()) return finished(ctx, invalid("system: required (id or name)"));
  return answer<System>(
      ctx, [c = *caller, system = req->system()](EngineCore& core) { return core.forgetSystem(c, system); },
      [this, out](const System& s) { toProto(s, *out, engine_.view().get()); });
}

grpc::ServerUnaryReactor* SwitchyardService::ListHosts(Context* ctx, const v1::ListHostsRequest* req, v1::ListHostsResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  return answerHere<std::vector<HostView>>(
      ctx, [this] { return engine_.listHosts(); },
      [this, out, caller = *caller, size = req->page_size(), token = req->page_token()](const std::vector<HostView>& hosts) {
        std::string next;
        const auto view = caller.role == Role::kTenant ? engine_.view() : nullptr;
        for (const HostView* h : pageOf(
                 hosts, [](const HostView& x) -> const std::string& { return x.host.id; }, [](const HostView&) { return true; }, size, token,
                 next)) {
          auto& host = *out->add_hosts();
          toProto(*h, host);
          redactForCaller(caller, view.get(), *h, host);
        }
        out->set_next_page_token(next);
      });
}

grpc::ServerUnaryReactor* SwitchyardService::GetTopology(Context* ctx, const v1::GetTopologyRequest*, v1::Topology* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  struct Views {
    Topology topology;
    std::vector<HostView> hosts;
    std::vector<DeviceView> devices;
  };
  return answerHere<Views>(
      ctx,
      [this]() -> Result<Views> {
        Views v;
        SY_ASSIGN(v.topology, engine_.topology());
        SY_ASSIGN(v.hosts, engine_.listHosts());
        SY_ASSIGN(v.devices, engine_.listDevices());
        return v;
      },
      [this, out, caller = *caller](const Views& v) {
        toProto(v.topology, v.hosts, v.devices, *out);
        if (caller.role != Role::kTenant) return;
        const auto view = engine_.view();
        for (std::size_t i = 0; i < v.hosts.size(); ++i) redactForCaller(caller, view.get(), v.hosts[i], *out->mutable_hosts(static_cast<int>(i)));
        for (std::size_t i = 0; i < v.devices.size(); ++i) redactForCaller(caller, view.get(), v.devices[i], *out->mutable_devices(static_cast<int>(i)));
      });
}

grpc::ServerUnaryReactor* SwitchyardService::GetOperation(Context* ctx, const v1::GetOperationRequest* req, v1::Operation* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->id().empty()) return finished(ctx, invalid("id: required"));
  return answer<Operation>(
      ctx,
      [c = *caller, id = req->id()](EngineCore& core) -> Result<Operation> {
        auto op = core.getOperation(id);
        if (op && !maySee(c, op->tenant)) return fail(Code::kNotFound, fmt::format("no operation '{}' (see `yardctl ops`)", id));
        return op;
      },
      fillOperation(engine_, out));
}

grpc::ServerUnaryReactor* SwitchyardService::ListOperations(Context* ctx, const v1::ListOperationsRequest* req,
                                                            v1::ListOperationsResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->limit() < 0 || req->limit() > 10'000) return finished(ctx, invalid("limit: from 0 (the default, 50) to 10000"));
  OperationQuery query;
  query.limit = req->limit() == 0 ? 50 : static_cast<std::size_t>(req->limit());
  if (!req->kind().empty() && !(query.kind = parseOperationKind(req->kind())))
    return finished(ctx, invalid(fmt::format("kind '{}': compose, decompose, attach or detach", req->kind())));
  if (!req->state().empty() && !(query.state = parseOperationState(req->state())))
    return finished(ctx, invalid(fmt::format("state '{}': queued, running, rolling-back, succeeded or failed", req->state())));
  if (caller->role == Role::kTenant) query.tenant = caller->tenant;  // the limit counts what the tenant may see
  if (!req->system().empty()) {
    // A system that exists by that name or id; else the id of one that is gone (its history stays).
    auto found = engine_.getSystem(req->system());
    query.systemId = found ? found->id : req->system();
  }
  return answerRead<std::vector<Operation>>(
      ctx, [query](const HistoryReads& history) { return history.listOperations(query); },
      [this, out, c = *caller](const std::vector<Operation>& ops) {
        for (const auto& op : ops)
          if (maySee(c, op.tenant)) toProto(op, engine_.stepKinds(), *out->add_operations());
      });
}

grpc::ServerUnaryReactor* SwitchyardService::ListAudit(Context* ctx, const v1::ListAuditRequest* req, v1::ListAuditResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  AuditQuery query;
  query.tenant = req->tenant();
  query.identity = req->identity();
  if (caller->role == Role::kTenant) {
    if (!query.tenant.empty() && query.tenant != caller->tenant)
      return finished(ctx, toGrpcStatus(Error{Code::kPermissionDenied, fmt::format("'{}' may read the audit trail of tenant '{}' only",
                                                                                   caller->identity, caller->tenant)}));
    query.tenant = caller->tenant;
  }
  for (auto [text, field, name] : {std::tuple{&req->since(), &query.since, "since"}, std::tuple{&req->until(), &query.until, "until"}}) {
    if (text->empty()) continue;
    auto t = parseTimestamp(*text);
    if (!t) return finished(ctx, invalid(fmt::format("{}: '{}' is not an RFC 3339 UTC time such as 2026-11-23T09:00:00Z", name, *text)));
    *field = *t;
  }
  if (req->limit() < 0 || req->limit() > 10'000) return finished(ctx, invalid("limit: 0 (the default, 100) to 10000"));
  query.limit = req->limit() == 0 ? 100 : static_cast<std::size_t>(req->limit());
  query.beforeSequence = req->before_sequence();
  return answerRead<std::vector<AuditRecord>>(
      ctx, [query](const HistoryReads& history) { return history.listAudit(query); },
      [out](const std::vector<AuditRecord>& records) {
        for (const auto& r : records) toProto(r, *out->add_records());
      });
}

grpc::ServerUnaryReactor* SwitchyardService::ListEvents(Context* ctx, const v1::ListEventsRequest* req, v1::ListEventsResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->limit() < 0 || req->limit() > 1000) return finished(ctx, invalid("limit: 0 (the default, 20) to 1000"));
  const std::size_t limit = req->limit() == 0 ? 20 : static_cast<std::size_t>(req->limit());
  // A system as it exists now, by id or name; one that is gone, by its id (its recorded events keep it).
  std::string systemId = req->system();
  if (!systemId.empty())
    if (auto found = engine_.getSystem(systemId); found && maySee(*caller, found->tenant)) systemId = found->id;
  // One system's, or a tenant's, may be sparse among the newest: the newest 2,000 are searched.
  constexpr std::size_t kScanned = 2000;
  const bool sparse = !systemId.empty() || caller->role == Role::kTenant;
  return answerRead<std::vector<Event>>(
      ctx, [n = sparse ? std::max(limit, kScanned) : limit](const HistoryReads& history) { return history.recentEvents(n); },
      [out, c = *caller, systemId, limit](const std::vector<Event>& events) {
        std::vector<const Event*> kept;
        for (auto it = events.rbegin(); it != events.rend() && kept.size() < limit; ++it)
          if (maySee(c, it->tenant) && (systemId.empty() || it->systemId == systemId || it->subject == systemId)) kept.push_back(&*it);
        for (auto it = kept.rbegin(); it != kept.rend(); ++it) toProto(**it, *out->add_events());
      });
}

namespace {

// One Watch stream: recorded events after the client's sequence first, then live ones as the engine
// pushes them. At most one write is in flight; the engine's listener starts the next when idle. All
// state is under `shared->mutex`, which also keeps the listener away once the reactor is gone.
class WatchReactor final : public grpc::ServerWriteReactor<v1::Event> {
 public:
  WatchReactor(EngineClient& engine, std::uint64_t afterSequence, bool fromStart, Caller caller, std::vector<std::string> types,
               std::set<std::string> subjects, std::string systemId)
      : last_(afterSequence),
        caller_(std::move(caller)),
        types_(std::move(types)),
        subjects_(std::move(subjects)),
        systemId_(std::move(systemId)) {
    shared_->reactor = this;
    if (fromStart) last_ = afterSequence = 0;
    // Live events, after the recorded ones past the client's sequence (none when it asked for live ones only).
    const bool replay = fromStart || afterSequence != 0;
    engine.subscribeAfter(
        replay ? std::optional<std::uint64_t>(afterSequence) : std::nullopt,
        [shared = shared_](Result<EventSubscription> subscription) {
          std::lock_guard lock(shared->mutex);
          if (!shared->reactor) {  // the client went away first
            if (subscription) subscription->live->close();
            return;
          }
          if (!subscription) return shared->reactor->finishLocked(toGrpcStatus(subscription.error()));
          shared->reactor->stream_ = std::move(subscription->live);
          shared->reactor->replay_.assign(subscription->replay.begin(), subscription->replay.end());
          shared->reactor->startFollowingLocked();
        },
        kWatchReplayLimit);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(shared_->mutex);
    writing_ = false;
    if (!ok) return finishLocked(grpc::Status::OK);  // the client went away
    if (pendingFinish_) return finishLocked(*pendingFinish_);
    pumpLocked();
  }

  void OnCancel() override {
    std::lock_guard lock(shared_->mutex);
    finishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    std::shared_ptr<EventStream> stream;
    {
      std::lock_guard lock(shared_->mutex);
      shared_->reactor = nullptr;
      stream = stream_;
    }
    if (stream) {
      stream->setListener(nullptr);
      stream->close();
    }
    delete this;
  }

 private:
  struct Shared {
    std::mutex mutex;
    WatchReactor* reactor = nullptr;
  };

  void startFollowingLocked() {
    following_ = true;
    // The listener runs on the engine's control thread; what was queued before it was set is sent now.
    stream_->setListener([shared = shared_] {
      std::lock_guard lock(shared->mutex);
      if (shared->reactor) shared->reactor->pumpLocked();
    });
    pumpLocked();
  }

  // The client's filters: a type or a family of types ("drift" is drift.*), and subjects.
  [[nodiscard]] bool wanted(const Event& e) const {
    if (!subjects_.empty() && !subjects_.contains(e.subject)) return false;
    if (!systemId_.empty() && e.systemId != systemId_ && e.subject != systemId_) return false;
    return types_.empty() || std::any_of(types_.begin(), types_.end(), [&](const std::string& t) {
             return e.type == t || (e.type.size() > t.size() && e.type.starts_with(t) && e.type[t.size()] == '.');
           });
  }

  // The next event to send, skipping any the replay already sent.
  std::optional<Event> nextLocked() {
    while (true) {
      std::optional<Event> e;
      if (!replay_.empty()) {
        e = std::move(replay_.front());
        replay_.pop_front();
      } else {
        e = stream_->tryNext();
      }
      if (!e) return e;
      if (e->sequence > last_ && maySee(caller_, e->tenant) && wanted(*e)) return e;
    }
  }

  void pumpLocked() {
    if (writing_ || done_ || !following_) return;
    if (const auto dropped = stream_->dropped(); dropped > 0)
      return finishLocked({grpc::StatusCode::RESOURCE_EXHAUSTED,
                           fmt::format("watcher fell behind and {} event(s) were dropped; watch again with after_sequence={}", dropped, last_)});
    auto e = nextLocked();
    if (!e) {
      if (stream_->closed()) finishLocked(grpc::Status::OK);  // the engine stopped
      return;
    }
    last_ = e->sequence;
    out_.Clear();
    toProto(*e, out_);
    writing_ = true;
    StartWrite(&out_);
  }

  void finishLocked(const grpc::Status& status) {
    if (done_) return;
    if (writing_) {  // finish once the write in flight completes
      if (!pendingFinish_) pendingFinish_ = status;
      return;
    }
    done_ = true;
    Finish(status);
  }

  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::uint64_t last_;
  Caller caller_;  // sees only the events of its tenant (and the pool's own)
  std::vector<std::string> types_;
  std::set<std::string> subjects_;
  std::string systemId_;  // only this system's events (empty: all)
  std::shared_ptr<EventStream> stream_;
  std::deque<Event> replay_;
  v1::Event out_;
  bool following_ = false;
  bool writing_ = false;
  bool done_ = false;
  std::optional<grpc::Status> pendingFinish_;
};

}  // namespace

grpc::ServerWriteReactor<v1::Event>* SwitchyardService::Watch(Context* ctx, const v1::WatchRequest* req) {
  struct Refused final : grpc::ServerWriteReactor<v1::Event> {
    explicit Refused(const grpc::Status& status) { Finish(status); }
    void OnDone() override { delete this; }
  };
  if (shuttingDown_) return new Refused({grpc::StatusCode::UNAVAILABLE, "yardd is shutting down"});
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return new Refused(toGrpcStatus(caller.error()));
  for (const auto& t : req->types())
    if (t.empty() || t.size() > 128) return new Refused({grpc::StatusCode::INVALID_ARGUMENT, "types: each 1-128 characters, e.g. drift or operation.failed"});
  // A system by id or name, as it exists now; one that is gone, by its id (its recorded events keep it).
  std::string systemId = req->system();
  if (!systemId.empty())
    if (const auto view = engine_.view())
      if (const auto s = view->systems.findByIdOrName(systemId); s && maySee(*caller, s->tenant)) systemId = s->id;
  return new WatchReactor(engine_, req->after_sequence(), req->from_start(), *caller, {req->types().begin(), req->types().end()},
                          {req->subjects().begin(), req->subjects().end()}, std::move(systemId));
}

grpc::ServerUnaryReactor* SwitchyardService::WhoAmI(Context* ctx, const v1::WhoAmIRequest*, v1::WhoAmIResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  out->set_identity(caller->identity);
  out->set_role(std::string(toString(caller->role)));
  out->set_tenant(caller->tenant);
  out->set_authenticated(!authenticator_.open());
  out->set_server_version(versionLine("yardd"));
  if (auto session = authenticator_.sessionOf(*ctx)) out->set_token_expires_at(formatTimestamp(session->expiresAt));
  return finished(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* SwitchyardService::ListTemplates(Context* ctx, const v1::ListTemplatesRequest*, v1::ListTemplatesResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  for (const auto& t : engine_.templates()) toProto(t, *out->add_templates());
  return finished(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* SwitchyardService::Login(Context* ctx, const v1::LoginRequest* req, v1::LoginResponse* out) {
  if (req->ttl_seconds() < 0) return finished(ctx, invalid("ttl_seconds: must be >= 0 (0: 12 hours)"));
  // The password check is slow on purpose (PBKDF2): it runs on a login thread, not on gRPC's or the reply
  // pool's, and a failing name's or source's waits in a lane of its own.
  auto* reactor = ctx->DefaultReactor();
  boost::asio::post(authenticator_.loginIsSuspect(req->name()) ? suspectLogins_ : logins_, [this, reactor, out, name = req->name(), password = req->password(), ttl = std::chrono::seconds(req->ttl_seconds()),
                               peer = ctx->peer()] {
    auto login = authenticator_.login(name, password, ttl, peer);
    if (!login) return reactor->Finish(toGrpcStatus(login.error()));
    out->set_token(login->token);
    out->set_expires_at(formatTimestamp(login->session.expiresAt));
    out->set_identity(login->session.caller.identity);
    out->set_role(std::string(toString(login->session.caller.role)));
    out->set_tenant(login->session.caller.tenant);
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

}  // namespace switchyard

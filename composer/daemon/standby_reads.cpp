#include "composer/engine/engine.h"
#include "composer/daemon/standby_reads.h"

#include <spdlog/spdlog.h>

#include "composer/api/resource_provider_service.h"
#include "composer/api/switchyard_service.h"

namespace switchyard {

// The switch a standby must never touch: every call fails (a replica engine makes none).
class StandbyReads::NoFabric final : public FabricDriver {
 public:
  std::string_view name() const override { return "standby (no switch access)"; }
  Result<Topology> discover() override { return refuse(); }
  Result<void> bindAll(std::span<const Binding>, const CallOptions& = {}) override { return refuse(); }
  Result<void> unbindAll(std::span<const Binding>, const CallOptions& = {}) override { return refuse(); }
  Result<std::vector<Binding>> readBindings(const CallOptions& = {}) override { return refuse(); }
  Result<std::vector<FabricEvent>> pollEvents() override { return refuse(); }

 private:
  static std::unexpected<Error> refuse() { return fail(Code::kFailedPrecondition, "a standby yardd does not call the switch"); }
};

StandbyReads::StandbyReads(EtcdStore& store, Clock& clock, const Authenticator& authenticator, StandbyReadsOptions options)
    : store_(store), options_(std::move(options)), fabric_(std::make_unique<NoFabric>()) {
  options_.engine.metrics = nullptr;
  engine_ = std::make_unique<Engine>(*fabric_, store_, clock, options_.engine);
  service_ = std::make_unique<SwitchyardService>(*engine_, authenticator);
  provider_ = std::make_unique<ResourceProviderService>(*engine_, authenticator);
}

Result<std::unique_ptr<StandbyReads>> StandbyReads::start(EtcdStore& store, Clock& clock, const Authenticator& authenticator,
                                                          StandbyReadsOptions options) {
  std::unique_ptr<StandbyReads> reads(new StandbyReads(store, clock, authenticator, std::move(options)));
  SY_ASSIGN(const std::int64_t revision, store.revision());
  SY_TRY(reads->engine_->startReplica());
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a second process on the port fails instead of sharing it
  builder.AddListeningPort(reads->options_.listen, reads->options_.credentials, &reads->port_);
  builder.RegisterService(reads->service_.get());
  builder.RegisterService(reads->provider_.get());
  reads->server_ = builder.BuildAndStart();
  if (!reads->server_ || reads->port_ == 0) {
    reads->engine_->stop(Duration::zero());
    return fail(Code::kUnavailable, fmt::format("cannot listen on {}", reads->options_.listen));
  }
  reads->follower_ = std::thread([r = reads.get(), revision] { r->followChanges(revision); });
  return reads;
}

void StandbyReads::followChanges(std::int64_t loadedAt) {
  std::int64_t loaded = loadedAt;  // the replica reflects every write up to this revision
  while (!stopping_.load()) {
    auto changed = store_.waitForChange(loaded + 1, std::chrono::milliseconds(1000));
    if (stopping_.load()) break;
    if (!changed) {  // etcd unreachable: watch again shortly, from the same revision
      spdlog::debug("standby: watching the store: {}", changed.error().message);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    if (!*changed) continue;
    // The revision first, then the load: what changes after the revision is seen by the next watch. Only a
    // refresh that worked moves `loaded` on; a failed one is tried again (the next watch returns at once).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a burst of writes makes one refresh
    auto before = store_.revision();
    auto refreshed = before ? engine_->refreshReplica() : Result<void>(fail(before.error()));
    if (refreshed) {
      loaded = *before;
    } else {
      spdlog::warn("standby: cannot read the store again (retrying): {}", refreshed.error().message);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
}

void StandbyReads::stop() {
  if (stopping_.exchange(true)) return;
  service_->shutdown();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  if (follower_.joinable()) follower_.join();
  engine_->stop(Duration::zero());
}

StandbyReads::~StandbyReads() { stop(); }

}  // namespace switchyard

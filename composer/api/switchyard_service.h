// switchyard.v1.Switchyard over gRPC's callback API: each handler validates and translates the request,
// hands the call to the engine without blocking (EngineClient::run), and finishes the RPC from the
// engine's completion, which the client delivers on the service's own small pool (replies_): replies are
// translated to proto there, not on the engine's one control thread. Reads of the pool answer on the gRPC
// thread from the published view. No gRPC thread waits on the engine; Watch is pushed to as events happen.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <thread>

#include "composer/api/authenticator.h"
#include "composer/engine/engine_client.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace switchyard {

// The trailing metadata key in which a standby's refusal of a change names the leader's address.
inline constexpr const char* kLeaderMetadata = "switchyard-leader";

class SwitchyardService final : public v1::Switchyard::CallbackService {
 public:
  // Every call is authenticated by `authenticator`; what it may see and change follows its role and tenant.
  SwitchyardService(Engine& engine, const Authenticator& authenticator)
      : engine_(engine, [this](std::function<void()> f) { boost::asio::post(replies_, std::move(f)); }), authenticator_(authenticator) {}
  ~SwitchyardService() override {
    logins_.join();
    suspectLogins_.join();
    replies_.join();
  }
  SwitchyardService(const SwitchyardService&) = delete;
  SwitchyardService& operator=(const SwitchyardService&) = delete;

  // Refuses new Watch streams (at shutdown; Engine::stop ends the open ones).
  void shutdown() { shuttingDown_ = true; }

  using Unary = grpc::ServerUnaryReactor;
  using Context = grpc::CallbackServerContext;
  Unary* Compose(Context*, const v1::ComposeRequest*, v1::Operation*) override;
  Unary* Decompose(Context*, const v1::DecomposeRequest*, v1::Operation*) override;
  Unary* Attach(Context*, const v1::AttachRequest*, v1::Operation*) override;
  Unary* Detach(Context*, const v1::DetachRequest*, v1::Operation*) override;
  Unary* Plan(Context*, const v1::PlanRequest*, v1::PlanResponse*) override;
  Unary* GetCapacity(Context*, const v1::GetCapacityRequest*, v1::Capacity*) override;
  Unary* GetSystem(Context*, const v1::GetSystemRequest*, v1::System*) override;
  Unary* ListSystems(Context*, const v1::ListSystemsRequest*, v1::ListSystemsResponse*) override;
  Unary* ListDevices(Context*, const v1::ListDevicesRequest*, v1::ListDevicesResponse*) override;
  Unary* ReleaseDevice(Context*, const v1::ReleaseDeviceRequest*, v1::Device*) override;
  Unary* ListHosts(Context*, const v1::ListHostsRequest*, v1::ListHostsResponse*) override;
  Unary* GetTopology(Context*, const v1::GetTopologyRequest*, v1::Topology*) override;
  Unary* GetOperation(Context*, const v1::GetOperationRequest*, v1::Operation*) override;
  Unary* ListOperations(Context*, const v1::ListOperationsRequest*, v1::ListOperationsResponse*) override;
  Unary* WaitOperation(Context*, const v1::WaitOperationRequest*, v1::Operation*) override;
  grpc::ServerWriteReactor<v1::Event>* Watch(Context*, const v1::WatchRequest*) override;
  Unary* ListAudit(Context*, const v1::ListAuditRequest*, v1::ListAuditResponse*) override;
  Unary* ListEvents(Context*, const v1::ListEventsRequest*, v1::ListEventsResponse*) override;
  Unary* ListQueue(Context*, const v1::ListQueueRequest*, v1::ListQueueResponse*) override;
  Unary* CancelQueued(Context*, const v1::CancelQueuedRequest*, v1::Operation*) override;
  Unary* RenewLease(Context*, const v1::RenewLeaseRequest*, v1::System*) override;
  Unary* ForgetSystem(Context*, const v1::ForgetSystemRequest*, v1::System*) override;
  Unary* GetUsage(Context*, const v1::GetUsageRequest*, v1::UsageResponse*) override;
  Unary* ListIdle(Context*, const v1::ListIdleRequest*, v1::ListIdleResponse*) override;
  Unary* WhoAmI(Context*, const v1::WhoAmIRequest*, v1::WhoAmIResponse*) override;
  Unary* ListTemplates(Context*, const v1::ListTemplatesRequest*, v1::ListTemplatesResponse*) override;
  Unary* Login(Context*, const v1::LoginRequest*, v1::LoginResponse*) override;

 private:
  // Runs `call` on the engine's control thread; finishes with its error, or with OK after `fill` wrote the
  // response (on the reply pool).
  template <typename T, typename Fill>
  Unary* answer(Context* ctx, std::function<Result<T>(EngineCore&)> call, Fill fill);
  // The same for reads the engine answers from its published view: run here, on the gRPC thread, without
  // a hop to the control thread (they never wait for a compose, and a compose never waits for them).
  template <typename T, typename Fill>
  Unary* answerHere(Context* ctx, const std::function<Result<T>()>& call, Fill fill);
  // The same for reads of the history and capacity: on the engine's read pool (EngineClient::read), so that
  // neither the control thread nor a gRPC thread waits for the store.
  template <typename T, typename Fill>
  Unary* answerRead(Context* ctx, std::function<Result<T>(const HistoryReads&)> call, Fill fill);
  template <typename T, typename Fill>
  void finishWith(Context* ctx, grpc::ServerUnaryReactor* reactor, Result<T> result, const Fill& fill);

  // WaitOperation calls open at once per identity: one more is refused (RESOURCE_EXHAUSTED), so that one
  // caller cannot hold yardd's memory with waits on a queued operation that may never end.
  static constexpr std::size_t kMaxWaitsPerCaller = 256;
  // Counts a wait against its caller; false (nothing counted) at the cap.
  bool admitWait(const std::string& identity);
  void endWait(const std::string& identity);
  std::mutex waitsMutex_;
  std::map<std::string, std::size_t> waitsByCaller_;

  // Login's password checks (PBKDF2): names and sources with no failure counted, and failing ones apart.
  boost::asio::thread_pool logins_{2};
  boost::asio::thread_pool suspectLogins_{1};
  boost::asio::thread_pool replies_{std::max(2u, std::thread::hardware_concurrency())};  // before engine_: its completions run here
  EngineClient engine_;
  const Authenticator& authenticator_;
  std::atomic<bool> shuttingDown_{false};
};

}  // namespace switchyard

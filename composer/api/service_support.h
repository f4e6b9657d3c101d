// What the SwitchyardService's .cpp files share (not a public header): answering a unary call with an
// error or an engine result, and filling an Operation.
#pragma once

#include <grpcpp/grpcpp.h>

#include <spdlog/spdlog.h>

#include <functional>
#include <optional>
#include <string>

#include "composer/api/proto_convert.h"
#include "composer/model/contain.h"
#include "net/grpc_status.h"
#include "composer/api/switchyard_service.h"

namespace switchyard {

inline grpc::Status invalid(std::string message) { return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)}; }

// A call whose handler threw: INTERNAL for this call alone, the cause in the log (not sent to the client).
inline grpc::Status internalFailure(const std::string& what) {
  spdlog::error("a gRPC call failed inside yardd: {}", what);
  return {grpc::StatusCode::INTERNAL, "yardd failed to answer this call; the failure is in its log"};
}

inline grpc::ServerUnaryReactor* finished(grpc::CallbackServerContext* ctx, const grpc::Status& status) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

inline std::function<void(const Operation&)> fillOperation(const EngineClient& engine, v1::Operation* out) {
  return [&engine, out](const Operation& op) { toProto(op, engine.stepKinds(), *out); };
}

// Finishes a call with the engine's result: its error, or OK once `fill` built the reply (a reply that
// cannot be built fails this call, INTERNAL, not the reply thread).
template <typename T, typename Fill>
void SwitchyardService::finishWith(Context* ctx, grpc::ServerUnaryReactor* reactor, Result<T> result, const Fill& fill) {
  if (!result) {
    // A standby refusing a change names the leader in trailing metadata too: clients follow it.
    if (result.error().code == Code::kUnavailable)
      if (const std::string leader = engine_.standbyLeader(); !leader.empty()) ctx->AddTrailingMetadata(kLeaderMetadata, leader);
    return reactor->Finish(toGrpcStatus(result.error()));
  }
  std::string failure;
  if (!runContained([&] { fill(*result); }, [&](const std::string& what) { failure = what; })) return reactor->Finish(internalFailure(failure));
  reactor->Finish(grpc::Status::OK);
}

template <typename T, typename Fill>
grpc::ServerUnaryReactor* SwitchyardService::answer(Context* ctx, std::function<Result<T>(EngineCore&)> call, Fill fill) {
  auto* reactor = ctx->DefaultReactor();
  engine_.run<T>(std::move(call), [this, ctx, reactor, fill = std::move(fill)](Result<T> result) { finishWith(ctx, reactor, std::move(result), fill); });
  return reactor;
}

template <typename T, typename Fill>
grpc::ServerUnaryReactor* SwitchyardService::answerRead(Context* ctx, std::function<Result<T>(const HistoryReads&)> call, Fill fill) {
  auto* reactor = ctx->DefaultReactor();
  engine_.read<T>(std::move(call), [this, ctx, reactor, fill = std::move(fill)](Result<T> result) { finishWith(ctx, reactor, std::move(result), fill); });
  return reactor;
}

template <typename T, typename Fill>
grpc::ServerUnaryReactor* SwitchyardService::answerHere(Context* ctx, const std::function<Result<T>()>& call, Fill fill) {
  std::optional<Result<T>> result;
  std::string failure;
  if (!runContained([&] { result.emplace(call()); }, [&](const std::string& what) { failure = what; }))
    return finished(ctx, internalFailure(failure));
  if (!*result) return finished(ctx, toGrpcStatus(result->error()));
  if (!runContained([&] { fill(**result); }, [&](const std::string& what) { failure = what; })) return finished(ctx, internalFailure(failure));
  return finished(ctx, grpc::Status::OK);
}

}  // namespace switchyard

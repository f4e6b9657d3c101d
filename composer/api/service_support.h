// What the SwitchyardService's .cpp files share (not a public header): answering a unary call with an
// error or an engine result, and filling an Operation.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>

#include "composer/api/proto_convert.h"
#include "net/grpc_status.h"
#include "composer/api/switchyard_service.h"

namespace switchyard {

inline grpc::Status invalid(std::string message) { return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)}; }

inline grpc::ServerUnaryReactor* finished(grpc::CallbackServerContext* ctx, const grpc::Status& status) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

inline std::function<void(const Operation&)> fillOperation(const EngineClient& engine, v1::Operation* out) {
  return [&engine, out](const Operation& op) { toProto(op, engine.stepKinds(), *out); };
}

template <typename T, typename Fill>
grpc::ServerUnaryReactor* SwitchyardService::answer(Context* ctx, std::function<Result<T>(EngineCore&)> call, Fill fill) {
  auto* reactor = ctx->DefaultReactor();
  engine_.run<T>(std::move(call), [this, ctx, reactor, fill = std::move(fill)](Result<T> result) {
                     if (!result) {
                       // A standby refusing a change names the leader in trailing metadata too: clients follow it.
                       if (result.error().code == Code::kUnavailable)
                         if (const std::string leader = engine_.standbyLeader(); !leader.empty()) ctx->AddTrailingMetadata(kLeaderMetadata, leader);
                       return reactor->Finish(toGrpcStatus(result.error()));
                     }
                     fill(*result);
                     reactor->Finish(grpc::Status::OK);
                   });
  return reactor;
}

template <typename T, typename Fill>
grpc::ServerUnaryReactor* SwitchyardService::answerHere(Context* ctx, const std::function<Result<T>()>& call, Fill fill) {
  Result<T> result = call();
  if (!result) return finished(ctx, toGrpcStatus(result.error()));
  fill(*result);
  return finished(ctx, grpc::Status::OK);
}

}  // namespace switchyard

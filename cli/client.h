// yardctl's connection to yardd: the global flags, exit codes, one unary call with the deadline, credentials,
// errors printed with a hint (as JSON under -o json) and a standby's redirect to the leader, following an
// operation to its end, and printing a response as a table or JSON. Shared by the commands' files.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/connection.h"
#include "cli/interrupt_notice.h"
#include "cli/output.h"
#include "composer/model/version.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace yardctl {

namespace pb = switchyard::v1;

// Exit codes (also in `yardctl --help`).
constexpr int kExitOk = 0;
constexpr int kExitOperationFailed = 1;  // the operation ran and was rolled back
constexpr int kExitUsage = 2;            // bad flags or an invalid request
constexpr int kExitRefused = 3;          // not found, does not fit, busy, already exists, not allowed
constexpr int kExitServer = 4;           // yardd unreachable or failing

struct Globals {
  yardctl::Connection connection = yardctl::Connection::fromEnvironment();
  std::string output = "table";
  int timeoutSeconds = 30;
  std::string context;  // --context: read from argv before parsing (cli/contexts.h); kept here so the flag parses
  [[nodiscard]] Format format() const { return output == "json" ? Format::kJson : Format::kTable; }
};

inline std::string codeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

inline int exitCodeFor(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT: return kExitUsage;
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED: return kExitRefused;
    default: return kExitServer;
  }
}

inline std::string hintFor(const grpc::Status& s, const yardctl::Connection& connection) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      if (s.error_message().find("wrong version number") != std::string::npos)
        return "\nhint: yardd at " + connection.server + " serves plaintext (it was started with --plaintext): add --plaintext.";
      if (s.error_message().find("certificate verify failed") != std::string::npos ||
          s.error_message().find("Peer name") != std::string::npos)
        return "\nhint: " + connection.trustHint();
      return "\nhint: " + connection.hint();
    case grpc::StatusCode::UNAUTHENTICATED:
      // The Authenticator's two answers to a token it does not take (composer/api/authenticator.cpp).
      if (s.error_message().find("logged in") != std::string::npos) return "\nhint: your login has ended: `yardctl login` again.";
      if (s.error_message().find("no current login") != std::string::npos)
        return "\nhint: a `yardctl login` token ends after its --ttl and when yardd restarts: `yardctl login` again; an identity's own "
               "token (--token-file, YARD_TOKEN) must be the one its token_sha256 in yardd's identities file was made from.";
      return "\nhint: an identity with a password: `yardctl login NAME` (its token is kept for later commands); with a bearer token: "
             "--token-file or YARD_TOKEN; with a client certificate: --cert/--key. An admin adds identities to yardd's --identities file.";
    case grpc::StatusCode::PERMISSION_DENIED: return "\nhint: your identity's role or tenant does not allow this; ask an admin.";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "\nhint: yardd did not answer in time; raise --timeout or check its log.";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      if (s.error_message().starts_with("tenant '") && s.error_message().find(" may hold ") != std::string::npos)
        return "\nhint: that is your tenant's quota, not the pool's capacity: decompose or detach one of your systems (`yardctl "
               "systems`), or ask an admin to raise max_gpus / max_systems in yardd's identities file.";
      return "\nhint: `yardctl plan` shows what would fit; `yardctl devices` shows what is free.";
    default: return "";
  }
}

class Client {
 public:
  explicit Client(const Globals& g) : globals_(g), connection_(g.connection) {
    std::string error;
    auto channel = connection_.channel(error);
    if (!channel) throw std::invalid_argument(error);
    stub_ = pb::Switchyard::NewStub(channel);
  }
  // Once per run: a yardd of another major version may not understand this yardctl (or answer as it expects).
  void warnOnVersionMismatch(const grpc::ClientContext& ctx) {
    if (versionChecked_) return;
    const auto& initial = ctx.GetServerInitialMetadata();
    const auto it = initial.find("switchyard-version");
    if (it == initial.end()) return;
    versionChecked_ = true;
    const std::string server(it->second.data(), it->second.size());
    const int theirs = switchyard::majorVersionOf(server), ours = switchyard::majorVersionOf(switchyard::projectVersion());
    if (theirs != ours)
      std::cerr << fmt::format("warning: yardd at {} is version {}, this yardctl {}: another major version; use a yardctl of yardd's\n",
                               connection_.server, server, switchyard::projectVersion());
  }
  // A context with the call's credentials and the global deadline.
  void prepare(grpc::ClientContext& ctx, bool withDeadline = true) const {
    if (withDeadline) ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(globals_.timeoutSeconds));
    connection_.authenticate(ctx);
  }
  // Prints a failed call's error with a hint; returns its exit code.
  int failed(const grpc::Status& status) const {
    const std::string hint = hintFor(status, globals_.connection);
    if (globals_.format() == Format::kJson) {
      // Scripts asked for JSON: they get the error as JSON too (on stderr, with the exit code).
      nlohmann::json error{{"code", codeName(status.error_code())}, {"message", status.error_message()}, {"exit_code", exitCodeFor(status)}};
      if (!hint.empty()) error["hint"] = hint.substr(hint.find(':') + 2);  // "\nhint: ..." without its prefix
      std::cerr << nlohmann::json{{"error", error}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cerr << "error: " << status.error_message() << hint << "\n";
    }
    return exitCodeFor(status);
  }

  // Runs one unary call with the global deadline; prints the error and returns its exit code on failure.
  // A standby yardd refuses a change with UNAVAILABLE and the leader's address in the `switchyard-leader`
  // trailing metadata: the call is sent to the leader once, and the calls after it stay there.
  template <typename Request, typename Response, typename Method>
  int call(Method method, const Request& request, Response& response) {
    for (int attempt = 0;; ++attempt) {
      grpc::ClientContext ctx;
      const grpc::Status status = once(ctx, *stub_, method, request, response);
      if (status.ok()) return kExitOk;
      const auto& trailing = ctx.GetServerTrailingMetadata();
      const auto leader = trailing.find("switchyard-leader");
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE || leader == trailing.end() || attempt > 0) return failed(status);
      const std::string address(leader->second.data(), leader->second.size());
      std::cerr << fmt::format("note: {} is a standby; sending this to the leader at {}\n", connection_.server, address);
      connection_.server = address;
      std::string error;
      auto channel = connection_.channel(error);
      if (!channel) throw std::invalid_argument(error);
      stub_ = pb::Switchyard::NewStub(channel);
    }
  }

  // Follows an operation to its end, printing each step as it finishes (to stderr).
  int follow(pb::Operation op) {
    std::set<int> shown;
    auto progress = [&](const pb::Operation& o) {
      for (int i = 0; i < o.steps_size(); ++i) {
        const auto& s = o.steps(i);
        if (s.state() == "pending" || shown.contains(i)) continue;
        shown.insert(i);
        std::cerr << fmt::format("  [{}/{}] {}{} ... {}{}\n", i + 1, o.steps_size(), s.compensation() ? "undo: " : "",
                                 s.description().empty() ? s.kind() : s.description(), s.state(),
                                 s.message().empty() ? "" : " (" + s.message() + ")");
      }
    };
    if (op.state() == pb::OPERATION_STATE_QUEUED) {
      std::cerr << fmt::format("{} {} {} is {}\n", op.id(), yardctl::kindName(op.kind()), op.system_id(), op.explanation());
      std::cerr << fmt::format("  waiting for capacity; Ctrl-C leaves it queued (`yardctl queue`, `yardctl queue cancel {}`)\n", op.id());
    } else {
      std::cerr << fmt::format("{} {} {} on {}\n", op.id(), yardctl::kindName(op.kind()), op.system_id(), op.host_id());
      if (!op.explanation().empty()) std::cerr << "  placement: " << op.explanation() << "\n";
    }
    progress(op);
    const InterruptNotice notice(op.id());
    std::string waitingFor;  // a queued request's reason, echoed when it changes (a preemption it waits for, ...)
    while (!op.done()) {
      if (op.state() == pb::OPERATION_STATE_QUEUED) {
        pb::ListQueueResponse queue;
        grpc::ClientContext qctx;
        if (once(qctx, *stub_, &pb::Switchyard::Stub::ListQueue, pb::ListQueueRequest{}, queue).ok())
          for (const auto& e : queue.entries())
            if (e.operation_id() == op.id() && e.waiting_for() != waitingFor) {
              waitingFor = e.waiting_for();
              // Said already when it was queued (its explanation); say it again only once it changed.
              if (waitingFor.empty() || op.explanation().find(waitingFor) != std::string::npos) continue;
              std::cerr << "  now waiting for: ";
              for (char c : waitingFor) std::cerr << c << (c == '\n' ? "    " : "");
              std::cerr << "\n";
            }
      }
      pb::WaitOperationRequest req;
      req.set_id(op.id());
      // A queued request may wait long: ask less often while it does.
      req.set_timeout_ms(op.state() == pb::OPERATION_STATE_QUEUED ? 5000 : 250);
      pb::Operation next;
      if (int rc = call(&pb::Switchyard::Stub::WaitOperation, req, next); rc != kExitOk) return rc;
      if (op.state() == pb::OPERATION_STATE_QUEUED && next.state() != pb::OPERATION_STATE_QUEUED && !next.host_id().empty())
        std::cerr << fmt::format("{} admitted on {}: {}\n", next.id(), next.host_id(), next.explanation());
      op = std::move(next);
      progress(op);
    }
    if (globals_.format() == Format::kJson) std::cout << yardctl::toJson(op) << "\n";
    if (op.state() == pb::OPERATION_STATE_SUCCEEDED) {
      std::cerr << fmt::format("{} succeeded\n", op.id());
      return kExitOk;
    }
    std::cerr << fmt::format("{} failed and was rolled back: {}\n", op.id(), op.error());
    return kExitOperationFailed;
  }

  pb::Switchyard::Stub& stub() { return *stub_; }

  // A stub of another service yardd serves on the same address (the agent registry), with these settings.
  template <typename Service>
  std::unique_ptr<typename Service::Stub> stubOf() {
    std::string error;
    auto channel = connection_.channel(error);
    if (!channel) throw std::invalid_argument(error);
    return Service::NewStub(channel);
  }
  // One unary call on such a stub, with the global deadline and credentials; prints the error and returns
  // its exit code on failure.
  template <typename Stub, typename Request, typename Response, typename Method>
  int callOn(Stub& stub, Method method, const Request& request, Response& response) {
    grpc::ClientContext ctx;
    const grpc::Status status = once(ctx, stub, method, request, response);
    return status.ok() ? kExitOk : failed(status);
  }

 private:
  // One attempt of a unary call: credentials and deadline on `ctx`, the call, the version check.
  template <typename Stub, typename Request, typename Response, typename Method>
  grpc::Status once(grpc::ClientContext& ctx, Stub& stub, Method method, const Request& request, Response& response) {
    prepare(ctx);
    grpc::Status status = (stub.*method)(&ctx, request, &response);
    warnOnVersionMismatch(ctx);
    return status;
  }

  const Globals& globals_;
  yardctl::Connection connection_;  // the globals' own, until a standby names the leader
  std::unique_ptr<pb::Switchyard::Stub> stub_;
  bool versionChecked_ = false;
};

template <typename Response, typename PrintTable>
void emit(const Globals& g, const Response& r, const PrintTable& table) {
  if (g.output == "csv") {  // only `yardctl usage` prints CSV
    std::cerr << "error: -o csv is for `yardctl usage`; use -o json or -o table here\n";
    std::exit(kExitUsage);
  }
  if (g.format() == Format::kJson)
    std::cout << yardctl::toJson(r) << "\n";
  else
    table(r, std::cout);
}

}  // namespace yardctl

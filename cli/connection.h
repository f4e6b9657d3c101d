// How yardctl reaches yardd: the channel (TLS by default, trusting --ca or the certificate yardd made in
// the default state directory; plaintext only when asked) and the credentials each call carries (a
// bearer token, a client certificate, and the claimed caller name a yardd without identities records).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace CLI {
class App;
}

namespace yardctl {

struct Context;

struct Connection {
  std::string server;     // HOST:PORT
  std::string ca;         // PEM to trust; empty: the default state directory's grpc-cert.pem, else the system's roots
  std::string cert, key;  // client certificate (mutual TLS)
  std::string tokenFile;  // bearer token (first line); YARD_TOKEN also works
  bool plaintext = false;
  std::string caller;     // claimed name (recorded only by a yardd without --identities)

  // Reads YARD_SERVER, YARD_CA, YARD_CERT, YARD_KEY, YARD_TOKEN_FILE, YARD_PLAINTEXT, YARD_CALLER/USER; what
  // none of them sets comes from `context` (cli/contexts.h), if given.
  static Connection fromEnvironment(const Context* context = nullptr);
  void addFlags(CLI::App* cmd, const std::string& group);

  // The channel, or an error message for the user.
  [[nodiscard]] std::shared_ptr<grpc::Channel> channel(std::string& error) const;
  // Adds the call's credentials (token, caller) to `ctx`.
  void authenticate(grpc::ClientContext& ctx) const;
  // A sentence on how to connect differently, for connection failures.
  [[nodiscard]] std::string hint() const;
  // The same when yardd answered but its certificate is not trusted (or names another host).
  [[nodiscard]] std::string trustHint() const;

 private:
  mutable std::string resolvedToken_;  // read by channel() from --token-file or YARD_TOKEN
};

// Where yardd keeps its self-signed certificate when run with the default state directory.
[[nodiscard]] std::string defaultServerCertificate();

// An environment variable's value; empty when unset or empty.
[[nodiscard]] std::string env(const char* name);

}  // namespace yardctl

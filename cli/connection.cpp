#include "cli/connection.h"

#include "cli/contexts.h"
#include "composer/model/grpc_target.h"

#include <charconv>

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace yardctl {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}

namespace {

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  out = text.str();
  return true;
}

}  // namespace

std::string defaultServerCertificate() {
  // The same rule as yardd's default --state-dir; then the packaged yardd's state directory (its systemd unit
  // runs it as the switchyard user on /var/lib/switchyard).
  std::filesystem::path dir;
  if (auto xdg = env("XDG_STATE_HOME"); !xdg.empty()) dir = std::filesystem::path(xdg) / "switchyard";
  else if (auto home = env("HOME"); !home.empty()) dir = std::filesystem::path(home) / ".local/state/switchyard";
  else dir = "/var/lib/switchyard";
  const std::filesystem::path own = dir / "grpc-cert.pem";
  const std::filesystem::path system = "/var/lib/switchyard/grpc-cert.pem";
  std::error_code ec;
  if (!std::filesystem::exists(own, ec) && std::filesystem::exists(system, ec)) return system.string();
  return own.string();
}

Connection Connection::fromEnvironment(const Context* context) {
  Connection c;
  const Context none;
  const Context& ctx = context ? *context : none;
  auto pick = [](const std::string& fromEnv, const std::string& fromContext, const std::string& fallback) {
    return !fromEnv.empty() ? fromEnv : !fromContext.empty() ? fromContext : fallback;
  };
  c.server = pick(env("YARD_SERVER"), ctx.server, "127.0.0.1:7390");
  c.ca = pick(env("YARD_CA"), ctx.ca, "");
  c.cert = pick(env("YARD_CERT"), ctx.cert, "");
  c.key = pick(env("YARD_KEY"), ctx.key, "");
  // A token given in the environment wins over the context's token file.
  c.tokenFile = !env("YARD_TOKEN_FILE").empty() || !env("YARD_TOKEN").empty() ? env("YARD_TOKEN_FILE") : ctx.tokenFile;
  c.plaintext = env("YARD_PLAINTEXT").empty() ? ctx.plaintext : env("YARD_PLAINTEXT") == "1";
  c.caller = !env("YARD_CALLER").empty() ? env("YARD_CALLER") : !env("USER").empty() ? env("USER") : "local";
  return c;
}

void Connection::addFlags(CLI::App* cmd, const std::string& group) {
  cmd->add_option("-s,--server", server, "yardd address (default from YARD_SERVER)")->capture_default_str()->group(group);
  cmd->add_option("--ca", ca,
                  "Trust this certificate (PEM) for yardd's TLS: its --tls-cert or the CA that signed it (YARD_CA; default: the "
                  "self-signed one yardd made in the default state directory, if there)")
      ->group(group);
  cmd->add_option("--cert", cert, "Client certificate (PEM) for mutual TLS; its CN names your identity (YARD_CERT)")->group(group);
  cmd->add_option("--key", key, "The client certificate's private key (PEM) (YARD_KEY)")->group(group);
  cmd->add_option("--token-file", tokenFile, "File holding your bearer token (first line) (YARD_TOKEN_FILE; or YARD_TOKEN itself)")
      ->group(group);
  cmd->add_flag("--plaintext", plaintext, "Talk to a yardd started with --plaintext (loopback only) (YARD_PLAINTEXT=1)")->group(group);
  cmd->add_option("--as", caller,
                  "Who a yardd without --identities records as asking (default from YARD_CALLER, else USER); with identities "
                  "yardd uses the identity your credentials prove")
      ->capture_default_str()
      ->group(group);
}

namespace {

// "" when every address of `server` (HOST:PORT, [V6]:PORT, or a gRPC target such as ipv4:A:P,B:P) names a
// port from 1 to 65535; else what is wrong. gRPC itself would dial port 0, or wrap 99999.
std::string checkServer(const std::string& server) {
  std::string list = server;
  for (const char* scheme : {"ipv4:", "ipv6:", "dns:///", "dns:"})
    if (list.rfind(scheme, 0) == 0) {
      list = list.substr(std::string_view(scheme).size());
      break;
    }
  if (list.rfind("unix:", 0) == 0) return "";
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string address = list.substr(start, comma - start);
    const std::size_t colon = address.rfind(':');
    const bool bracketed = !address.empty() && address.front() == '[';
    if (address.empty() || colon == std::string::npos || (bracketed && address.find(']') > colon) || colon + 1 == address.size())
      return fmt::format("--server {}: '{}' has no port; give HOST:PORT (yardd listens on 7390 by default)", server, address);
    const std::string port = address.substr(colon + 1);
    int n = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc{} || end != port.data() + port.size() || n < 1 || n > 65535)
      return fmt::format("--server {}: port '{}' is not a port number (1-65535)", server, port);
    start = comma + 1;
  }
  return "";
}

}  // namespace

std::shared_ptr<grpc::Channel> Connection::channel(std::string& error) const {
  if (error = checkServer(server); !error.empty()) return nullptr;
  resolvedToken_ = env("YARD_TOKEN");
  if (!tokenFile.empty()) {
    std::ifstream in(tokenFile);
    if (!in || !std::getline(in, resolvedToken_) || resolvedToken_.empty()) {
      error = fmt::format("--token-file {}: cannot read a token from it", tokenFile);
      return nullptr;
    }
  }
  // Lists come in pages, but the topology is one reply: at 100,000 GPUs it is larger than gRPC's 4 MiB default.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  if (plaintext) return grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args);
  grpc::SslCredentialsOptions tls;
  std::string trust = ca;
  if (trust.empty() && std::filesystem::exists(defaultServerCertificate())) trust = defaultServerCertificate();
  if (!trust.empty() && !readFile(trust, tls.pem_root_certs)) {
    error = fmt::format("--ca {}: cannot read it", trust);
    return nullptr;
  }
  if (cert.empty() != key.empty()) {
    error = "--cert and --key go together";
    return nullptr;
  }
  if (!cert.empty() && (!readFile(cert, tls.pem_cert_chain) || !readFile(key, tls.pem_private_key))) {
    error = fmt::format("cannot read the client certificate {} or its key {}", cert, key);
    return nullptr;
  }
  // Several yardd (ipv4:A:P,B:P): verify the first one's host name in each certificate, not the whole list.
  if (const auto name = switchyard::tlsNameOfTarget(server); !name.empty()) args.SetSslTargetNameOverride(name);
  return grpc::CreateCustomChannel(server, grpc::SslCredentials(tls), args);
}

void Connection::authenticate(grpc::ClientContext& ctx) const {
  ctx.AddMetadata("switchyard-caller", caller);
  if (!resolvedToken_.empty()) ctx.AddMetadata("authorization", "Bearer " + resolvedToken_);
}

std::string Connection::hint() const {
  return fmt::format(
      "is yardd running and listening on {}? Start it with `yardd`, or point yardctl elsewhere with --server or YARD_SERVER. "
      "yardctl speaks TLS{}; a yardd started with --plaintext needs --plaintext here, and one with its own certificate "
      "needs --ca.",
      server, plaintext ? " unless --plaintext (given)" : ca.empty() ? " trusting " + defaultServerCertificate() + " if it exists" : " trusting " + ca);
}

std::string Connection::trustHint() const {
  return fmt::format(
      "yardd at {} answered, but its TLS certificate is not one yardctl trusts (it trusts {}): give --ca (or YARD_CA) the "
      "certificate yardd serves (one on its self-signed default keeps it as STATE_DIR/grpc-cert.pem, "
      "/var/lib/switchyard/grpc-cert.pem when installed) or the CA that signed it; the certificate must name the host in --server.",
      server, ca.empty() ? defaultServerCertificate() + " (if it exists) and the system's CAs" : ca);
}

}  // namespace yardctl

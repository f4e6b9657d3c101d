#include "composer/daemon/grpc_security.h"

#include <fmt/format.h>
#include <grpcpp/security/server_credentials.h>

#include <fstream>
#include <sstream>

#include "composer/daemon/loopback.h"
#include "net/tls_certificate.h"

namespace switchyard {

namespace {

Result<std::string> readPem(const std::filesystem::path& file, const char* flag) {
  std::ifstream in(file);
  if (!in) return fail(Code::kInvalidArgument, fmt::format("{} {}: cannot read it", flag, file.string()));
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN") == std::string::npos)
    return fail(Code::kInvalidArgument, fmt::format("{} {}: not a PEM file", flag, file.string()));
  return text.str();
}

}  // namespace

Result<GrpcSecurity> grpcSecurity(const DaemonOptions& o) {
  const std::string host = hostOfListen(o.listen);
  if (o.plaintext) {
    if (!isLoopbackHost(host))
      return fail(Code::kInvalidArgument,
                  fmt::format("--plaintext is allowed on a loopback address only (127.0.0.1, ::1, localhost), not '{}': serve TLS "
                              "(--tls-cert/--tls-key, or the self-signed default) on other addresses",
                              host));
    return GrpcSecurity{grpc::InsecureServerCredentials(), "plaintext (loopback only)"};
  }
  if (o.tlsCert.empty() != o.tlsKey.empty()) return fail(Code::kInvalidArgument, "--tls-cert and --tls-key go together");
  net::CertificateFiles files{o.tlsCert, o.tlsKey};
  std::string made;
  if (o.tlsCert.empty()) {
    files = {o.grpcCertificate(), o.stateDir / "grpc-key.pem"};
    SY_ASSIGN(const bool created, net::ensureCertificate(files, host == "0.0.0.0" || host == "::" || host.empty() ? "localhost" : host));
    made = created ? "made now, " : "";
  }
  SY_ASSIGN(std::string cert, readPem(files.certificate, "--tls-cert"));
  SY_ASSIGN(std::string key, readPem(files.key, "--tls-key"));
  grpc::SslServerCredentialsOptions tls(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  tls.pem_key_cert_pairs.push_back({key, cert});
  std::string description = fmt::format("TLS (certificate {}{})", made, files.certificate.string());
  if (!o.tlsClientCa.empty()) {
    SY_ASSIGN(tls.pem_root_certs, readPem(o.tlsClientCa, "--tls-client-ca"));
    tls.client_certificate_request = o.requireClientCert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                                         : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
    description = fmt::format("mutual TLS (certificate {}{}; client certificates signed by {}, {})", made, files.certificate.string(),
                              o.tlsClientCa.string(), o.requireClientCert ? "required" : "or a bearer token");
  } else if (o.requireClientCert) {
    return fail(Code::kInvalidArgument, "--require-client-cert needs --tls-client-ca (the CA that signs client certificates)");
  }
  return GrpcSecurity{grpc::SslServerCredentials(tls), description};
}

}  // namespace switchyard

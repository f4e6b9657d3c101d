#include "net/tls_certificate.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>
#include <string_view>

#include "composer/model/durable_file.h"

namespace switchyard::net {

namespace {

template <typename T, void (*Free)(T*)>
using Owned = std::unique_ptr<T, decltype([](T* p) { Free(p); })>;

// Encodes into memory, then writes the file durably (composer/model/durable_file.h): a full disk leaves no half key.
Result<void> writePem(const std::filesystem::path& path, mode_t mode, const std::function<int(BIO*)>& encode) {
  Owned<BIO, BIO_free_all> bio(BIO_new(BIO_s_mem()));
  if (!bio || encode(bio.get()) != 1) return fail(Code::kInternal, fmt::format("cannot encode {}", path.string()));
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return writeFileDurably(path, std::string_view(data, static_cast<std::size_t>(size)), mode);
}

}  // namespace

Result<bool> ensureCertificate(const CertificateFiles& files, const std::string& hostName) {
  const bool haveCert = std::filesystem::exists(files.certificate);
  const bool haveKey = std::filesystem::exists(files.key);
  if (haveCert && haveKey) return false;
  if (haveCert != haveKey)
    return fail(Code::kInvalidArgument, fmt::format("TLS: {} exists but {} does not; give both or neither", haveCert ? files.certificate.string() : files.key.string(),
                                                    haveCert ? files.key.string() : files.certificate.string()));
  std::error_code ec;
  std::filesystem::create_directories(files.certificate.parent_path(), ec);
  std::filesystem::create_directories(files.key.parent_path(), ec);

  Owned<EVP_PKEY, EVP_PKEY_free> key(EVP_EC_gen("P-256"));
  if (!key) return fail(Code::kInternal, "TLS: cannot generate a P-256 key");
  Owned<X509, X509_free> cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), static_cast<long>(std::time(nullptr)));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("Switchyard"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(hostName.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  // Clients check the name they dialled against subjectAltName, not CN.
  const bool isAddress = hostName.find_first_not_of("0123456789.:") == std::string::npos;
  std::string names = "DNS:localhost,IP:127.0.0.1";
  if (!hostName.empty() && hostName != "localhost" && hostName != "127.0.0.1" && hostName != "0.0.0.0")
    names += (isAddress ? ",IP:" : ",DNS:") + hostName;
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  Owned<X509_EXTENSION, X509_EXTENSION_free> san(X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, names.c_str()));
  if (!san || X509_add_ext(cert.get(), san.get(), -1) != 1) return fail(Code::kInternal, "TLS: cannot add subjectAltName");
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return fail(Code::kInternal, "TLS: cannot sign the certificate");
  SY_TRY(writePem(files.key, 0600, [&](BIO* b) { return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr); }));
  SY_TRY(writePem(files.certificate, 0644, [&](BIO* b) { return PEM_write_bio_X509(b, cert.get()); }));
  return true;
}

}  // namespace switchyard::net

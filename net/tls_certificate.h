// The Redfish service's TLS certificate: loaded from PEM files, or, when none is configured and none was
// made before, a self-signed one created at first start (ECDSA P-256, SHA-256, valid 10 years, the key
// file mode 0600) so that HTTPS works out of the box. Clients trust it by pinning the certificate file.
#pragma once

#include <filesystem>
#include <string>

#include "composer/model/error.h"

namespace switchyard::net {

struct CertificateFiles {
  std::filesystem::path certificate;  // PEM
  std::filesystem::path key;          // PEM, private
};

// Uses the files when both exist; creates a self-signed pair for `hostName` there when neither does;
// refuses when only one exists (a half-configured pair is a mistake worth stopping for).
[[nodiscard]] Result<bool> ensureCertificate(const CertificateFiles& files, const std::string& hostName);

}  // namespace switchyard::net

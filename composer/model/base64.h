// Base64 (RFC 4648, the standard alphabet with padding), the one codec of the project: HTTP Basic
// credentials (the Redfish client, the accounts of the Redfish service and the operator endpoint) and
// etcd's JSON gateway, whose keys and values are bytes. On OpenSSL's EVP block codec.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard {

[[nodiscard]] std::string encodeBase64(std::string_view bytes);

// Strict: whole 4-character groups of the alphabet, '=' only as the last one or two characters, no
// whitespace. Anything else is nullopt, never a partial decode.
[[nodiscard]] std::optional<std::string> decodeBase64(std::string_view text);

}  // namespace switchyard

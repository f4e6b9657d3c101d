// gRPC targets as yardctl, yard-agent and the Python client take them: HOST:PORT, or a list of yardd for
// active/standby, `ipv4:10.0.0.1:7390,10.0.0.2:7390` (`ipv6:[...]:P,...`, `dns:///name:P`).
#pragma once

#include <string>
#include <string_view>

namespace switchyard {

// The name TLS must verify in yardd's certificate for a target that lists several addresses (or names a
// scheme): the host of its first address. gRPC would check the whole target string ("127.0.0.1:7501,
// 127.0.0.1:7502"), which no certificate names. Empty for a plain HOST:PORT, where gRPC's own rule is right.
// Every yardd of such a list must have a certificate for that host (docs/operations.md, Active/standby).
[[nodiscard]] std::string tlsNameOfTarget(std::string_view target);

}  // namespace switchyard

// Whether a listen host is loopback only: decided on the addresses it resolves to, not on its spelling
// ("127.evil" is a name, and may resolve anywhere).
#pragma once

#include <string>

namespace switchyard {

// True when `host` (a name, an IPv4 or IPv6 address, brackets allowed) resolves, and every address it
// resolves to is loopback (127.0.0.0/8, ::1). Unresolvable, wildcard (0.0.0.0, ::) and empty hosts are not.
[[nodiscard]] bool isLoopbackHost(const std::string& host);
// The host of a HOST:PORT listen address, without an IPv6 address's brackets ("[::1]:7390" -> "::1").
[[nodiscard]] std::string hostOfListen(const std::string& listen);

}  // namespace switchyard

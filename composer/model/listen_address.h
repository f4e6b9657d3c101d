// A listen address as yardd's flags take it (--listen, --redfish-listen, --metrics-listen): HOST:PORT, where
// PORT is 0 (any free port) to 65535 written in decimal digits alone. Checked before anything binds, so
// that ":70000" is refused instead of wrapping to port 4464.
#pragma once

#include <string>
#include <string_view>

#include "composer/model/error.h"

namespace switchyard {

struct ListenAddress {
  std::string host;  // as written: an IPv4 or IPv6 address (brackets kept), or a name for gRPC's own resolver
  int port = 0;      // 0..65535; 0 picks a free one
};

// `flag` names the option that gave the text, for the error ("--metrics-listen :70000: ...").
[[nodiscard]] Result<ListenAddress> parseListenAddress(std::string_view text, std::string_view flag);

}  // namespace switchyard

// Who an HTTP request's Authorization header proves, as a service on the shared server asks it: the header's
// value and the client's address (lockouts of password guessing count by it) in, the caller (or nothing: not
// proven) out through `then`, which may run on another thread when the check is slow (PBKDF2). yardd's
// implementation is the Redfish service's accounts over the identities file (bmc/accounts.h); a service that
// takes one does not need to know that.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "composer/model/caller.h"

namespace switchyard::net {

using Authorize = std::function<void(const std::string& header, std::string_view peer, std::function<void(std::optional<Caller>)> then)>;

// Who a name and password prove (a console's login form), as Authorize answers: the caller or nothing through
// `then`, maybe on another thread (the password check is slow on purpose), with the identity's generation
// (auth::Identity::generation: a session opened with it ends when the identity changes).
using Login = std::function<void(const std::string& name, const std::string& password, std::string_view peer,
                                 std::function<void(std::optional<Caller>, std::uint64_t generation)> then)>;
// The caller an identity is now, while it is still the generation a login was made under; nothing once its
// password changed or it was removed (even if the name is back).
using CurrentCaller = std::function<std::optional<Caller>(std::string_view identity, std::uint64_t generation)>;

}  // namespace switchyard::net

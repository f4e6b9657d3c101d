// What yardd does when a name or a source is locked for guessing passwords (composer/auth/identities.h): a
// warning in its log and, once the engine runs, a record in the audit trail (action "lockout", target
// "identity:NAME" or "source:ADDRESS", caller yardd, result LOCKED), which `yardctl audit` lists for admins,
// operators and viewers (not tenants: the record has no tenant).
#pragma once

#include <string>

#include "composer/auth/identities.h"
#include "composer/engine/engine.h"

namespace switchyard {

// `engine` null: the log line only (yardd before its engine starts, and while it stops).
void reportLockout(const auth::Identities::Lockout& lockout, Engine* engine);

// A name as a guesser sent it, fit for a log line: control characters as \xNN, never raw to a terminal.
[[nodiscard]] std::string escapeControlCharacters(const std::string& text);

}  // namespace switchyard

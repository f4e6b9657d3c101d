#include "composer/daemon/lockout_report.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace switchyard {

std::string escapeControlCharacters(const std::string& text) {
  std::string shown;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    shown += (c < 0x20 || c == 0x7f) ? fmt::format("\\x{:02x}", c) : std::string(1, ch);
  }
  return shown;
}

void reportLockout(const auth::Identities::Lockout& lockout, Engine* engine) {
  const bool ofName = lockout.of == auth::Identities::Lockout::Of::kName;
  const std::string message =
      ofName ? fmt::format("{} wrong passwords in a row for identity '{}': every password for it is refused for {} s (a name nobody "
                           "has is locked the same way)",
                           lockout.failures, lockout.who, lockout.lockedFor.count())
             : fmt::format("{} wrong passwords in a row from {} (whatever names they tried): every password from there is refused for {} s",
                           lockout.failures, lockout.who, lockout.lockedFor.count());
  spdlog::warn("{}", escapeControlCharacters(message));
  if (engine == nullptr) return;
  AuditRecord record;
  record.caller = Caller::daemon();
  record.action = "lockout";
  record.target = fmt::format("{}:{}", ofName ? "identity" : "source", lockout.who);
  record.result = "LOCKED";
  record.message = message;
  if (auto written = engine->blocking().recordAudit(std::move(record)); !written)
    spdlog::debug("lockout not in the audit trail: {}", written.error().message);
}

}  // namespace switchyard

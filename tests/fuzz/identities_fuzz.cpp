// Fuzz target: arbitrary bytes as yardd's identities file (composer/auth/identities.h): accepted whole or
// refused with the entry named, never a crash. An accepted file's identities answer credential checks.
#include <cstdint>
#include <string_view>

#include "composer/auth/identities.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ids = switchyard::auth::Identities::parse(text, "fuzz.json");
  if (!ids) return 0;
  for (const auto& id : (*ids)->identities()) {
    (void)(*ids)->byToken(id.name);
    (void)(*ids)->byCertificate(id.certificateCn);
  }
  return 0;
}

#include "composer/cohdi/cohdi_ids.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <array>

namespace switchyard::cohdi {

namespace {

// Switchyard's namespace for CoHDI's identifiers (a random UUID, fixed for good: changing it renames everything).
constexpr std::array<unsigned char, 16> kNamespace{0xd5, 0xc8, 0xdb, 0x75, 0x5f, 0x9b, 0x4a, 0x88, 0x97, 0xee, 0xa9, 0x77, 0x25, 0xba, 0x06, 0xb1};

}  // namespace

std::string uuidOf(std::string_view name) {
  std::string input(reinterpret_cast<const char*>(kNamespace.data()), kNamespace.size());
  input += name;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0f) | 0x50);  // version 5
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3f) | 0x80);  // the RFC's variant
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", digest[i]);
  }
  return out;
}

int numberOf(std::string_view uuid) {
  unsigned value = 0;
  int digits = 0;
  for (char c : uuid) {
    if (c == '-') continue;
    if (digits++ == 8) break;
    value = value * 16 + static_cast<unsigned>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return static_cast<int>(value & 0x7fffffffU);
}

}  // namespace switchyard::cohdi

// The project's one base64 codec: RFC 4648's test vectors, bytes of every value, and the strictness the
// HTTP Basic parser and the etcd client rely on (a malformed text is refused whole, never half-decoded).
#include <gtest/gtest.h>

#include <string>

#include "composer/model/base64.h"

namespace switchyard {
namespace {

TEST(Base64, EncodesAndDecodesTheRfcVectors) {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},    {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(encodeBase64(plain), encoded);
    EXPECT_EQ(decodeBase64(encoded), plain) << encoded;
  }
}

TEST(Base64, KeepsEveryByte) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (std::size_t n : {0U, 1U, 2U, 3U, 255U, 256U}) {
    const std::string part = bytes.substr(0, n);
    EXPECT_EQ(decodeBase64(encodeBase64(part)), part) << n << " bytes";
  }
  EXPECT_EQ(decodeBase64("AA=="), std::string(1, '\0'));
}

TEST(Base64, RefusesAnythingMalformed) {
  for (const char* bad : {"Zg=", "Zg", "Z", "Zm9vY", "Z===", "====", "Zg==Zg==", "Zm=v", " Zg==", "Zg== ", "Zm9v\n", "Zm9-", "Zm9_"})
    EXPECT_EQ(decodeBase64(bad), std::nullopt) << '"' << bad << '"';
  EXPECT_EQ(decodeBase64(std::string("Zm\0v", 4)), std::nullopt) << "a NUL inside";
}

}  // namespace
}  // namespace switchyard

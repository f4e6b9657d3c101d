// --plaintext is for loopback only, decided on what the listen host resolves to (composer/daemon/loopback.h).
#include <gtest/gtest.h>

#include "composer/daemon/loopback.h"
#include "composer/model/version.h"

namespace switchyard {
namespace {

TEST(Loopback, OnlyHostsThatResolveToLoopbackAlone) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"}) EXPECT_TRUE(isLoopbackHost(host)) << host;
  // Spelled like loopback, but a name that resolves elsewhere or not at all; wildcards; other addresses.
  for (const char* host : {"127.evil", "127.0.0.1.example.invalid", "localhost.invalid", "0.0.0.0", "::", "[::]", "", "10.0.0.1",
                           "192.168.1.1", "::ffff:10.0.0.1"})
    EXPECT_FALSE(isLoopbackHost(host)) << host;
}

TEST(Version, NamesTheProgramAndAMajorVersionCanBeRead) {
  EXPECT_EQ(versionLine("yardd").rfind("yardd " + std::string(projectVersion()), 0), 0u);
  EXPECT_EQ(majorVersionOf("0.1.0"), 0);
  EXPECT_EQ(majorVersionOf("12.3.4"), 12);
  EXPECT_EQ(majorVersionOf(""), -1);
  EXPECT_EQ(majorVersionOf("x.1"), -1);
  EXPECT_EQ(majorVersionOf("7"), -1);
}

}  // namespace
}  // namespace switchyard

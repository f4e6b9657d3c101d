// gRPC Login's password path (composer/api/authenticator.h): the peer's address it counts failures by, and
// what a refused login says once a name or an address is locked.
#include "composer/api/authenticator.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "composer/auth/identities.h"
#include "composer/auth/sessions.h"
#include "composer/model/clock.h"

namespace switchyard {
namespace {

TEST(PeerAddress, IsTheAddressWithoutSchemeOrPort) {
  EXPECT_EQ(peerAddress("ipv4:10.0.0.7:51234"), "10.0.0.7");
  EXPECT_EQ(peerAddress("ipv6:[::1]:51234"), "::1");
  EXPECT_EQ(peerAddress("ipv6:%5B::1%5D:51234"), "::1") << "newer gRPC escapes the brackets";
  EXPECT_EQ(peerAddress("ipv6:[fe80::1%25eth0]:7390"), "fe80::1%25eth0");
  EXPECT_EQ(peerAddress("unix:/run/switchyard/yardd.sock"), "unix");
  EXPECT_EQ(peerAddress("10.0.0.7"), "10.0.0.7");
  EXPECT_EQ(peerAddress(""), "");
}

TEST(AuthenticatorLogin, SaysWhenTheNameOrTheAddressIsLocked) {
  ManualClock clock;
  auto ids = auth::Identities::parse(fmt::format(R"({{"identities": [{{"name": "carol", "role": "viewer", "password": "{}"}}]}})",
                                                 auth::Identities::hashPassword("right", 1000)),
                                     "ids.json");
  ASSERT_TRUE(ids) << ids.error().message;
  (*ids)->useClock(clock);
  auth::Sessions sessions(clock);
  Authenticator authenticator(ids->get(), &sessions);
  const std::chrono::seconds ttl{0};

  auto wrong = authenticator.login("carol", "guess", ttl, "ipv4:10.0.0.7:4000");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().message, "wrong name or password");
  for (int i = 1; i < auth::Identities::kFreePasswordAttempts; ++i) wrong = authenticator.login("carol", "guess", ttl, "ipv4:10.0.0.7:4000");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().message, "wrong name or password; after 5 failed tries 'carol' is locked for 1 s");
  clock.advance(std::chrono::seconds(1));
  ASSERT_TRUE(authenticator.login("carol", "right", ttl, "ipv4:10.0.0.7:4001")) << "the port is not part of the source";

  for (int i = 0; i < auth::Identities::kFreeSourceAttempts; ++i)
    wrong = authenticator.login(fmt::format("name-{}", i % 5), "guess", ttl, fmt::format("ipv4:10.0.0.7:{}", 5000 + i));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().message, "wrong name or password; after 20 failed tries from 10.0.0.7 every password from there is refused for 1 s");
  EXPECT_FALSE(authenticator.login("carol", "right", ttl, "ipv4:10.0.0.7:6000"));
  EXPECT_TRUE(authenticator.login("carol", "right", ttl, "ipv6:[::1]:6000")) << "another address may still log in";
}

}  // namespace
}  // namespace switchyard

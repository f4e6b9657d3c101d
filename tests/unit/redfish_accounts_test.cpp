// Redfish authentication over the identities file: Basic and bearer credentials, sessions.
#include "bmc/accounts.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/support/identities.h"

namespace switchyard::bmc {
namespace {

std::string basic(const std::string& userColonPassword) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int bits = 0, value = 0;
  for (unsigned char c : userColonPassword) {
    value = (value << 8) | c;
    bits += 8;
    while (bits >= 6) out += kAlphabet[(value >> (bits -= 6)) & 63];
  }
  if (bits > 0) out += kAlphabet[(value << (6 - bits)) & 63];
  while (out.size() % 4) out += '=';
  return "Basic " + out;
}

TEST(RedfishAccounts, BasicAndBearerCredentialsProveTheCallerRoleAndTenant) {
  Accounts accounts(testing::makeIdentities({{"alice", "operator", "", "pw-a"},
                                             {"bob", "viewer", "", "pw:with:colons"},
                                             {"carol", "tenant", "team-c", "pw-c", "carols-token"}}));
  auto alice = accounts.authorization(basic("alice:pw-a"));
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->identity, "alice");
  EXPECT_EQ(alice->role, Role::kOperator);
  EXPECT_EQ(accounts.authorization(basic("bob:pw:with:colons"))->role, Role::kViewer) << "the password is all after the first ':'";
  auto carol = accounts.authorization("Bearer carols-token");
  ASSERT_TRUE(carol);
  EXPECT_EQ(carol->role, Role::kTenant);
  EXPECT_EQ(carol->tenant, "team-c");
  EXPECT_FALSE(accounts.authorization(basic("alice:pw-b")));
  EXPECT_FALSE(accounts.authorization(basic("dave:pw-a")));
  EXPECT_FALSE(accounts.authorization("Bearer x"));
  EXPECT_FALSE(accounts.authorization("Basic !!!"));
  EXPECT_FALSE(accounts.authorization("Basic YWxpY2U6cHctYQ")) << "a partial base64 group (the fuzzer's heap overflow) is refused";
  EXPECT_FALSE(accounts.authorization("Basic "));
}

TEST(RedfishAccounts, SessionsLastUntilLogoutOrTimeoutAndCarryTheTenant) {
  auto identities = testing::makeIdentities({{"alice", "admin", "", "pw"}, {"carol", "tenant", "team-c", "pw-c"}});
  Accounts accounts(identities, std::chrono::seconds(0));
  EXPECT_FALSE(accounts.login("alice", "wrong"));
  auto s = accounts.login("alice", "pw");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->token.size(), 48u);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(accounts.token(s->token)) << "a zero timeout expires the session at once";
  Accounts lasting(identities);
  auto t = lasting.login("carol", "pw-c");
  ASSERT_TRUE(t);
  EXPECT_EQ(lasting.token(t->token)->tenant, "team-c");
  EXPECT_TRUE(lasting.logout(t->id));
  EXPECT_FALSE(lasting.token(t->token));
}

}  // namespace
}  // namespace switchyard::bmc

// Redfish accounts: the file format, Basic credentials, sessions.
#include "bmc/accounts.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "tests/support/temp_dir.h"

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

TEST(RedfishAccounts, LoadsRolesAndNamesTheBadLine) {
  testing::TempDir dir;
  std::ofstream(dir / "ok") << "# operators\nalice:Operator:pw-a\n\nbob:ReadOnly:pw:with:colons\n";
  auto accounts = Accounts::load(dir / "ok");
  ASSERT_TRUE(accounts) << accounts.error().message;
  ASSERT_EQ((*accounts)->accounts().size(), 2u);
  EXPECT_EQ((*accounts)->accounts()[1].password, "pw:with:colons");
  std::ofstream(dir / "bad") << "alice:Operator:pw\nmallory:Root:pw\n";
  auto bad = Accounts::load(dir / "bad");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad:2"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(Accounts::load(dir / "missing"));
}

TEST(RedfishAccounts, BasicCredentialsProveTheCallerAndTheirRole) {
  Accounts accounts({{"alice", Role::kOperator, "pw-a"}, {"bob", Role::kViewer, "pw-b"}});
  auto alice = accounts.basic(basic("alice:pw-a"));
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->identity, "alice");
  EXPECT_EQ(alice->role, Role::kOperator);
  EXPECT_FALSE(accounts.basic(basic("alice:pw-b")));
  EXPECT_FALSE(accounts.basic(basic("carol:pw-a")));
  EXPECT_FALSE(accounts.basic("Bearer x"));
  EXPECT_FALSE(accounts.basic("Basic !!!"));
  EXPECT_FALSE(accounts.basic("Basic YWxpY2U6cHctYQ")) << "a partial base64 group (the fuzzer's heap overflow) is refused";
  EXPECT_FALSE(accounts.basic("Basic "));
}

TEST(RedfishAccounts, SessionsLastUntilLogoutOrTimeout) {
  Accounts accounts({{"alice", Role::kAdmin, "pw"}}, std::chrono::seconds(0));
  EXPECT_FALSE(accounts.login("alice", "wrong"));
  auto s = accounts.login("alice", "pw");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->token.size(), 32u);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(accounts.token(s->token)) << "a zero timeout expires the session at once";
  Accounts lasting({{"alice", Role::kAdmin, "pw"}});
  auto t = lasting.login("alice", "pw");
  ASSERT_TRUE(t);
  EXPECT_EQ(lasting.token(t->token)->identity, "alice");
  EXPECT_TRUE(lasting.logout(t->id));
  EXPECT_FALSE(lasting.token(t->token));
}

}  // namespace
}  // namespace switchyard::bmc

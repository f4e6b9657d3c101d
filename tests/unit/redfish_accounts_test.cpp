// Redfish authentication over the identities file: Basic and bearer credentials, sessions.
#include "bmc/accounts.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <mutex>
#include <vector>
#include <thread>

#include "net/http_server.h"
#include "composer/model/base64.h"
#include "tests/support/identities.h"

namespace switchyard::bmc {
namespace {

std::string basic(const std::string& userColonPassword) { return "Basic " + encodeBase64(userColonPassword); }

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

TEST(RedfishAccounts, OneAddressGuessingManyNamesIsLockedOutWhateverNameItTries) {
  Accounts accounts(testing::makeIdentities({{"alice", "operator", "", "pw-a", "alices-token"}}));
  for (int i = 0; i < auth::Identities::kFreeSourceAttempts; ++i)
    EXPECT_FALSE(accounts.authorization(basic(fmt::format("user-{}:guess", i % 5)), "10.0.0.7"));
  EXPECT_FALSE(accounts.authorization(basic("alice:pw-a"), "10.0.0.7")) << "locked: the right password too";
  EXPECT_FALSE(accounts.login("alice", "pw-a", "10.0.0.7")) << "sessions count by the same address";
  EXPECT_TRUE(accounts.authorization(basic("alice:pw-a"), "10.0.0.8"));
  EXPECT_TRUE(accounts.authorization("Bearer alices-token", "10.0.0.7")) << "a token is no password: it still works from there";
}

// A server's request threads never run PBKDF2: authorize() answers a password check on the accounts' own
// threads and a cheap answer (a token, a password matched before, a malformed header) at once.
TEST(RedfishAccounts, PasswordChecksRunOffTheCallersThread) {
  Accounts accounts(testing::makeIdentities({{"alice", "operator", "", "pw-a", "alices-token"}}));
  struct Answer {
    std::optional<Caller> caller;
    std::thread::id thread;
  };
  const auto authorize = [&](const std::string& header) {
    std::promise<Answer> answered;
    accounts.authorize(header, "10.0.0.7", [&](std::optional<Caller> c) { answered.set_value({std::move(c), std::this_thread::get_id()}); });
    return answered.get_future().get();
  };
  const auto here = std::this_thread::get_id();
  const Answer first = authorize(basic("alice:pw-a"));
  ASSERT_TRUE(first.caller);
  EXPECT_NE(first.thread, here) << "a password not matched before is checked elsewhere";
  const Answer again = authorize(basic("alice:pw-a"));
  ASSERT_TRUE(again.caller);
  EXPECT_EQ(again.thread, here) << "a password matched before is a hash lookup: answered at once";
  const Answer stranger = authorize(basic("mallory:guess"));
  EXPECT_FALSE(stranger.caller);
  EXPECT_NE(stranger.thread, here) << "a name nobody has costs the same check, in the same place";
  EXPECT_EQ(authorize("Bearer alices-token").thread, here);
  EXPECT_EQ(authorize("Basic !!!").thread, here);

  std::promise<std::optional<Session>> loggedIn;
  accounts.startLogin("alice", "pw-a", "10.0.0.7", [&](std::optional<Session> s) { loggedIn.set_value(std::move(s)); });
  EXPECT_TRUE(loggedIn.get_future().get()) << "sessions use the same path";
}


// Issue "No request can stop yardd", N8: a first login waited 8.2 s behind 40 guessers' PBKDF2, all on the
// same two threads. Guesses at names nobody has (and at failing names) wait in a lane of their own: a real
// name's first login is checked at once, whatever is queued there.
TEST(RedfishAccounts, AFirstLoginIsNotQueuedBehindGuessers) {
  auto parsed = auth::Identities::parse(
      fmt::format(R"({{"identities": [{{"name": "alice", "role": "operator", "password": "{}"}}]}})", auth::Identities::hashPassword("pw-a", 60'000)),
      "ids.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  Accounts accounts(std::shared_ptr<const auth::Identities>(std::move(*parsed)));
  std::mutex mutex;
  std::vector<std::string> order;
  std::promise<std::vector<std::string>> aliceIn;  // the order as it stood when alice's answer came
  for (int i = 0; i < 40; ++i)  // 40 guessers, each at a name nobody has, all from loopback as the user is
    accounts.authorize(basic(fmt::format("guess-{}:x", i)), "127.0.0.1", [&, i](std::optional<Caller>) {
      std::lock_guard lock(mutex);
      order.push_back(fmt::format("guess-{}", i));
    });
  accounts.authorize(basic("alice:pw-a"), "127.0.0.1", [&](std::optional<Caller> c) {
    std::lock_guard lock(mutex);
    order.push_back(c ? "alice" : "alice refused");
    aliceIn.set_value(order);  // taken here: a guess may finish between this and the test's next look
  });
  const std::vector<std::string> seen = aliceIn.get_future().get();
  accounts.drain();
  EXPECT_EQ(seen.back(), "alice");
  EXPECT_LT(seen.size(), 10u) << "alice's check ran after " << seen.size() - 1 << " of the 40 guesses";
}

}  // namespace
}  // namespace switchyard::bmc

// The bmc-reset host policy against the emulator serving DMTF's rack-mount server: admit power-cycles
// the host after a bind (or powers it on), release shuts it down before the unbind; a BMC that refuses
// or does not answer is a clear error.
#include "bmc/bmc_reset_hosts.h"

#include <gtest/gtest.h>

#include "tests/support/rackmount_bmc.h"

namespace switchyard::bmc {
namespace {

using namespace std::chrono_literals;

class BmcResetHostsTest : public switchyard::testing::RackmountBmcTest {
 protected:
  BmcResetHosts hosts(std::string password = "switchyard") {
    return BmcResetHosts({.bmcs = {{"host0", options(std::move(password))}}, .pollInterval = 10ms});
  }
  std::string power() {
    auto bmc = HostBmc::connect(options());
    return bmc ? *(*bmc)->powerState() : "?";
  }
  const HostChange devices_{{{"sw0-gpu0", "sw0-usp0"}, {"sw0-gpu1", "sw0-usp0"}}, {}};
};

TEST_F(BmcResetHostsTest, AdmitPowerCyclesTheHostAndReleaseShutsItDown) {
  auto h = hosts();
  EXPECT_EQ(h.policy("host0"), HostPolicy::kBmcReset);
  EXPECT_EQ(h.policy("host1"), HostPolicy::kUnset);

  auto admitted = h.admit("host0", devices_, {5s});
  ASSERT_TRUE(admitted) << admitted.error().message;
  ASSERT_EQ(admitted->size(), 2u);
  EXPECT_EQ((*admitted)[0].deviceId, "sw0-gpu0");
  EXPECT_EQ((*admitted)[0].pciAddress, "");  // a BMC cannot say where the host enumerated it
  EXPECT_EQ(emulator_->resets(), 1);
  EXPECT_EQ(power(), "On");

  ASSERT_TRUE(h.release("host0", devices_, {5s}));
  EXPECT_EQ(power(), "Off");
  EXPECT_EQ(emulator_->resets(), 2);
  ASSERT_TRUE(h.release("host0", devices_, {5s}));  // already off: nothing to do
  EXPECT_EQ(emulator_->resets(), 2);

  ASSERT_TRUE(h.admit("host0", devices_, {5s}));  // off: powered on
  EXPECT_EQ(power(), "On");
  EXPECT_EQ(emulator_->sessions(), 0u) << "every call logged out";
}

TEST_F(BmcResetHostsTest, ABmcThatRefusesOrIsGoneIsAClearError) {
  auto wrong = hosts("not-the-password").admit("host0", devices_, {5s});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("BMC of host0"), std::string::npos) << wrong.error().message;

  auto none = hosts().admit("host1", devices_, {5s});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Code::kFailedPrecondition);

  const std::string url = emulator_->url();
  emulator_.reset();
  BmcResetHosts gone({.bmcs = {{"host0", {url, "admin", "switchyard", {}, {}}}}});
  auto unreachable = gone.admit("host0", devices_, {2s});
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().code, Code::kUnavailable) << unreachable.error().message;
}

}  // namespace
}  // namespace switchyard::bmc

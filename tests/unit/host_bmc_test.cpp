// The host-BMC client against the emulator serving DMTF's rack-mount server mockup: a session, the
// inventory, power and a reset; and what a user sees when the BMC refuses.
#include "bmc/host_bmc.h"

#include <gtest/gtest.h>

#include "tests/support/rackmount_bmc.h"

namespace switchyard::bmc {
namespace {

using HostBmcTest = switchyard::testing::RackmountBmcTest;

TEST_F(HostBmcTest, ReadsTheHostThroughASessionAndLogsOut) {
  {
    auto bmc = HostBmc::connect(options());
    ASSERT_TRUE(bmc) << bmc.error().message;
    EXPECT_EQ(emulator_->sessions(), 1u);
    auto inv = (*bmc)->inventory();
    ASSERT_TRUE(inv) << inv.error().message;
    EXPECT_EQ(inv->systemId, "437XR1138R2");
    EXPECT_EQ(inv->model, "3500");
    EXPECT_EQ(inv->powerState, "On");
    EXPECT_EQ(inv->processors, 2);
    EXPECT_EQ(inv->memoryGiB, 96);
  }
  EXPECT_EQ(emulator_->sessions(), 0u) << "the client logged out";
}

TEST_F(HostBmcTest, ResetsWithAnAllowedTypeOnly) {
  auto bmc = HostBmc::connect(options());
  ASSERT_TRUE(bmc);
  ASSERT_TRUE((*bmc)->reset("ForceOff"));
  EXPECT_EQ(*(*bmc)->powerState(), "Off");
  ASSERT_TRUE((*bmc)->reset("On"));
  EXPECT_EQ(*(*bmc)->powerState(), "On");
  auto refused = (*bmc)->reset("SelfDestruct");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("ForceRestart"), std::string::npos) << "the message lists what is allowed";
  EXPECT_EQ(emulator_->resets(), 2);
}

TEST_F(HostBmcTest, WrongCredentialsAndUnknownSystemsAreClearErrors) {
  auto wrong = HostBmc::connect(options("nope"));
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("authentication"), std::string::npos) << wrong.error().message;
  auto opts = options();
  opts.system = "no-such-system";
  auto missing = HostBmc::connect(opts);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
}

TEST_F(HostBmcTest, ABmcThatStopsAnsweringIsUnavailable) {
  auto bmc = HostBmc::connect(options());
  ASSERT_TRUE(bmc);
  emulator_->dropNext(1);
  auto power = (*bmc)->powerState();
  ASSERT_FALSE(power);
  EXPECT_EQ(power.error().code, Code::kUnavailable);
}

}  // namespace
}  // namespace switchyard::bmc

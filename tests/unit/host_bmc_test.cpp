// The host-BMC client against the emulator serving DMTF's rack-mount server mockup: a session, the
// inventory, power and a reset; and what a user sees when the BMC refuses.
#include "bmc/host_bmc.h"

#include <gtest/gtest.h>

#include "net/tls_certificate.h"
#include "tests/support/rackmount_bmc.h"
#include "tests/support/temp_dir.h"

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
  emulator_->dropNext(2);  // a GET dropped on a kept-alive connection is sent again once, on a new one: that too
  auto power = (*bmc)->powerState();
  ASSERT_FALSE(power);
  EXPECT_EQ(power.error().code, Code::kUnavailable);
}

TEST_F(HostBmcTest, OverHttpsTheBmcsCertificateIsVerifiedAndATrustedCaLetsItThrough) {
  // A BMC with a self-signed certificate, as most ship: refused until the client is told to trust it.
  testing::TempDir dir;
  testing::RedfishEmulator::Options secure{emulator_->options().mockup};
  secure.tlsCertificate = dir.path() / "cert.pem";
  secure.tlsKey = dir.path() / "key.pem";
  ASSERT_TRUE(net::ensureCertificate({secure.tlsCertificate, secure.tlsKey}, "127.0.0.1"));
  auto e = testing::RedfishEmulator::start(secure);
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_EQ((*e)->url().rfind("https://", 0), 0u);
  HostBmcOptions opts{(*e)->url(), "admin", "switchyard", {}, {}};
  auto untrusted = HostBmc::connect(opts);
  ASSERT_FALSE(untrusted) << "verification is on by default";
  EXPECT_NE(untrusted.error().message.find("certificate"), std::string::npos) << untrusted.error().message;
  EXPECT_EQ((*e)->sessions(), 0u) << "no credentials were sent to an unverified BMC";
  opts.caFile = secure.tlsCertificate.string();
  auto bmc = HostBmc::connect(opts);
  ASSERT_TRUE(bmc) << bmc.error().message;
  EXPECT_EQ((*bmc)->inventory()->systemId, "437XR1138R2");
  ASSERT_TRUE((*bmc)->reset("ForceOff"));
  EXPECT_EQ(*(*bmc)->powerState(), "Off");
}

}  // namespace
}  // namespace switchyard::bmc

// A host BMC for tests: the Redfish emulator serving DMTF's rack-mount server mockup (one ComputerSystem
// with power and ComputerSystem.Reset), and the client options that log in to it. Skips, naming the
// path, when ../shared is absent.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "bmc/host_bmc.h"
#include "tests/support/redfish_emulator.h"
#include "tests/support/shared_dir.h"

namespace switchyard::testing {

class RackmountBmcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto mockup = sharedDir() / "redfish-mockups" / "dmtf-public-rackmount1";
    if (!std::filesystem::exists(mockup)) GTEST_SKIP() << "no Redfish mockup at " << mockup;
    auto e = RedfishEmulator::start({mockup});
    ASSERT_TRUE(e) << e.error().message;
    emulator_ = std::move(*e);
  }
  bmc::HostBmcOptions options(std::string password = "switchyard") const {
    return {emulator_->url(), "admin", std::move(password), {}, {}};
  }
  std::unique_ptr<RedfishEmulator> emulator_;
};

}  // namespace switchyard::testing

// yardd --domain NAME=DRIVER[,KEY=VALUE...] (composer/daemon/domain_spec.h).
#include <gtest/gtest.h>

#include "composer/daemon/domain_spec.h"

namespace switchyard {
namespace {

std::string errorOf(const std::string& text) {
  auto r = parseDomainSpec(text);
  EXPECT_FALSE(r) << text;
  return r ? std::string() : r.error().message;
}

TEST(DomainSpec, ParsesSimulatedAndRedfishDomains) {
  auto sim = parseDomainSpec("rack-a=simulated,generate-gpus=64,latency-ms=5,state=none");
  ASSERT_TRUE(sim) << sim.error().message;
  EXPECT_EQ(sim->name, "rack-a");
  EXPECT_EQ(sim->driver, "simulated");
  EXPECT_EQ(sim->generateGpus, 64);
  EXPECT_EQ(sim->latencyMs, 5);
  EXPECT_EQ(sim->state, "none");

  auto file = parseDomainSpec("b=simulated,topology=/etc/switchyard/b.json");
  ASSERT_TRUE(file);
  EXPECT_EQ(file->topology, "/etc/switchyard/b.json");
  EXPECT_FALSE(file->state) << "the default state file";

  auto rf = parseDomainSpec("cxl.west=redfish,url=https://fm:8443,fabric=CXL2,user=admin,password-file=/p,ca=/ca.pem");
  ASSERT_TRUE(rf) << rf.error().message;
  EXPECT_EQ(rf->url, "https://fm:8443");
  EXPECT_EQ(rf->fabric, "CXL2");
  EXPECT_EQ(rf->user, "admin");
  EXPECT_EQ(rf->passwordFile, "/p");
  EXPECT_EQ(rf->ca, "/ca.pem");
  EXPECT_EQ(parseDomainSpec("c=redfish,url=http://x")->fabric, "CXL");

  auto st = parseDomainSpec("pax-west=switchtec,endpoint=10.0.0.9:54545");
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->driver, "switchtec");
  EXPECT_EQ(st->endpoint, "10.0.0.9:54545");

  auto q = parseDomainSpec("lab=qemu,pool=/etc/switchyard/qemu-pool.json");
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->driver, "qemu");
  EXPECT_EQ(q->pool, "/etc/switchyard/qemu-pool.json");
}

TEST(DomainSpec, SaysWhatIsWrong) {
  EXPECT_NE(errorOf("rack-a").find("expected NAME=simulated"), std::string::npos);
  EXPECT_NE(errorOf("=simulated,generate-gpus=1").find("must be 1 to 63 letters"), std::string::npos);
  EXPECT_NE(errorOf("a b=simulated,generate-gpus=1").find("must be 1 to 63 letters"), std::string::npos);
  EXPECT_NE(errorOf("a=vendor").find("'vendor' is not a driver"), std::string::npos);
  EXPECT_NE(errorOf("a=simulated").find("needs topology=FILE or generate-gpus=N"), std::string::npos);
  EXPECT_NE(errorOf("a=simulated,url=http://x").find("'url' is not a key of the simulated driver"), std::string::npos);
  EXPECT_NE(errorOf("a=redfish,topology=x.json").find("'topology' is not a key of the redfish driver"), std::string::npos);
  EXPECT_NE(errorOf("a=redfish,fabric=CXL").find("needs url="), std::string::npos);
  EXPECT_NE(errorOf("a=switchtec").find("needs endpoint="), std::string::npos);
  EXPECT_NE(errorOf("a=switchtec,url=http://x").find("'url' is not a key of the switchtec driver"), std::string::npos);
  EXPECT_NE(errorOf("a=simulated,generate-gpus=ten").find("generate-gpus=ten is not a number"), std::string::npos);
  EXPECT_NE(errorOf("a=simulated,generate-gpus=0").find("at least 1"), std::string::npos);
  EXPECT_NE(errorOf("a=simulated,topology=x,generate-gpus=2").find("exclude each other"), std::string::npos);
  EXPECT_NE(errorOf("a=simulated,generate-gpus=2,generate-gpus=3").find("given twice"), std::string::npos);
  EXPECT_NE(errorOf("a=simulated,generate-gpus").find("is not KEY=VALUE"), std::string::npos);
  EXPECT_NE(errorOf("a=simulated,topology=").find("has no value"), std::string::npos);
  EXPECT_NE(errorOf("a=qemu").find("needs pool=FILE"), std::string::npos);
  EXPECT_NE(errorOf("a=qemu,endpoint=x").find("'endpoint' is not a key of the qemu driver"), std::string::npos);
}

}  // namespace
}  // namespace switchyard

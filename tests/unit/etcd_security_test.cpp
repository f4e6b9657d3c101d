// The etcd client against real etcd (Debian's etcd-server) run as issue 39 item 10 asks: clients over TLS
// with certificates the development CA signed (./setup.sh dev-certs), etcd's client-certificate check, and
// etcd's own users and passwords with tokens that expire. Each test fails without the feature it names:
// a plain client cannot talk to an https member, an unauthenticated one is refused.
#include <gtest/gtest.h>

#include <thread>

#include "inventory/etcd/etcd_client.h"
#include "tests/support/daemon_process.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/temp_dir.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;

class EtcdSecurity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::EtcdCluster::available()) {
      if (testing::EtcdCluster::required()) FAIL() << "etcd is not installed; run ./setup.sh";
      GTEST_SKIP() << "needs Debian's etcd-server (./setup.sh installs it)";
    }
    certs_ = makeCertificates(dir_.path() / "certs");
  }
  // A CA, a certificate for etcd on 127.0.0.1 (etcd.pem) and a client certificate `yard-client`.
  static std::filesystem::path makeCertificates(const std::filesystem::path& dir) {
    const auto made = testing::runCommand(std::string(SWITCHYARD_SOURCE_DIR) + "/setup.sh dev-certs " + dir.string() + " yard-client",
                                          dir.parent_path());
    EXPECT_EQ(made.exitCode, 0) << made.err;
    return dir;
  }
  std::string file(const char* name) const { return (certs_ / name).string(); }
  etcd::ClientSecurity withClientCertificate() const { return {file("ca.pem"), file("yard-client.pem"), file("yard-client.key"), {}, {}}; }

  testing::TempDir dir_;
  std::filesystem::path certs_;
};

TEST_F(EtcdSecurity, MutualTlsCarriesReadsWritesAndWatches) {
  testing::EtcdCluster cluster(dir_.path() / "etcd", 1, {file("etcd.pem"), file("etcd.key"), file("ca.pem"), true, 0, withClientCertificate()});
  ASSERT_TRUE(cluster.start()) << "etcd over TLS did not start; see " << dir_.path();
  ASSERT_TRUE(cluster.endpoints().front().starts_with("https://"));

  etcd::Client client({cluster.endpoints(), 5000ms, withClientCertificate()});
  auto put = client.txn({}, {{etcd::Op::Kind::kPut, "/k", "v"}});
  ASSERT_TRUE(put) << put.error().message;
  auto read = client.range({"/k"});
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_EQ(read->kvs.size(), 1u);
  EXPECT_EQ(read->kvs[0].value, "v");

  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(client.txn({}, {{etcd::Op::Kind::kPut, "/k", "w"}}));
  });
  auto changed = client.watch("/k", {}, read->revision + 1, 10s);
  writer.join();
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_TRUE(changed->has_value()) << "the watch over TLS saw the write";
}

TEST_F(EtcdSecurity, AClientTheClusterOrTheClientDoesNotTrustIsRefusedWithTheReason) {
  testing::EtcdCluster cluster(dir_.path() / "etcd", 1, {file("etcd.pem"), file("etcd.key"), file("ca.pem"), true, 0, withClientCertificate()});
  ASSERT_TRUE(cluster.start());

  // No client certificate: etcd's --client-cert-auth refuses the connection.
  etcd::Client anonymous({cluster.endpoints(), 5000ms, {file("ca.pem"), {}, {}, {}, {}}});
  auto refused = anonymous.range({"/k"});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("certificate"), std::string::npos) << refused.error().message;

  // A member whose certificate another CA signed: the client refuses it.
  const auto otherCa = makeCertificates(dir_.path() / "other");
  etcd::Client misled({cluster.endpoints(), 5000ms, {(otherCa / "ca.pem").string(), file("yard-client.pem"), file("yard-client.key"), {}, {}}});
  auto untrusted = misled.range({"/k"});
  ASSERT_FALSE(untrusted);
  EXPECT_EQ(untrusted.error().code, Code::kFailedPrecondition);
  EXPECT_NE(untrusted.error().message.find("certificate verify failed"), std::string::npos) << untrusted.error().message;

  // Files that are not there: said at once, naming the file.
  etcd::Client missing({cluster.endpoints(), 5000ms, {file("nope.pem"), {}, {}, {}, {}}});
  auto unusable = missing.range({"/k"});
  ASSERT_FALSE(unusable);
  EXPECT_NE(unusable.error().message.find("nope.pem"), std::string::npos) << unusable.error().message;

  // Plain HTTP to a TLS member gets no answer it can read.
  std::vector<std::string> plain;
  for (const auto& e : cluster.endpoints()) plain.push_back("http://" + e.substr(std::string("https://").size()));
  EXPECT_FALSE(etcd::Client({plain, 2000ms}).range({"/k"}));
}

TEST_F(EtcdSecurity, PasswordsGetTokensAndAnExpiredTokenIsRenewed) {
  // Server-side TLS only (etcd's JSON gateway refuses a client certificate with a CN once authentication is on).
  testing::EtcdCluster cluster(dir_.path() / "etcd", 1, {file("etcd.pem"), file("etcd.key"), {}, false, 1, {file("ca.pem"), {}, {}, {}, {}}});
  ASSERT_TRUE(cluster.start());
  ASSERT_TRUE(cluster.enableAuth("yardd", "s3cret", "/switchyard/")) << "etcdctl failed; see " << dir_.path() / "etcd/etcdctl.log";

  etcd::Client yardd({cluster.endpoints(), 5000ms, {file("ca.pem"), {}, {}, "yardd", "s3cret"}});
  auto put = yardd.txn({}, {{etcd::Op::Kind::kPut, "/switchyard/k", "v"}});
  ASSERT_TRUE(put) << put.error().message;

  // The token lives 1 s unused: the next call finds it refused, gets a new one and goes through.
  std::this_thread::sleep_for(2500ms);
  auto read = yardd.range({"/switchyard/k"});
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_EQ(read->kvs.size(), 1u);
  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(yardd.txn({}, {{etcd::Op::Kind::kPut, "/switchyard/k", "w"}}));
  });
  auto changed = yardd.watch("/switchyard/", etcd::prefixEnd("/switchyard/"), read->revision + 1, 10s);
  writer.join();
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_TRUE(changed->has_value());

  // Outside the user's prefix: permission denied, said as such.
  auto outside = yardd.range({"/other/k"});
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().code, Code::kPermissionDenied) << outside.error().message;

  etcd::Client wrong({cluster.endpoints(), 5000ms, {file("ca.pem"), {}, {}, "yardd", "guess"}});
  auto refused = wrong.range({"/switchyard/k"});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kUnauthenticated);
  EXPECT_NE(refused.error().message.find("refused user 'yardd'"), std::string::npos) << refused.error().message;

  etcd::Client nobody({cluster.endpoints(), 5000ms, {file("ca.pem"), {}, {}, {}, {}}});
  auto anonymous = nobody.range({"/switchyard/k"});
  ASSERT_FALSE(anonymous);
  EXPECT_EQ(anonymous.error().code, Code::kUnauthenticated);
  EXPECT_NE(anonymous.error().message.find("give a user and password"), std::string::npos) << anonymous.error().message;
}

}  // namespace
}  // namespace switchyard

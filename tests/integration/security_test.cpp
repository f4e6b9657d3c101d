// Issue 24, security: yardd's gRPC over TLS (self-signed by default, mutual TLS with a CA), plaintext only
// on loopback, identities with roles and tenants proven by bearer tokens or client certificates, quotas,
// and the audit trail, all through the real yardd and yardctl binaries.
#include <fstream>

#include "switchyard/v1/agent.grpc.pb.h"
#include "tests/integration/daemon_fixture.h"

namespace switchyard::testing {
namespace {

class SecurityTest : public DaemonTest {
 protected:
  // Writes a token file for `name` (the token is "token-NAME") and returns yardctl's flags for it.
  std::string as(const std::string& name) {
    const auto file = dir_ / ("token-" + name);
    std::ofstream(file) << "token-" << name << "\n";
    return "--token-file " + file.string();
  }

  // Identities: alice and bob are tenants of team-a (at most 2 GPUs) and team-b, ops an operator,
  // watcher a viewer; each proves itself with the token "token-NAME" (SHA-256 in the file).
  void writeIdentities() {
    auto sha = [](const std::string& name) {
      auto r = runCommand("printf %s token-" + name + " | sha256sum | cut -d' ' -f1", "/tmp");
      return r.out.substr(0, 64);
    };
    json ids = json::array();
    for (auto [name, role, tenant] : {std::tuple{"alice", "tenant", "team-a"}, std::tuple{"bob", "tenant", "team-b"},
                                      std::tuple{"ops", "operator", ""}, std::tuple{"watcher", "viewer", ""}}) {
      json e{{"name", name}, {"role", role}, {"token_sha256", sha(name)}};
      if (*tenant) e["tenant"] = tenant;
      ids.push_back(e);
    }
    ids.push_back({{"name", "ci-a"}, {"role", "tenant"}, {"tenant", "team-a"}, {"certificate_cn", "ci-a"}});
    std::ofstream(dir_ / "identities.json") << json{{"tenants", {{"team-a", {{"max_gpus", 2}}}}}, {"identities", ids}}.dump(2);
    std::filesystem::permissions(dir_ / "identities.json", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }

  bool devCerts() {
    auto made = runCommand(std::string(SWITCHYARD_SOURCE_DIR) + "/setup.sh dev-certs " + (dir_ / "certs").string() + " ci-a", dir_.path());
    return made.exitCode == 0;
  }
};

TEST_F(SecurityTest, TlsIsTheDefaultWithACertificateMadeAtFirstStart) {
  daemon_->serveTls();
  startDaemon();
  const auto cert = dir_ / "grpc-cert.pem";
  ASSERT_TRUE(std::filesystem::exists(cert)) << daemon_->log();
  EXPECT_NE(daemon_->log().find("over TLS (certificate made now"), std::string::npos) << daemon_->log();
  yardctlConnection_ = "--ca " + cert.string();
  auto hosts = yardctl("-o json hosts");
  ASSERT_EQ(hosts.exitCode, 0) << hosts.err;
  EXPECT_EQ(json::parse(hosts.out)["hosts"].size(), 4u);
  yardctlConnection_ = "--plaintext";
  auto plain = yardctl("hosts");
  EXPECT_EQ(plain.exitCode, 4) << "a plaintext client cannot talk to a TLS yardd";
  yardctlConnection_ = "";
  auto untrusted = runCommand("HOME=" + (dir_ / "nohome").string() + " XDG_STATE_HOME= " + std::string(YARDCTL_PATH) + " --server " +
                                  daemon_->address() + " hosts",
                              dir_.path());
  EXPECT_EQ(untrusted.exitCode, 4) << "a certificate yardctl was not told to trust is refused";
  EXPECT_NE(untrusted.err.find("its TLS certificate is not one yardctl trusts"), std::string::npos) << untrusted.err;
  EXPECT_EQ(untrusted.err.find("is yardd running"), std::string::npos) << "it is running: " << untrusted.err;
  EXPECT_EQ(untrusted.err.find("ssl_transport_security"), std::string::npos) << "no raw gRPC log line: " << untrusted.err;
}

TEST_F(SecurityTest, PlaintextIsRefusedOffLoopback) {
  DaemonProcess open(YARDD_PATH, dir_.path());
  EXPECT_FALSE(open.startProgram({"--listen", "0.0.0.0:0", "--plaintext", "--state-dir", dir_.path().string()}));
  EXPECT_EQ(open.exitCode(), 1);
  EXPECT_NE(open.log().find("--plaintext is allowed on a loopback address only"), std::string::npos) << open.log();
}

TEST_F(SecurityTest, TenantsSeeAndChangeOnlyTheirOwnWithinTheirQuota) {
  writeIdentities();
  startDaemon({"--identities", (dir_ / "identities.json").string()});

  auto anonymous = yardctl("systems");
  EXPECT_EQ(anonymous.exitCode, 3);
  EXPECT_NE(anonymous.err.find("requires credentials"), std::string::npos) << anonymous.err;
  auto wrongToken = runCommand("YARD_TOKEN=nope " + std::string(YARDCTL_PATH) + " --plaintext --server " + daemon_->address() + " systems",
                               dir_.path());
  EXPECT_EQ(wrongToken.exitCode, 3);
  EXPECT_NE(wrongToken.err.find("matches no identity"), std::string::npos) << wrongToken.err;

  // alice composes for team-a; a claimed --as is ignored: the token says who she is.
  auto a1 = yardctl(as("alice") + " --as mallory compose a1 --gpus 2");
  ASSERT_EQ(a1.exitCode, 0) << a1.err;
  auto quota = yardctl(as("alice") + " compose a2 --gpus 1");
  EXPECT_EQ(quota.exitCode, 3);
  EXPECT_NE(quota.err.find("tenant 'team-a' may hold 2 GPU(s)"), std::string::npos) << quota.err;
  EXPECT_NE(quota.err.find("hint: that is your tenant's quota"), std::string::npos) << quota.err;
  ASSERT_EQ(yardctl(as("bob") + " compose b1 --gpus 1").exitCode, 0);

  // bob sees neither alice's system nor her operations, and cannot touch it.
  auto bobs = yardctlJson(as("bob") + " systems");
  ASSERT_EQ(bobs["systems"].size(), 1u);
  EXPECT_EQ(bobs["systems"][0]["name"], "b1");
  auto steal = yardctl(as("bob") + " decompose a1");
  EXPECT_EQ(steal.exitCode, 3);
  EXPECT_NE(steal.err.find("no system 'a1'"), std::string::npos) << steal.err;
  // bob sees which devices are taken, not by whom: no foreign system, host or owner on any device.
  const json aliceSystem = yardctlJson(as("alice") + " systems")["systems"][0];
  const json bobsDevices = yardctlJson(as("bob") + " devices");
  int taken = 0;
  for (const auto& d : bobsDevices["devices"]) {
    if (d.value("allocation", "") == "DEVICE_ALLOCATION_FREE" || !d.contains("allocation")) continue;
    ++taken;
    EXPECT_NE(d.value("system_id", ""), aliceSystem["id"].get<std::string>()) << d.dump();
    if (d.value("system_id", "").empty()) {
      EXPECT_EQ(d.value("host_id", ""), "") << d.dump();
      EXPECT_EQ(d.value("owner", ""), "") << d.dump();
    }
  }
  EXPECT_EQ(taken, 3) << "alice's 2 and bob's 1 are shown taken";
  const json bobsOps = yardctlJson(as("bob") + " ops");  // kept: the loop refers into it
  for (const auto& op : bobsOps["operations"]) EXPECT_EQ(op["tenant"], "team-b") << op.dump();
  auto foreignOp = yardctl(as("bob") + " ops show op-000001");
  EXPECT_EQ(foreignOp.exitCode, 3) << foreignOp.out;

  // The viewer sees everything and changes nothing; the operator changes anyone's.
  EXPECT_EQ(yardctlJson(as("watcher") + " systems")["systems"].size(), 2u);
  auto look = yardctl(as("watcher") + " decompose b1");
  EXPECT_EQ(look.exitCode, 3);
  EXPECT_NE(look.err.find("viewer role"), std::string::npos) << look.err;
  ASSERT_EQ(yardctl(as("ops") + " decompose a1").exitCode, 0);

  // The audit trail: everything for the operator; a tenant its own, and no other tenant's.
  auto trail = yardctlJson(as("ops") + " audit");
  ASSERT_EQ(trail["records"].size(), 6u) << trail.dump(2);
  const json& first = trail["records"][5];
  EXPECT_EQ(first["caller"]["identity"], "alice") << "the identity the token proved, not the claimed --as";
  EXPECT_EQ(first["result"], "accepted");
  EXPECT_EQ(first["outcome"], "succeeded");
  EXPECT_EQ(trail["records"][4]["result"], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(trail["records"][0]["caller"]["identity"], "ops");
  EXPECT_EQ(yardctlJson(as("ops") + " audit --identity watcher")["records"].size(), 1u);
  EXPECT_EQ(yardctlJson(as("ops") + " audit --since 1h")["records"].size(), 6u);
  EXPECT_EQ(yardctlJson(as("ops") + " audit --until 2000-01-01")["records"].size(), 0u);
  auto alices = yardctlJson(as("alice") + " audit");
  EXPECT_EQ(alices["records"].size(), 3u) << "her two composes and the operator's decompose of her system: " << alices.dump(2);
  auto peek = yardctl(as("alice") + " audit --tenant team-b");
  EXPECT_EQ(peek.exitCode, 3);
  auto table = yardctl(as("ops") + " audit --limit 2");
  ASSERT_EQ(table.exitCode, 0) << table.err;
  EXPECT_NE(table.out.find("WHO"), std::string::npos);
  EXPECT_NE(table.out.find("yardctl audit --before"), std::string::npos) << table.out;
  auto badTime = yardctl(as("ops") + " audit --since yesterday");
  EXPECT_EQ(badTime.exitCode, 2);

  // A host agent's registration needs the operator or admin role.
  auto registry = pb::AgentRegistry::NewStub(channel_);
  pb::RegisterAgentRequest reg;
  reg.set_host_id("host0");
  reg.set_address("127.0.0.1:1");
  pb::RegisterAgentResponse out;
  grpc::ClientContext anonymousCtx;
  EXPECT_EQ(registry->Register(&anonymousCtx, reg, &out).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext tenantCtx;
  tenantCtx.AddMetadata("authorization", "Bearer token-alice");
  EXPECT_EQ(registry->Register(&tenantCtx, reg, &out).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// Redfish uses the same identities: a tenant's token sees its own composed systems and tasks only.
TEST_F(SecurityTest, RedfishShowsATenantOnlyItsOwnSystemsAndTasks) {
  writeIdentities();
  startDaemon({"--identities", (dir_ / "identities.json").string(), "--redfish-listen", "127.0.0.1:0", "--redfish-http",
               "--redfish-port-file", (dir_ / "rfport").string()});
  ASSERT_EQ(yardctl(as("alice") + " compose a1 --gpus 1").exitCode, 0);
  const std::string base = "http://127.0.0.1:" + readFile(dir_ / "rfport").substr(0, readFile(dir_ / "rfport").find('\n'));
  auto get = [&](const std::string& who, const std::string& path) {
    return runCommand("curl -s -w '\\n%{http_code}' -H 'Authorization: Bearer token-" + who + "' " + base + path, dir_.path()).out;
  };
  EXPECT_NE(get("alice", "/redfish/v1/Systems").find("sys-000001"), std::string::npos);
  EXPECT_NE(get("ops", "/redfish/v1/Systems").find("sys-000001"), std::string::npos);
  const std::string bobs = get("bob", "/redfish/v1/Systems");
  EXPECT_EQ(bobs.find("sys-000001"), std::string::npos) << bobs;
  EXPECT_NE(bobs.find("host0"), std::string::npos) << "the physical hosts are the pool's: every role sees them";
  EXPECT_EQ(get("bob", "/redfish/v1/TaskService/Tasks/op-000001").substr(get("bob", "/redfish/v1/TaskService/Tasks/op-000001").size() - 3), "404");
  EXPECT_EQ(get("bob", "/redfish/v1/TaskService/Tasks").find("op-000001"), std::string::npos);
  const std::string alices = get("alice", "/redfish/v1/TaskService/Tasks/op-000001");
  EXPECT_EQ(alices.substr(alices.size() - 3), "200") << alices;
}

TEST_F(SecurityTest, AnIdentitiesFileOthersMayReadIsRefused) {
  writeIdentities();
  std::filesystem::permissions(dir_ / "identities.json", std::filesystem::perms::others_read, std::filesystem::perm_options::add);
  EXPECT_FALSE(daemon_->start({"--identities", (dir_ / "identities.json").string()}));
  EXPECT_TRUE(daemon_->waitExit(10s));
  EXPECT_EQ(daemon_->exitCode(), 1);
  EXPECT_NE(daemon_->log().find("others may read it (mode 0604); yardd refuses it: chmod 600"), std::string::npos) << daemon_->log();
}

// Every HTTPS listener (Redfish, metrics) speaks TLS 1.2+ with AEAD suites only: a client offering only CBC
// suites, or TLS 1.1, does not get through the handshake; one offering AES-GCM does.
TEST_F(SecurityTest, HttpsListenersRefuseCbcSuitesAndOldProtocols) {
  if (!devCerts()) GTEST_SKIP() << "the openssl command is not available (./setup.sh installs it)";
  writeIdentities();
  startDaemon({"--identities", (dir_ / "identities.json").string(), "--redfish-listen", "127.0.0.1:0", "--redfish-port-file",
               (dir_ / "rfport").string()});
  const std::string port = readFile(dir_ / "rfport").substr(0, readFile(dir_ / "rfport").find('\n'));
  auto handshake = [&](const std::string& flags) {
    return runCommand("openssl s_client -connect 127.0.0.1:" + port + " " + flags + " </dev/null", dir_.path());
  };
  auto gcm = handshake("-tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256");
  EXPECT_EQ(gcm.exitCode, 0) << gcm.out << gcm.err;
  for (const std::string cbc : {"-tls1_2 -cipher ECDHE-ECDSA-AES128-SHA", "-tls1_2 -cipher ECDHE-ECDSA-AES256-SHA384",
                                "-tls1_2 -cipher AES128-SHA"}) {
    auto refused = handshake(cbc);
    EXPECT_NE(refused.exitCode, 0) << cbc << ": " << refused.out;
  }
  auto old = handshake("-tls1_1 -cipher DEFAULT@SECLEVEL=0");
  EXPECT_NE(old.exitCode, 0) << old.out;
}

TEST_F(SecurityTest, MutualTlsNamesTheCallerByItsCertificate) {
  if (!devCerts()) GTEST_SKIP() << "the openssl command is not available (./setup.sh installs it)";
  writeIdentities();
  const auto certs = dir_ / "certs";
  daemon_->serveTls();
  startDaemon({"--identities", (dir_ / "identities.json").string(), "--tls-cert", (certs / "yardd.pem").string(), "--tls-key",
               (certs / "yardd.key").string(), "--tls-client-ca", (certs / "ca.pem").string(), "--require-client-cert"});
  EXPECT_NE(daemon_->log().find("mutual TLS"), std::string::npos) << daemon_->log();
  yardctlConnection_ = "--ca " + (certs / "ca.pem").string() + " --cert " + (certs / "ci-a.pem").string() + " --key " + (certs / "ci-a.key").string();
  auto composed = yardctl("-o json compose ci-1 --gpus 1");
  ASSERT_EQ(composed.exitCode, 0) << composed.err;
  const json op = json::parse(composed.out);
  EXPECT_EQ(op["requested_by"]["identity"], "ci-a");
  EXPECT_EQ(op["requested_by"]["role"], "tenant");
  EXPECT_EQ(op["tenant"], "team-a");
  yardctlConnection_ = "--ca " + (certs / "ca.pem").string() + " " + as("ops");
  EXPECT_EQ(yardctl("systems").exitCode, 4) << "--require-client-cert: a token alone does not get through the handshake";
}

}  // namespace
}  // namespace switchyard::testing

// redfish-emulator: the test Redfish service as a process, for the demo and for tests that run yardd
// against it. Serves a mockup folder on 127.0.0.1 until SIGTERM/SIGINT.
//   redfish-emulator --mockup ../shared/redfish-mockups/dmtf-public-cxl-multiswitch --port-file /tmp/rf.port --clear-zones
//   (add --tls-dir DIR for HTTPS; yardd then trusts DIR/cert.pem: --domain NAME=redfish,url=https://...,ca=DIR/cert.pem)
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "net/tls_certificate.h"
#include "tests/support/redfish_emulator.h"

int main(int argc, char** argv) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  switchyard::testing::RedfishEmulator::Options options;
  std::filesystem::path portFile;
  std::string passwordFile;
  bool clearZones = false;
  int latencyMs = 0;
  std::filesystem::path tlsDir;
  CLI::App app{"redfish-emulator: a Redfish service over a DMTF mockup, with stateful fabric zones (for tests and the demo)"};
  app.add_option("--mockup", options.mockup, "Mockup folder (its index.json is /redfish/v1)")->required()->check(CLI::ExistingDirectory);
  app.add_option("--port-file", portFile, "Write the port it listens on here");
  app.add_option("--user", options.user, "Account for HTTP Basic")->capture_default_str();
  app.add_option("--password-file", passwordFile, "File with the account's password (default password: switchyard)")->check(CLI::ExistingFile);
  app.add_flag("--clear-zones", clearZones, "Start with every fabric's zones removed (nothing bound)");
  app.add_option("--latency-ms", latencyMs, "Delay every request by this much")->check(CLI::NonNegativeNumber);
  app.add_option("--tls-dir", tlsDir,
                 "Serve HTTPS with DIR/cert.pem and DIR/key.pem, made (self-signed for 127.0.0.1) when absent; clients trust DIR/cert.pem");
  CLI11_PARSE(app, argc, argv);
  if (!tlsDir.empty()) {
    std::filesystem::create_directories(tlsDir);
    options.tlsCertificate = tlsDir / "cert.pem";
    options.tlsKey = tlsDir / "key.pem";
    if (auto made = switchyard::net::ensureCertificate({options.tlsCertificate, options.tlsKey}, "127.0.0.1"); !made) {
      fmt::print(stderr, "redfish-emulator: {}\n", made.error().message);
      return 1;
    }
  }
  if (!passwordFile.empty()) {
    std::ifstream in(passwordFile);
    std::getline(in, options.password);
  }
  auto emulator = switchyard::testing::RedfishEmulator::start(options);
  if (!emulator) {
    fmt::print(stderr, "redfish-emulator: {}\n", emulator.error().message);
    return 1;
  }
  if (clearZones)
    for (const auto& fabric : std::filesystem::directory_iterator(options.mockup / "Fabrics"))
      if (fabric.is_directory()) (*emulator)->clearZones("/redfish/v1/Fabrics/" + fabric.path().filename().string() + "/Zones");
  (*emulator)->setLatency(std::chrono::milliseconds(latencyMs));
  const std::string url = (*emulator)->url();
  if (!portFile.empty()) {
    std::ofstream(portFile.string() + ".tmp") << url.substr(url.rfind(':') + 1) << "\n";
    std::filesystem::rename(portFile.string() + ".tmp", portFile);
  }
  fmt::print(stderr, "redfish-emulator: serving {} at {}\n", options.mockup.string(), url);
  int received = 0;
  sigwait(&signals, &received);
  return 0;
}

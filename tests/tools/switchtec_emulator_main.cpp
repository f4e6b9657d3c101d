// switchtec-emulator: a Switchtec PAX fabric on the management Ethernet transport, as a process, for the
// demo and for tests that run yardd or the vendor's `switchtec` CLI against it. Serves until SIGTERM/SIGINT.
//   switchtec-emulator --topology tests/data/switchtec/two-pax.json --listen 127.0.0.1:0 --port-file /tmp/st.port
//   switchtec-emulator --generate 2,2,8 --listen 127.7.7.7:54545   # what the vendor CLI dials: 127.7.7.7:0
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "tests/support/switchtec_emulator.h"

int main(int argc, char** argv) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  switchyard::testing::SwitchtecEmulator::Options options;
  std::filesystem::path topologyFile, portFile;
  std::string generate;
  int latencyMs = 0;
  CLI::App app{"switchtec-emulator: Switchtec PAX chips with a stateful GFMS database on the management Ethernet transport (for tests and the demo)"};
  auto* topo = app.add_option("--topology", topologyFile, "PAX chips, their hosts, endpoints and links (JSON; docs/switchtec.md)")->check(CLI::ExistingFile);
  app.add_option("--generate", generate, "Instead of a file: CHIPS,HOSTS,GPUS per chip, chips chained by fabric links")->excludes(topo);
  app.add_option("--listen", options.listen, "IPv4 HOST:PORT (port 0: any; the vendor CLI always dials 54545)")->capture_default_str();
  app.add_option("--port-file", portFile, "Write the port it listens on here");
  app.add_option("--latency-ms", latencyMs, "Delay every MRPC reply by this much")->check(CLI::NonNegativeNumber);
  app.add_option("--bindings-file", options.bindingsFile,
                 "After every bind and unbind, write what is bound here as JSON {\"paxN-epP\": \"paxM-pQ\"} (for tests)");
  CLI11_PARSE(app, argc, argv);
  if (!generate.empty()) {
    int chips = 0, hosts = 0, gpus = 0;
    if (std::sscanf(generate.c_str(), "%d,%d,%d", &chips, &hosts, &gpus) != 3 || chips < 1 || chips > 16 || hosts < 1 || hosts > 16 || gpus < 0 ||
        gpus > 32) {
      fmt::print(stderr, "switchtec-emulator: --generate CHIPS,HOSTS,GPUS (1-16 chips, 1-16 hosts and 0-32 GPUs per chip), got '{}'\n", generate);
      return 2;
    }
    options.topology = switchyard::testing::generateSwitchtecTopology(chips, hosts, gpus);
  } else if (!topologyFile.empty()) {
    auto t = switchyard::testing::loadSwitchtecTopology(topologyFile);
    if (!t) {
      fmt::print(stderr, "switchtec-emulator: {}\n", t.error().message);
      return 2;
    }
    options.topology = std::move(*t);
  } else {
    fmt::print(stderr, "switchtec-emulator: give --topology FILE or --generate CHIPS,HOSTS,GPUS\n");
    return 2;
  }
  options.latency = std::chrono::milliseconds(latencyMs);
  auto emulator = switchyard::testing::SwitchtecEmulator::start(options);
  if (!emulator) {
    fmt::print(stderr, "switchtec-emulator: {}\n", emulator.error().message);
    return 1;
  }
  if (!portFile.empty()) {
    std::ofstream(portFile.string() + ".tmp") << (*emulator)->port() << "\n";
    std::filesystem::rename(portFile.string() + ".tmp", portFile);
  }
  fmt::print(stderr, "switchtec-emulator: {} PAX chip(s) at {}\n", options.topology.chips.size(), (*emulator)->endpoint());
  int received = 0;
  sigwait(&signals, &received);
  return 0;
}

// Host-side benchmarks (Google Benchmark): what the host agent spends discovering a host's PCI functions.
//   build/tests/switchyard_host_bench                       full run (docs/benchmarks.md)
//   build/tests/switchyard_host_bench --benchmark_min_time=0.01   the CI smoke
// The target: full discovery of a host with 64 PCIe functions from a dump in < 20 ms.
#include <benchmark/benchmark.h>

#include "inventory/pci/pci_scanner.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace switchyard;

const std::filesystem::path kDump64 = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests/data/pci/gpu-host-64fn.lspci";

void check(benchmark::State& state, const Result<std::vector<PciFunction>>& scanned) {
  if (!scanned) state.SkipWithError(scanned.error().message.c_str());
  else if (scanned->size() != 64) state.SkipWithError("expected 64 functions");
}

// libpci's dump method: parse the text, decode every function's capabilities, build the bridge chains.
void BM_DiscoverFromDump64(benchmark::State& state) {
  const PciScanner scanner({.dumpFile = kDump64});
  for (auto _ : state) {
    auto scanned = scanner.scan();
    check(state, scanned);
    benchmark::DoNotOptimize(scanned);
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_DiscoverFromDump64)->Unit(benchmark::kMillisecond);

// The live path: libpci's sysfs method reading each function's config file, plus driver and NUMA node.
void BM_DiscoverFromSysfs64(benchmark::State& state) {
  testing::TempDir dir;
  testing::writeFakeSysfs(dir.path(), kDump64, {{"0000:12:00.0", "nvidia"}});
  const PciScanner scanner({.sysfsRoot = dir.path()});
  for (auto _ : state) {
    auto scanned = scanner.scan();
    check(state, scanned);
    benchmark::DoNotOptimize(scanned);
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_DiscoverFromSysfs64)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

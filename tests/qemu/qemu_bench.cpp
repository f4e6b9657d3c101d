// Bind to usable in a real guest, and release to gone, through the QEMU driver (issue 61's benchmark):
// one VM booting Debian's kernel, N emulated NVMe drives per round. Prints a table of medians:
//   bind call   the driver's bindAll (QMP blockdev-add + device_add per device)
//   usable      from the bind call's start until the guest's kernel shows every drive's serial in sysfs
//               (pciehp's presence detect, enumeration, BAR assignment, the nvme driver's probe)
//   unbind      the driver's unbindAll (device_del, the guest's pciehp releasing each one, DEVICE_DELETED)
// The guest is polled through its console shell (a round trip of a few ms), which bounds the resolution.
//   switchyard_qemu_bench [--repetitions N] [--devices 1,4]
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fabric/qemu/qemu_fabric.h"
#include "tests/support/qemu_vm.h"

using namespace switchyard;
using namespace std::chrono_literals;
using Ms = std::chrono::duration<double, std::milli>;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::size_t drivesShown(testing::QemuVm& vm) {
  std::istringstream in(vm.shell("cat /sys/class/nvme/*/serial 2>/dev/null; true").out);
  std::size_t n = 0;
  for (std::string s; in >> s;) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Bind to usable in a real guest, and release to gone, through the QEMU driver"};
  int repetitions = 5;
  std::vector<int> counts{1, 4};
  app.add_option("--repetitions", repetitions, "Rounds per device count (medians are printed)")->check(CLI::Range(1, 1000));
  app.add_option("--devices", counts, "Device counts to measure (at most 4)")->delimiter(',')->check(CLI::Range(1, 4));
  CLI11_PARSE(app, argc, argv);
  if (auto why = testing::qemuUnavailable(); !why.empty()) {
    std::fprintf(stderr, "qemu bench: %s\n", why.c_str());
    return 77;
  }
  std::string why;
  auto vm = testing::QemuVm::start({.name = "bench", .slots = 4}, &why);
  const auto bootStart = std::chrono::steady_clock::now();
  if (!vm || !vm->ready(180s, &why)) {
    std::fprintf(stderr, "qemu bench: %s\n", why.c_str());
    return 1;
  }
  const double bootMs = Ms(std::chrono::steady_clock::now() - bootStart).count();
  qemu::QemuPool pool;
  pool.hosts.push_back({.name = "bench", .qmp = vm->qmpPath(), .slots = vm->slots()});
  for (int i = 0; i < 4; ++i)
    pool.devices.push_back({.id = "gpu" + std::to_string(i), .kind = DeviceKind::kGpu, .serial = "BENCH-" + std::to_string(i),
                            .properties = {{"driver", "nvme"}, {"serial", "BENCH-" + std::to_string(i)}}, .backingMiB = 64});
  auto fabric = QemuFabric::open({.pool = pool});
  if (!fabric) {
    std::fprintf(stderr, "qemu bench: %s\n", fabric.error().message.c_str());
    return 1;
  }
  std::printf("guest boot to shell: %.0f ms (one VM, TCG)\n\n", bootMs);
  std::printf("%8s %12s %14s %14s %6s\n", "devices", "bind call", "usable", "unbind", "runs");
  for (const int n : counts) {
    std::vector<Binding> set;
    for (int i = 0; i < n; ++i) set.push_back({"gpu" + std::to_string(i), "qemu0-bench"});
    std::vector<double> bind, usable, unbind;
    for (int r = 0; r < repetitions; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      if (auto b = (*fabric)->bindAll(set, {.timeout = 60s}); !b) {
        std::fprintf(stderr, "qemu bench: bind: %s\n", b.error().message.c_str());
        return 1;
      }
      const auto t1 = std::chrono::steady_clock::now();
      while (drivesShown(*vm) != static_cast<std::size_t>(n)) {
        if (std::chrono::steady_clock::now() - t0 > 60s) {
          std::fprintf(stderr, "qemu bench: the guest never showed %d drive(s)\n%s\n", n, vm->log().c_str());
          return 1;
        }
      }
      const auto t2 = std::chrono::steady_clock::now();
      if (auto u = (*fabric)->unbindAll(set, {.timeout = 60s}); !u) {
        std::fprintf(stderr, "qemu bench: unbind: %s\n", u.error().message.c_str());
        return 1;
      }
      const auto t3 = std::chrono::steady_clock::now();
      if (drivesShown(*vm) != 0) {
        std::fprintf(stderr, "qemu bench: drives left in the guest after the unbind returned\n");
        return 1;
      }
      bind.push_back(Ms(t1 - t0).count());
      usable.push_back(Ms(t2 - t0).count());
      unbind.push_back(Ms(t3 - t2).count());
    }
    std::printf("%8d %9.0f ms %11.0f ms %11.0f ms %6d\n", n, median(bind), median(usable), median(unbind), repetitions);
  }
  return 0;
}

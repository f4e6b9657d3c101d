#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest:
#   1. RelWithDebInfo build (GCC, -Werror): unit, driver-contract, integration tests and benchmark smoke runs;
#   2. packages: CPack's Debian packages of that build, checked by lintian, installed with apt-get, used (the
#      installed yardd as its systemd unit runs it, the installed yardctl and Python client) and purged
#      (tests/packaging/check_packages.sh; needs root or password-less sudo);
#   3. ASan+UBSan build (clang 19, with libFuzzer's coverage): unit, contract and integration tests;
#   4. TSan build (GCC): unit and contract tests and the deterministic simulation (the engine's threading; gRPC
#      itself is not instrumented);
#   5. fuzz smoke: step 3's build also makes a libFuzzer binary of every fuzz target; each runs for FUZZ_SECONDS
#      (default 10) from its committed corpus (docs/reliability.md).
# Every build keeps line tables only as debug info (SWITCHYARD_LINE_TABLES_ONLY): enough for every backtrace and
# sanitizer report, a third less compile time. Every build compiles each target's sources a batch at a time
# (CMAKE_UNITY_BUILD: the heavy headers are parsed and their templates instantiated once per batch, about half the
# compile time; SWITCHYARD_UNITY=OFF compiles file by file, as a developer's tree does).
# One clang build serves both ASan and fuzzing: 4 builds became 3.
# The soak smoke (one minute) runs in step 1 only: a sanitizer's own memory would hide the daemon's. Steps 3 and 4
# build only what their tests run.
# The Python integration tests (tests/python: Prometheus, headless Chromium, the Slurm kit, the Kubernetes
# provider, the Python client) run in steps 1 and 3; with SWITCHYARD_REQUIRE_TOOLS=1 a missing tool fails them
# instead of skipping them.
# ./test.sh --quick runs step 1 only.
# The promtool checks of the shipped alert rules run in step 1 (ctest: monitoring_alert_rules).
# Each step prints how long it took (== ... done in N s).
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
JOBS=${JOBS:-$(nproc)}
# Ninja: compiles any target's sources as soon as their headers exist (Make waits for each library a target links to
# be built first), which idled one of 2 cores for much of a Make build. It picks the generator of new build trees only.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
export SWITCHYARD_REQUIRE_TOOLS=1

STARTED=$SECONDS
step_done() { echo "== $1 done in $((SECONDS - STARTED)) s (total)"; }

run_suite() {  # build-dir, cmake args..., -- ctest args...; BUILD_TARGETS (environment): build only these
  local dir=$1; shift
  local cmake_args=() ctest_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ctest_args=("$@")
  echo "== $dir: ${cmake_args[*]}"
  cmake -S . -B "$dir" -DSWITCHYARD_LINE_TABLES_ONLY=ON -DCMAKE_UNITY_BUILD="${SWITCHYARD_UNITY:-ON}" "${cmake_args[@]}" >/dev/null
  local targets=()
  for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
  cmake --build "$dir" -j "$JOBS" "${targets[@]}"
  step_done "$dir build"
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" "${ctest_args[@]}"
  step_done "$dir tests"
}

run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr
if [ "${1:-}" != "--quick" ]; then
  tests/packaging/check_packages.sh build
  step_done "packages"
  ./setup.sh fuzz
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 TSAN_OPTIONS=halt_on_error=1
  # ASan runs no benchmark or soak: build only what its tests run (the daemons and tools the integration and
  # Python tests start, the test binaries, the corpus replays) and the libFuzzer binaries of step 5, not the
  # benchmark harnesses or the soak. SWITCHYARD_SANITIZE=fuzzer is ASan+UBSan with libFuzzer's coverage hooks
  # (which cost the tests nothing: without libFuzzer linked in, the hooks are the sanitizer runtime's no-ops).
  FUZZ_TARGETS=(redfish_request web_request text_inputs lspci_dump topology_json identities grpc_request switchtec_reply etcd_reply redfish_fabric cxl_reply)
  BUILD_TARGETS="yardd yard-agent yardctl redfish-emulator switchtec-emulator switchyard_python switchyard_unit_tests switchyard_integration_tests switchyard_sim \
                 redfish_request_replay web_request_replay text_inputs_replay topology_json_replay identities_replay grpc_request_replay lspci_dump_replay switchtec_reply_replay etcd_reply_replay redfish_fabric_replay cxl_reply_replay ${FUZZ_TARGETS[*]/%/_fuzz}" \
    run_suite build-asan -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_BUILD_TYPE=Debug -DSWITCHYARD_SANITIZE=fuzzer -DSWITCHYARD_WERROR=OFF \
    -- -LE 'bench-smoke|soak'
  # TSan runs no integration test: build only what its tests run (not yardd, the CLI, benchmarks). The
  # integration binary, not built, leaves one unlabelled placeholder test behind: excluded by its exact name.
  # -O1: the simulation's seeds run twice as fast as at -O0, for a few per cent more compile time.
  BUILD_TARGETS="switchyard_unit_tests switchyard_sim topology_json_replay redfish_request_replay web_request_replay text_inputs_replay lspci_dump_replay identities_replay switchtec_reply_replay etcd_reply_replay redfish_fabric_replay cxl_reply_replay" \
    run_suite build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DSWITCHYARD_SANITIZE=thread \
    -- -LE 'integration|bench-smoke|soak' -E '^switchyard_integration_tests_NOT_BUILT$'
  declare -A CORPUS=([redfish_request]=redfish [web_request]=web [text_inputs]=text_inputs [lspci_dump]=lspci [topology_json]=topology_json [identities]=identities
                     [grpc_request]=grpc_request [switchtec_reply]=switchtec
                     [etcd_reply]=etcd_reply [redfish_fabric]=redfish_fabric [cxl_reply]=cxl_reply)
  for target in "${FUZZ_TARGETS[@]}"; do
    scratch=$(mktemp -d)  # new inputs go here; the committed corpus is only read
    echo "== fuzz $target for ${FUZZ_SECONDS:-10} s"
    build-asan/tests/${target}_fuzz -max_total_time="${FUZZ_SECONDS:-10}" -timeout=20 -max_len=8192 -print_final_stats=1 \
      "$scratch" "tests/fuzz/corpus/${CORPUS[$target]}" 2>&1 | grep -E '^(stat::number_of_executed_units|Done|==[0-9]+==ERROR|SUMMARY)'
    rm -rf "$scratch"
  done
  step_done "fuzz smoke"
fi

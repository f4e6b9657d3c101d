#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest:
#   1. RelWithDebInfo build: unit, driver-contract, integration tests and benchmark smoke runs;
#   2. ASan+UBSan build: unit, contract and integration tests;
#   3. TSan build: unit and contract tests (the engine's threading; gRPC itself is not instrumented).
# ./test.sh --quick runs step 1 only.
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
JOBS=${JOBS:-$(nproc)}

run_suite() {  # build-dir, cmake args..., -- ctest args...
  local dir=$1; shift
  local cmake_args=() ctest_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ctest_args=("$@")
  echo "== $dir: ${cmake_args[*]}"
  cmake -S . -B "$dir" "${cmake_args[@]}" >/dev/null
  cmake --build "$dir" -j "$JOBS"
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" "${ctest_args[@]}"
}

run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${1:-}" != "--quick" ]; then
  export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 TSAN_OPTIONS=halt_on_error=1
  run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DSWITCHYARD_SANITIZE=address -- -LE bench-smoke
  run_suite build-tsan -DCMAKE_BUILD_TYPE=Debug -DSWITCHYARD_SANITIZE=thread -- -LE 'integration|bench-smoke'
fi

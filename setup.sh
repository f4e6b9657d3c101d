#!/usr/bin/env bash
# Installs the Debian 12 packages Switchyard needs to build, test and benchmark.
# Idempotent: does nothing (and needs no network) when everything is present.
#   ./setup.sh         what the build, the tests and the benchmarks need
#   ./setup.sh fuzz    also clang 19 and its libFuzzer runtime, for the fuzz build (tests/README.md)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libboost-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libpci-dev pciutils
  gnuplot-nox libglpk-dev
  python3-minimal python3-jsonschema redfishtool libssl-dev openssl wrk
)
# clang 14 (Debian's default) cannot compile libstdc++'s <expected>; 19 can.
[ "${1:-}" = "fuzz" ] && PACKAGES+=(clang-19 libclang-rt-19-dev)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

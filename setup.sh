#!/usr/bin/env bash
# Installs the Debian 12 packages Switchyard needs to build, test and benchmark.
# Idempotent: does nothing (and needs no network) when everything is present. Also fetches the QEMU test
# bed's guest kernel (a linux-image package, extracted into .deps/linux, not installed).
#   ./setup.sh         what the build, the tests and the benchmarks need
#   ./setup.sh fuzz    also clang 19 and its libFuzzer runtime, for the fuzz build (tests/README.md)
#   ./setup.sh dev-certs DIR [CLIENT...]
#                      development certificates for gRPC (mutual) TLS, made with the openssl command: a CA
#                      (DIR/ca.pem), yardd's certificate for localhost/127.0.0.1/::1 (DIR/yardd.pem, .key), and
#                      one client certificate per CLIENT with that CN (DIR/CLIENT.pem, .key), and a certificate
#                      for a development etcd (DIR/etcd.pem, .key: server and client use, as etcd's JSON
#                      gateway dials etcd itself with it under --client-cert-auth). Then:
#                        yardd --tls-cert DIR/yardd.pem --tls-key DIR/yardd.key --tls-client-ca DIR/ca.pem
#                        yardctl --ca DIR/ca.pem --cert DIR/alice.pem --key DIR/alice.key ...
set -euo pipefail

dev_certs() {
  local dir="$1"; shift
  command -v openssl > /dev/null || { echo "setup: dev-certs needs the openssl command (./setup.sh installs it)"; exit 1; }
  mkdir -p "$dir"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  if [ ! -s "$dir/ca.pem" ]; then
    openssl req -x509 "${ec[@]}" -days 825 -subj "/CN=Switchyard development CA" \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
      -keyout "$dir/ca.key" -out "$dir/ca.pem" 2> /dev/null
  fi
  issue() {  # NAME SUBJECT-ALT-NAMES EXTENDED-KEY-USAGE
    [ -s "$dir/$1.pem" ] && return 0
    openssl req "${ec[@]}" -subj "/CN=$1" -keyout "$dir/$1.key" -out "$dir/$1.csr" 2> /dev/null
    printf 'subjectAltName=%s\nextendedKeyUsage=%s\nbasicConstraints=CA:FALSE\n' "$2" "$3" > "$dir/$1.ext"
    openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 825 \
      -extfile "$dir/$1.ext" -out "$dir/$1.pem" 2> /dev/null
    rm -f "$dir/$1.csr" "$dir/$1.ext"
  }
  issue yardd "DNS:localhost,IP:127.0.0.1,IP:::1" serverAuth
  issue etcd "DNS:localhost,IP:127.0.0.1,IP:::1" serverAuth,clientAuth
  for client in "$@"; do issue "$client" "DNS:$client" clientAuth; done
  chmod 600 "$dir"/*.key
  echo "setup: development certificates in $dir: ca.pem, yardd.pem/.key, etcd.pem/.key${*:+, and client certificates for $*}"
}
if [ "${1:-}" = "dev-certs" ]; then
  [ -n "${2:-}" ] || { echo "usage: ./setup.sh dev-certs DIR [CLIENT...]"; exit 2; }
  dir="$2"; shift 2
  dev_certs "$dir" "$@"
  exit 0
fi

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libboost-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libpci-dev pciutils
  libglib2.0-dev libyaml-dev uuid-dev
  gnuplot-nox libglpk-dev
  python3-minimal python3-jsonschema redfishtool python3-sushy libssl-dev openssl wrk
  python3-grpcio python3-protobuf prometheus chromium fonts-dejavu-core etcd-server etcd-client
  libsystemd-dev lintian fakeroot help2man python3-venv python3-pip python3-setuptools python3-wheel ccache
  qemu-system-x86 busybox-static kmod
)
# clang 14 (Debian's default) cannot compile libstdc++'s <expected>; 19 can.
[ "${1:-}" = "fuzz" ] && PACKAGES+=(clang-19 libclang-rt-19-dev)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The QEMU test bed's guest kernel (docs/qemu.md): Debian's own, the package linux-image-amd64 points at,
# fetched with apt-get download and extracted into .deps/linux (never installed on this machine).
fetch_kernel() {
  local root dir
  root="$(cd "$(dirname "$0")" && pwd)"
  dir="$root/.deps/linux"
  compgen -G "$dir/boot/vmlinuz-*" > /dev/null && return 0
  local package
  package=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  if [ -z "$package" ]; then
    $SUDO apt-get update -qq
    package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
  fi
  echo "setup: fetching $package for the QEMU test bed into $dir"
  local scratch
  scratch=$(mktemp -d)
  chmod 755 "$scratch"  # apt-get download runs as _apt where it can
  (cd "$scratch" && apt-get download -qq "$package" 2> >(grep -v "unsandboxed" >&2))
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  dpkg-deb -x "$scratch"/*.deb "$dir.tmp"
  rm -rf "$scratch" "$dir" && mv "$dir.tmp" "$dir"
}

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  fetch_kernel
  exit 0
fi

echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fetch_kernel

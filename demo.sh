#!/usr/bin/env bash
# Installs what is missing, builds, starts yardd on the embedded default (simulated two-chassis fabric,
# SQLite under a fresh state directory) and runs a short tour with yardctl: pool before, compose,
# pool after, idle GPUs (one simulated busy, which idle reclaim spares), usage by team, decompose (refused for
# the system whose GPU a job holds). Leave yardd running afterwards with KEEP_RUNNING=1.
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
BUILD_DIR=${BUILD_DIR:-build}
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}  # new build trees only; an existing one keeps its generator
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target yardd yardctl

STATE_DIR=$(mktemp -d -t switchyard-demo-XXXXXX)
# sw1-gpu0 runs a simulated job once attached (90 %, pid 4200): idle reclaim (after 1 h idle here) spares it and
# takes the others, and its system cannot be decomposed under the job; the hosts are asked what their GPUs do
# every second, so the tour sees it at once.
"$BUILD_DIR/bin/yardd" --listen 127.0.0.1:0 --state-dir "$STATE_DIR" --port-file "$STATE_DIR/port" \
  --sim-gpu-busy sw1-gpu0=90 --activity-interval 1s --reclaim-idle-after 1h --reclaim-mode detach \
  >"$STATE_DIR/yardd.log" 2>&1 &
YARDD_PID=$!
cleanup() {
  if [ "${KEEP_RUNNING:-0}" != 1 ]; then kill -TERM "$YARDD_PID" 2>/dev/null || true; wait "$YARDD_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT
for _ in $(seq 1 500); do [ -s "$STATE_DIR/port" ] && break; sleep 0.02; done
[ -s "$STATE_DIR/port" ] || { echo "yardd did not start:"; cat "$STATE_DIR/yardd.log"; exit 1; }
export YARD_SERVER="127.0.0.1:$(cat "$STATE_DIR/port")"
# yardd serves gRPC over TLS with a certificate it made in its state directory at first start.
export YARD_CA="$STATE_DIR/grpc-cert.pem"
Y="$BUILD_DIR/bin/yardctl"

step() { printf '\n\033[1m$ yardctl %s\033[0m\n' "$*"; "$Y" "$@"; }
# A step yardd must refuse (the tour fails if it does not).
refused() { printf '\n\033[1m$ yardctl %s\033[0m   # refused, as it must be\n' "$*"; if "$Y" "$@"; then echo "not refused"; exit 1; fi; }
echo "yardd is serving on $YARD_SERVER (state in $STATE_DIR)"
step hosts
step devices
step plan --gpus 4 --p2p required --explain
step compose train-a --gpus 4 --p2p required --label team=vision
step compose infer-b --gpus 2 --model A100-SXM4-40GB --nic 1 --affinity nic:gpu=switch --label team=speech
step templates
step compose ckpt --template storage-2x
step compose cache --memory 128GiB --label team=vision
step systems
step systems train-a
step capacity
step topology
step devices
sleep 2  # two activity samples
step idle --all
step usage --by tenant,label:team
step decompose train-a
step decompose ckpt
step decompose cache
refused decompose infer-b
step ops
step audit
printf '\nyardd log: %s/yardd.log\n' "$STATE_DIR"
if [ "${KEEP_RUNNING:-0}" = 1 ]; then echo "yardd keeps running (pid $YARDD_PID); export YARD_SERVER=$YARD_SERVER"; fi

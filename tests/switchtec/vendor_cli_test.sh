#!/usr/bin/env bash
# The Switchtec driver and emulator, judged by Microchip's own `switchtec` CLI (built unmodified from
# ../shared/third-party/switchtec-user into the build tree). It checks that
#   1. the CLI reads the emulator's fabric (topology, GFMS database, events), so the emulator speaks the
#      real wire protocol;
#   2. what yardd composes through its Switchtec driver is what the CLI sees bound, and what the CLI binds
#      or unbinds behind yardd's back is what yardd reports as drift;
#   3. yardd restarts onto the switch's bindings with no drift and decomposes cleanly.
# Usage: vendor_cli_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) when ../shared is absent.
set -euo pipefail
build=$1 source=$2
shared=${SWITCHYARD_SHARED_DIR:-$source/../shared}
vendor=$shared/third-party/switchtec-user
if [[ ! -d $vendor ]]; then echo "skipped: no vendor CLI source at $vendor (set SWITCHYARD_SHARED_DIR)"; exit 77; fi
cli=$build/switchtec-user/switchtec
if [[ ! -x $cli ]]; then
  echo "== building the vendor CLI (once per build tree)"
  rm -rf "$build/switchtec-user" && cp -r "$vendor" "$build/switchtec-user"
  (cd "$build/switchtec-user" && ./configure >/dev/null && make -j"$(nproc)" >/dev/null 2>&1)
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [[ -n ${KEEP:-} ]] && cp -r "$work" /tmp/vendor-cli-failed; exit 1; }

# The CLI only dials port 54545: give this run its own loopback address.
ip=127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
"$build/bin/switchtec-emulator" --generate 2,2,4 --listen "$ip:54545" 2>"$work/emulator.log" &
pids+=($!)
for _ in $(seq 300); do grep -q "PAX chip" "$work/emulator.log" && break; sleep 0.1; done
grep -q "PAX chip" "$work/emulator.log" || fail "emulator did not start: $(cat "$work/emulator.log")"
dev="$ip:0"

echo "== 1. the vendor CLI reads the emulated fabric"
"$cli" fabric topo-info "$dev" >"$work/topo.txt" || fail "topo-info"
grep -q "Physical Port ID 0 (fabric host)" "$work/topo.txt" || fail "topo-info lacks the host port: $(head "$work/topo.txt")"
grep -q "L0 (L0)" "$work/topo.txt" || fail "topo-info: links not in L0"
"$cli" fabric gfms-dump "$dev" -t FABRIC | grep -q "To PAX_IDX 1: Unicast" || fail "FABRIC dump does not reach PAX 1"
"$cli" fabric gfms-dump "$dev" -t FAB_PORT -f 48 | grep -q "Attached Switch Index:	1" || fail "FAB_PORT 48 does not lead to PAX 1"
"$cli" fabric gfms-dump "$dev" --pax 1 -t PAX | grep -q "PAX ID: 1" || fail "PAX dump of PAX 1 via --pax"
"$cli" fabric gfms-dump "$dev" >"$work/paxall.txt" || fail "PAX_ALL dump"
[[ $(grep -c "EP attached" "$work/paxall.txt") == 4 ]] || fail "PAX_ALL dump: expected 4 endpoints"
grep -q "VID-DID:    	0x10de-0x2330" "$work/paxall.txt" || fail "PAX_ALL dump: no H100 function"

echo "== 1b. a Gen5 PAX (another topology-info layout) reads too"
ip5=127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
echo '{"pax": [{"id": 0, "device_id": "0x5284", "hosts": [{"port": 0}], "endpoints": [{"port": 16}]}]}' >"$work/gen5.json"
"$build/bin/switchtec-emulator" --topology "$work/gen5.json" --listen "$ip5:54545" 2>"$work/emulator5.log" &
pids+=($!)
for _ in $(seq 300); do grep -q "PAX chip" "$work/emulator5.log" && break; sleep 0.1; done
"$cli" info "$ip5:0" | grep -q "Generation:  GEN5" || fail "the CLI does not see a Gen5 PAX"
"$cli" fabric topo-info "$ip5:0" | grep -q "Neg Rate:			32 GT/s" || fail "Gen5 topo-info"

echo "== 2. yardd composes through the Switchtec driver; the CLI sees what it bound"
"$build/bin/yardd" --driver switchtec --switchtec "$ip" --switchtec-host pax0-p0=node-a --listen 127.0.0.1:0 \
  --port-file "$work/port" --state-dir "$work/state" --host-policy-default trust-fabric --plaintext --reconcile-interval 1 --log-level info 2>"$work/yardd.log" &
pids+=($!)
yardd_pid=$!
for _ in $(seq 600); do [[ -s $work/port ]] && break; sleep 0.1; done  # up to a minute: sanitizer builds start slowly
[[ -s $work/port ]] || fail "yardd did not start: $(tail -5 "$work/yardd.log")"
y() { "$build/bin/yardctl" --server "127.0.0.1:$(cat "$work/port")" --plaintext "$@"; }
y devices -o json >"$work/devices.json" || fail "yardctl devices"
[[ $(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['devices']))" "$work/devices.json") == 8 ]] || fail "yardd does not see 8 GPUs: $(cat "$work/devices.json")"
y compose train --host node-a --gpus 2 >/dev/null 2>&1 || fail "compose: $(tail -5 "$work/yardd.log")"
"$cli" fabric gfms-dump "$dev" -t HVD -d 0 >"$work/hvd.txt"
[[ $(grep -c "PDFID 0x" "$work/hvd.txt") == 2 ]] || fail "the CLI does not see 2 functions bound to host node-a (pax0 port 0): $(cat "$work/hvd.txt")"
# (its exit status is the number of events; yardd drains the queue, so only the reply's form is checked)
{ "$cli" fabric gfms-events "$dev" || true; } | grep -q "GFMS Events (Remaining: " || fail "gfms-events"

echo "== 3. a bind behind yardd's back is drift"
"$cli" fabric gfms-bind "$dev" -s 0 -p 1 -l 0 -f 0x200 || fail "vendor bind"
for _ in $(seq 20); do  # the reconcile loop runs every second
  timeout 3 "$build/bin/yardctl" --server "127.0.0.1:$(cat "$work/port")" --plaintext watch --after 0 --type drift -o json >"$work/drift.json" 2>&1 || true
  grep -q "pax1-ep16" "$work/drift.json" && break
done
grep -q "pax1-ep16" "$work/drift.json" || fail "yardd did not report the CLI's bind of pax1-ep16 as drift: $(tail -3 "$work/drift.json")"
"$cli" fabric gfms-unbind "$dev" -s 0 -p 1 -l 0 || fail "vendor unbind"

echo "== 4. restart onto the switch's bindings, then decompose"
kill -TERM "$yardd_pid"; wait "$yardd_pid" 2>/dev/null || true
rm -f "$work/port"
"$build/bin/yardd" --driver switchtec --switchtec "$ip" --switchtec-host pax0-p0=node-a --listen 127.0.0.1:0 \
  --port-file "$work/port" --state-dir "$work/state" --host-policy-default trust-fabric --plaintext --reconcile-interval 1 --log-level info 2>"$work/yardd2.log" &
pids+=($!)
for _ in $(seq 600); do [[ -s $work/port ]] && break; sleep 0.1; done
[[ -s $work/port ]] || fail "yardd did not restart: $(tail -5 "$work/yardd2.log")"
y systems -o json | grep -q '"train"' || fail "the system did not survive the restart"
grep -q "0 drift(s) found" "$work/yardd2.log" || fail "the restart found drift: $(grep -i drift "$work/yardd2.log" | head -3)"
y decompose train >/dev/null 2>&1 || fail "decompose: $(tail -5 "$work/yardd2.log")"
"$cli" fabric gfms-dump "$dev" -t HVD -d 0 | grep -q "PDFID 0x" && fail "the CLI still sees functions bound after decompose"
echo "PASS: the vendor CLI and yardd agree on the emulated PAX fabric"

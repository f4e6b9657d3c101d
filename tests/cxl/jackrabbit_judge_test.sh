#!/usr/bin/env bash
# yardd's CXL FM-API driver on a switch emulator nobody here wrote (Jackrabbit Labs' cse), judged by their
# own fabric manager CLI (jack), both built unmodified from ../shared/third-party/jackrabbit-cxl into the
# build tree. It checks that
#   1. what yardd composes (two GPUs, then one logical device of the pooled MLD attached; a GPU with 2 GiB of pooled
#      memory on the other host) is what jack sees bound;
#   2. a bind made with jack behind yardd's back is reported as drift on that device;
#   3. a restarted yardd finds its system on the switch with 0 drift;
#   4. after decompose, jack sees nothing bound.
# Usage: jackrabbit_judge_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (skipped) when cse was not built.
set -euo pipefail
build=$(cd "$1" && pwd) source=$(cd "$2" && pwd)
bin=$build/jackrabbit-cxl/bin
if [[ ! -x $bin/cse || ! -x $bin/jack ]]; then echo "skipped: no cse/jack under $bin (built only where ../shared/third-party/jackrabbit-cxl exists)"; exit 77; fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [[ -n ${KEEP:-} ]] && cp -r "$work" /tmp/jackrabbit-judge-failed; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/cse/cxl-mmap" && cp "$source/tests/data/cxl/cse-two-hosts.yaml" "$work/cse/config.yaml"
# Never -q (as root it writes /sys/bus/pci/slots); always -T 127.0.0.1.
(cd "$work/cse" && exec stdbuf -oL "$bin/cse" -T 127.0.0.1 -P "$port" -l -c config.yaml >cse.log 2>&1) &
cse_pid=$!
pids+=($cse_pid)
hexport=$(printf '%04X' "$port")
# Listening, and by our cse: tests run side by side may pick the same free port, and the one that loses exits.
ours() {
  local inode
  inode=$(awk -v want="0100007F:$hexport" '$2 == want && $4 == "0A" { print $10 }' /proc/net/tcp)
  [[ -n $inode ]] && ls -l "/proc/$cse_pid/fd" 2>/dev/null | grep -q "socket:\[$inode\]"
}
for _ in $(seq 300); do ours && break; sleep 0.05; done
ours || fail "cse did not listen on port $port: $(cat "$work/cse/cse.log")"
# jack has no timeout of its own; it exits 0 on FM-API errors. It crashes now and then (SIGSEGV) when it
# connects while cse is still tearing down the previous FM's connection: a crashed judge is asked again.
jack() {
  local out status attempt
  for attempt in 1 2 3; do
    status=0
    out=$(timeout 10 "$bin/jack" "$@" -T 127.0.0.1 -P "$port") || status=$?
    if (( status < 128 || status == 124 )); then printf '%s\n' "$out"; return "$status"; fi
    sleep 0.1
  done
  printf '%s\n' "$out"
  return "$status"
}
bound() { jack show vcs -c "$1" | grep "Bound" || true; }

start_yardd() {
  rm -f "$work/port"
  "$build/bin/yardd" --driver cxl --cxl "127.0.0.1:$port" --cxl-dialect jackrabbit --cxl-host vcs0=node-a --cxl-host vcs1=node-b \
    --listen 127.0.0.1:0 --port-file "$work/port" --state-dir "$work/state" --host-policy-default trust-fabric --plaintext \
    --reconcile-interval 1 --log-level info 2>"$work/$1" &
  pids+=($!)
  yardd_pid=$!
  for _ in $(seq 600); do [[ -s $work/port ]] && break; sleep 0.1; done  # up to a minute: sanitizer builds start slowly
  [[ -s $work/port ]] || fail "yardd did not start: $(tail -5 "$work/$1")"
}
y() { "$build/bin/yardctl" --server "127.0.0.1:$(cat "$work/port")" --plaintext "$@"; }

echo "== 1. yardd composes through the CXL driver; jack sees what it bound"
start_yardd yardd.log
y devices -o json >"$work/devices.json" || fail "yardctl devices"
python3 - "$work/devices.json" <<'EOF' || fail "yardd's inventory: $(cat "$work/devices.json")"
import json, sys
devices = json.load(open(sys.argv[1]))["devices"]
kinds = sorted(d["kind"] for d in devices)
assert kinds == ["cxl-memory"] * 4 + ["gpu"] * 4, kinds
EOF
y compose train --host node-a --gpus 2 >"$work/compose.txt" 2>&1 || fail "compose: $(cat "$work/compose.txt"; tail -5 "$work/yardd.log")"
y attach train -d cxl0-ep6-ld1 >"$work/attach.txt" 2>&1 || fail "attach of an LD: $(cat "$work/attach.txt"; tail -5 "$work/yardd.log")"
bound 0 >"$work/vcs0.txt"
[[ $(grep -c "Bound Physical Port" "$work/vcs0.txt") == 2 ]] || fail "jack does not see 2 GPUs bound to VCS 0 (node-a): $(cat "$work/vcs0.txt")"
grep -Eq "^ +[0-9]+: +6 +1 Bound LD" "$work/vcs0.txt" || fail "jack does not see LD 1 of the MLD bound to VCS 0: $(cat "$work/vcs0.txt")"
[[ -z $(bound 1) ]] || fail "jack sees something bound to VCS 1 (node-b): $(bound 1)"

echo "== 1b. memory by size: 1 GPU and 2 GiB of pooled memory for node-b are a GPU and two 1 GiB LDs on VCS 1"
y compose infer --host node-b --gpus 1 --memory 2GiB >"$work/compose-mem.txt" 2>&1 || fail "compose with memory: $(cat "$work/compose-mem.txt"; tail -5 "$work/yardd.log")"
bound 1 >"$work/vcs1.txt"
[[ $(grep -c "Bound Physical Port" "$work/vcs1.txt") == 1 ]] || fail "jack does not see 1 GPU bound to VCS 1: $(cat "$work/vcs1.txt")"
[[ $(grep -c "Bound LD" "$work/vcs1.txt") == 2 ]] || fail "jack does not see 2 LDs bound to VCS 1: $(cat "$work/vcs1.txt")"
y decompose infer >/dev/null 2>&1 || fail "decompose infer: $(tail -5 "$work/yardd.log")"
[[ -z $(bound 1) ]] || fail "jack still sees bindings on VCS 1 after decompose: $(bound 1)"

echo "== 2. a bind with jack behind yardd's back is drift"
y devices -o json >"$work/devices2.json" || fail "yardctl devices"
free=$(python3 - "$work/devices2.json" <<'EOF'
import json, sys
devices = json.load(open(sys.argv[1]))["devices"]
print(sorted(d["id"] for d in devices if d["kind"] == "gpu" and d["allocation"] == "DEVICE_ALLOCATION_FREE")[-1])
EOF
)
freeport=${free#cxl0-ep}
out=$(jack port bind -p "$freeport" -c 1 -b 5)
[[ $out != *Error* ]] || fail "jack bind: $out"
for _ in $(seq 20); do  # the reconcile loop runs every second
  timeout 3 "$build/bin/yardctl" --server "127.0.0.1:$(cat "$work/port")" --plaintext watch --after 0 --type drift -o json >"$work/drift.json" 2>&1 || true
  grep -q "$free" "$work/drift.json" && break
done
grep -q "$free" "$work/drift.json" || fail "yardd did not report jack's bind of $free as drift: $(tail -3 "$work/drift.json")"
out=$(jack port unbind -c 1 -b 5)
[[ $out != *Error* ]] || fail "jack unbind: $out"

echo "== 3. restart onto the switch's bindings"
kill -TERM "$yardd_pid"; wait "$yardd_pid" 2>/dev/null || true
start_yardd yardd2.log
y systems -o json | grep -q '"train"' || fail "the system did not survive the restart"
grep -q "0 drift(s) found" "$work/yardd2.log" || fail "the restart found drift: $(grep -i drift "$work/yardd2.log" | head -3)"

echo "== 4. decompose: jack sees nothing bound"
y decompose train >/dev/null 2>&1 || fail "decompose: $(tail -5 "$work/yardd2.log")"
[[ -z $(bound 0) ]] || fail "jack still sees bindings on VCS 0 after decompose: $(bound 0)"
echo "PASS: jack and yardd agree on the CXL switch cse emulates"

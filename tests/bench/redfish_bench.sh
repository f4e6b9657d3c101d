#!/usr/bin/env bash
# Redfish GET latency and throughput (issue 22 target: p99 < 5 ms at 1,000 GPUs), measured by wrk over
# HTTPS with keep-alive on loopback against the real yardd (simulated fabric, generated pool).
#   tests/bench/redfish_bench.sh [BUILD_DIR] [GPUS] [SECONDS] [CONNECTIONS]
# Prints one row per resource: requests/s, p50, p99 (from wrk --latency).
set -euo pipefail
BUILD="${1:-build}"
GPUS="${2:-1000}"
SECONDS_EACH="${3:-10}"
CONNECTIONS="${4:-16}"
command -v wrk > /dev/null || { echo "wrk is not installed (./setup.sh installs it)"; exit 77; }
STATE="$(mktemp -d)"
trap 'kill "$PID" 2> /dev/null || true; wait "$PID" 2> /dev/null || true; rm -rf "$STATE"' EXIT
# One administrator, its password hashed as yardd --hash-password does (the default 600,000 iterations).
printf '{"identities": [{"name": "bench", "role": "admin", "password": "%s"}]}' \
  "$(echo bench-pw | "$BUILD/bin/yardd" --hash-password)" > "$STATE/identities.json"
chmod 600 "$STATE/identities.json"
"$BUILD/bin/yardd" --listen 127.0.0.1:0 --state-dir "$STATE" --generate-gpus "$GPUS" --log-level warn \
  --redfish-listen 127.0.0.1:0 --identities "$STATE/identities.json" --redfish-port-file "$STATE/rfport" > "$STATE/yardd.log" 2>&1 &
PID=$!
for _ in $(seq 1 500); do [ -s "$STATE/rfport" ] && break; sleep 0.02; done
PORT="$(cat "$STATE/rfport")"
AUTH="Authorization: Basic $(printf 'bench:bench-pw' | base64)"
URL="https://127.0.0.1:$PORT"
# Warm up: the first Basic auth pays the password's PBKDF2 once; yardd remembers a verified password.
curl -s -o /dev/null --cacert "$STATE/redfish-cert.pem" -H "$AUTH" "$URL/redfish/v1/Systems"
# One GPU's block, and the Systems collection (hosts + composed systems).
BLOCK="$(curl -s --cacert "$STATE/redfish-cert.pem" -H "$AUTH" "$URL/redfish/v1/CompositionService/ResourceBlocks" |
  python3 -c 'import json,sys; m=[x["@odata.id"] for x in json.load(sys.stdin)["Members"] if "gpu" in x["@odata.id"]]; print(m[len(m)//2])')"
printf '%-48s %10s %10s %10s\n' "resource ($GPUS GPUs, $CONNECTIONS connections, ${SECONDS_EACH}s)" "req/s" "p50" "p99"
for path in "$BLOCK" /redfish/v1/Systems; do
  out="$(wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_EACH}s" --latency -H "$AUTH" "$URL$path")"
  rps="$(awk '/Requests\/sec/ {print $2}' <<< "$out")"
  p50="$(awk '$1 == "50%" {print $2}' <<< "$out")"
  p99="$(awk '$1 == "99%" {print $2}' <<< "$out")"
  errors="$(awk '/Non-2xx|Socket errors/ {print}' <<< "$out")"
  printf '%-48s %10s %10s %10s %s\n' "$path" "$rps" "$p50" "$p99" "$errors"
done

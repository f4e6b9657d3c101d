#!/bin/bash
# Bundles build/bin/yard-agent with the Debian 12 loader and libraries it links, into build/device-probe/, so
# that it runs on the GPU machine whatever that machine's own libraries are; agent_activity_probe.sh goes
# with it. Then, with the device tool: run `bash build/device-probe/probe.sh` carrying build/device-probe.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/device-probe
rm -rf "$out" && mkdir -p "$out/lib"
strip -o "$out/yard-agent" build/bin/yard-agent
for lib in $(ldd build/bin/yard-agent | awk '/=>/ {print $3}'); do cp -L "$lib" "$out/lib/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$out/lib/"
strip --strip-unneeded "$out"/lib/* 2>/dev/null || true
cp tests/device/agent_activity_probe.sh "$out/probe.sh"
du -sh "$out"

#!/bin/bash
# Bundles build/bin/yard-agent and lspci (Debian's pciutils, with pci.ids) with the Debian 12 loader and the
# libraries they link, into build/device-probe/, so that they run on the GPU machine whatever that machine's own
# libraries are; agent_activity_probe.sh (probe.sh) and record_machine.sh go with them. Then, with the device
# tool: run `bash build/device-probe/record_machine.sh` carrying build/device-probe.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/device-probe
rm -rf "$out" && mkdir -p "$out/lib"
strip -o "$out/yard-agent" build/bin/yard-agent
cp -L "$(command -v lspci)" "$out/lspci"
cp -L /usr/share/misc/pci.ids "$out/pci.ids"
for lib in $(ldd build/bin/yard-agent "$out/lspci" | awk '/=>/ {print $3}' | sort -u); do cp -L "$lib" "$out/lib/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$out/lib/"
strip --strip-unneeded "$out"/lib/* 2>/dev/null || true
cp tests/device/agent_activity_probe.sh "$out/probe.sh"
cp tests/device/record_machine.sh tests/device/record_mig_activity.sh "$out/"
du -sh "$out"

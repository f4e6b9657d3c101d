#!/bin/bash
# Records, read-only, what the host side of Switchyard reads on a real GPU machine, into $OUT/record.tar.gz:
#   pci/      lspci -xxxx (the fixture format of tests/data/pci), -tv, -vv -nn, with the lspci carried in the bundle
#             (the device machine has none) and its libraries;
#   sysfs/    each NVIDIA, NVMe and network function's sysfs attributes (class, ids, link, NUMA, reset method,
#             driver) and the path from the root complex, the hot-plug slots, the block and net devices
#             (what HostOps::kernelHoldsOf reads: mounts, swaps, operstate, addresses);
#   smi/      nvidia-smi: -L, the table, -q, the CSV queries of agent/gpu_activity.cpp idle and busy, topo -m,
#             MIG mode and (when MIG is on) the instances, by tests/device/record_mig_activity.sh;
#   agent/    our yard-agent: --version, --print-inventory --json, --print-activity (--json) and --print-holds (what
#             would stop each device's release) idle and busy.
# It changes nothing: no MIG mode, no reset, no remove/rescan, no driver bind. Bundle first with
# tests/device/make_agent_bundle.sh (build/device-probe/), then through the device tool:
#   bash build/device-probe/record_machine.sh        carrying build/device-probe
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/record-machine}
work=$(mktemp -d)
mkdir -p "$work"/{pci,sysfs,smi,agent}
lib="$here/lib"
bundled() { "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$@"; }
agent() { bundled "$here/yard-agent" "$@"; }
lspci_() { bundled "$here/lspci" -i "$here/pci.ids" "$@"; }

# --- what the machine is
{ uname -a; cat /etc/os-release 2>/dev/null | head -3; nproc; grep MemTotal /proc/meminfo; date -u; } > "$work/machine.txt" 2>&1

# --- PCI
lspci_ -xxxx > "$work/pci/machine.lspci" 2> "$work/pci/lspci.err"
lspci_ -tv > "$work/pci/tree.txt" 2>&1
lspci_ -vv -nn > "$work/pci/verbose.txt" 2>&1
lspci_ -n > "$work/pci/ids.txt" 2>&1

# --- sysfs, per function of interest
attrs="class vendor device subsystem_vendor subsystem_device revision current_link_speed current_link_width max_link_speed max_link_width numa_node local_cpulist reset_method d3cold_allowed enable power/runtime_status sriov_totalvfs"
for dev in /sys/bus/pci/devices/*; do
  class=$(cat "$dev/class" 2>/dev/null)
  vendor=$(cat "$dev/vendor" 2>/dev/null)
  case "$vendor:$class" in 0x10de:*|*:0x0108*|*:0x0200*|*:0x0207*) ;; *) continue ;; esac
  bdf=$(basename "$dev")
  f="$work/sysfs/$bdf.txt"
  { echo "path: $(readlink -f "$dev")"
    echo "driver: $(basename "$(readlink -f "$dev/driver" 2>/dev/null)" 2>/dev/null)"
    echo "iommu_group: $(basename "$(readlink -f "$dev/iommu_group" 2>/dev/null)" 2>/dev/null)"
    for a in $attrs; do [ -r "$dev/$a" ] && echo "$a: $(cat "$dev/$a" 2>&1 | tr '\n' ' ')"; done
    echo "entries: $(ls "$dev" | tr '\n' ' ')"
    [ -d "$dev/net" ] && echo "net: $(ls "$dev/net" | tr '\n' ' ')"
    [ -d "$dev/nvme" ] && echo "nvme: $(ls "$dev/nvme" | tr '\n' ' ')"
  } > "$f" 2>&1
done
{ echo "slots:"; for s in /sys/bus/pci/slots/*; do [ -e "$s" ] && echo "$(basename "$s") $(cat "$s/address" 2>/dev/null) power=$(cat "$s/power" 2>/dev/null)"; done
  echo "rescan: $(ls -l /sys/bus/pci/rescan 2>&1)"
  echo "sysfs mount: $(grep ' /sys ' /proc/mounts)"; } > "$work/sysfs/slots.txt" 2>&1
{ for n in /sys/class/net/*; do echo "$(basename "$n") operstate=$(cat "$n/operstate" 2>/dev/null) device=$(readlink -f "$n/device" 2>/dev/null)"; done
  echo; ip -br addr 2>&1 || cat /proc/net/if_inet6; } > "$work/sysfs/net.txt" 2>&1
{ for b in /sys/class/block/*; do echo "$(basename "$b") device=$(readlink -f "$b/device" 2>/dev/null)"; done
  echo; cat /proc/mounts; echo; cat /proc/swaps; } > "$work/sysfs/block.txt" 2>&1

# --- nvidia-smi
q_gpu='--query-gpu=pci.bus_id,utilization.gpu,memory.used --format=csv,noheader,nounits'
q_apps='--query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv,noheader,nounits'
nvidia-smi -L > "$work/smi/list.txt" 2>&1
nvidia-smi > "$work/smi/nvidia-smi.txt" 2>&1
nvidia-smi -q > "$work/smi/query-all.txt" 2>&1
nvidia-smi $q_gpu > "$work/smi/query-gpu-idle.txt" 2>&1
nvidia-smi $q_apps > "$work/smi/query-apps-idle.txt" 2>&1
nvidia-smi topo -m > "$work/smi/topo.txt" 2>&1
nvidia-smi --query-gpu=index,pci.bus_id,mig.mode.current,mig.mode.pending --format=csv > "$work/smi/mig-mode.txt" 2>&1
nvidia-smi mig -lgip > "$work/smi/mig-lgip.txt" 2>&1
OUT="$work/smi/mig" bash "$here/record_mig_activity.sh" > /dev/null 2>&1

# --- our agent, idle then busy
agent --version > "$work/agent/version.txt" 2>&1
agent --print-inventory --json > "$work/agent/inventory.json" 2> "$work/agent/inventory.err"
agent --print-activity > "$work/agent/activity-idle.txt" 2>&1
agent --print-activity --json > "$work/agent/activity-idle.json" 2>&1
agent --print-holds > "$work/agent/holds-idle.txt" 2>&1
agent --print-holds --json > "$work/agent/holds-idle.json" 2>&1
python3 -c 'import torch; print(torch.__version__)' > "$work/agent/torch.txt" 2>&1
if python3 -c 'import torch' 2>/dev/null; then
  python3 -c 'import torch,time
x=torch.randn(8192,8192,device="cuda")
t=time.time()
while time.time()-t<20: x=x@x; x=x/x.norm()
torch.cuda.synchronize()' >> "$work/agent/torch.txt" 2>&1 &
  busy=$!
  sleep 10
  agent --print-activity > "$work/agent/activity-busy.txt" 2>&1
  agent --print-activity --json > "$work/agent/activity-busy.json" 2>&1
  agent --print-holds > "$work/agent/holds-busy.txt" 2>&1
  nvidia-smi $q_gpu > "$work/smi/query-gpu-busy.txt" 2>&1
  nvidia-smi $q_apps > "$work/smi/query-apps-busy.txt" 2>&1
  nvidia-smi > "$work/smi/nvidia-smi-busy.txt" 2>&1
  wait $busy
fi

tar -C "$work" -czf "$out/record.tar.gz" .
cat "$work/machine.txt" "$work/smi/list.txt" "$work/smi/mig-mode.txt" "$work/agent/activity-idle.txt" "$work/agent/activity-busy.txt" \
  "$work/agent/holds-idle.txt" "$work/agent/holds-busy.txt" 2>/dev/null
head -c 600 "$work/agent/inventory.json"; echo; cat "$work/agent/inventory.err"
wc -l "$work/pci/machine.lspci"; head -3 "$work/pci/lspci.err"; ls "$work/sysfs"

#!/bin/bash
# Records what yard-agent reads of a GPU in MIG mode (idle reclaim of MIG instances), into $OUT: the plain
# table (its Processes rows name each process's GPU instance), `nvidia-smi mig -lgi`, and the two CSV queries.
# It changes nothing on the machine (the device tool forbids changing MIG settings): on a GPU not already in
# MIG mode it records only that. With a CUDA Python, it runs a short load in the first MIG device and records
# the same outputs while it runs. Replace tests/data/nvidia-smi/constructed-mig/ with what this records.
set -u
out=${OUT:-/tmp/mig-activity}
mkdir -p "$out"
q_gpu='--query-gpu=pci.bus_id,utilization.gpu,memory.used --format=csv,noheader,nounits'
q_apps='--query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv,noheader,nounits'
nvidia-smi --query-gpu=index,pci.bus_id,mig.mode.current --format=csv,noheader > "$out/mig-mode.txt" 2>&1
nvidia-smi -L > "$out/list.txt" 2>&1
if ! grep -q Enabled "$out/mig-mode.txt"; then
  echo "no GPU in MIG mode: nothing more recorded (MIG settings are left as they are)" | tee "$out/README.txt"
  exit 0
fi
record() {  # SUFFIX
  nvidia-smi > "$out/nvidia-smi$1.txt" 2>&1
  nvidia-smi $q_gpu > "$out/query-gpu$1.txt" 2>&1
  nvidia-smi $q_apps > "$out/query-apps$1.txt" 2>&1
  while IFS=, read -r index bus mode; do
    case "$mode" in *Enabled*) nvidia-smi mig -i "$(echo $bus)" -lgi > "$out/lgi-$index$1.txt" 2>&1 ;; esac
  done < "$out/mig-mode.txt"
}
record -idle
mig=$(sed -n 's/.*(UUID: \(MIG-[^)]*\)).*/\1/p' "$out/list.txt" | head -1)
if [ -n "$mig" ] && python3 -c 'import torch' 2>/dev/null; then
  CUDA_VISIBLE_DEVICES=$mig timeout 30 python3 -c 'import torch,time
x=torch.randn(4096,4096,device="cuda")
t=time.time()
while time.time()-t<25: x=x@x; x=x/x.norm()
torch.cuda.synchronize()' & busy=$!
  sleep 10
  record -busy
  wait $busy
fi

#!/bin/bash
# Runs yard-agent's idle-reclaim probe on the GPU machine with its own libraries (Debian 12's loader and libc).
cd "$(dirname "$0")"
run() { ./lib/ld-linux-x86-64.so.2 --library-path ./lib ./yard-agent "$@"; }
run --version > $OUT/agent-version.txt 2>&1
run --print-inventory --json > $OUT/inventory.json 2> $OUT/inventory.err
run --print-activity > $OUT/activity-idle.txt 2>&1
run --print-activity --json > $OUT/activity-idle.json 2>&1
python3 -c 'import torch,time
x=torch.randn(8192,8192,device="cuda")
t=time.time()
while time.time()-t<20: x=x@x; x=x/x.norm()
torch.cuda.synchronize()' > $OUT/torch.txt 2>&1 &
sleep 10
run --print-activity > $OUT/activity-busy.txt 2>&1
run --print-activity --json > $OUT/activity-busy.json 2>&1
wait
(command -v lspci && lspci -xxxx) > $OUT/machine.lspci 2>&1
nvidia-smi topo -m > $OUT/topo.txt 2>&1
cat $OUT/activity-idle.txt $OUT/activity-busy.txt $OUT/agent-version.txt; head -c 1500 $OUT/inventory.json; tail -3 $OUT/inventory.err

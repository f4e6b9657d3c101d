#!/bin/bash
# Records what nvidia-smi prints for the queries yard-agent uses to report GPU activity (idle reclaim), idle
# and with a CUDA process running, into $OUT (run through the device tool on a GPU machine). The outputs are
# kept as fixtures under tests/fixtures/nvidia-smi/ and replayed by tests/support/fake_nvidia_smi.py.
set -u
out=${OUT:-/tmp/gpu-activity}
mkdir -p "$out"
q_gpu='--query-gpu=pci.bus_id,utilization.gpu,memory.used --format=csv,noheader,nounits'
q_apps='--query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv,noheader,nounits'
nvidia-smi -L > "$out/list.txt" 2>&1
nvidia-smi --version > "$out/version.txt" 2>&1
nvidia-smi $q_gpu > "$out/query-gpu-idle.txt" 2>&1; echo "rc=$?" >> "$out/rc.txt"
nvidia-smi $q_apps > "$out/query-apps-idle.txt" 2>&1; echo "rc=$?" >> "$out/rc.txt"
nvidia-smi --query-gpu=pci.bus_id,uuid --format=csv,noheader > "$out/query-uuid.txt" 2>&1
which nvcc python3 > "$out/tools.txt" 2>&1; ls /usr/local/cuda*/bin/nvcc >> "$out/tools.txt" 2>&1
python3 -c 'import torch; print(torch.__version__)' >> "$out/tools.txt" 2>&1
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
busy=""
if [ -n "$NVCC" ]; then
  cat > /tmp/spin.cu <<'CU'
#include <cstdio>
#include <unistd.h>
__global__ void spin(float* x, long n) { float v = x[threadIdx.x]; for (long i = 0; i < n; ++i) v = v * 1.0000001f + 0.5f; x[threadIdx.x] = v; }
int main() { float* x; cudaMalloc(&x, 1 << 30); for (int k = 0; k < 400; ++k) { spin<<<1024, 256>>>(x, 200000); cudaDeviceSynchronize(); } printf("done\n"); return 0; }
CU
  "$NVCC" -o /tmp/spin /tmp/spin.cu > "$out/nvcc.txt" 2>&1 && { /tmp/spin > /dev/null 2>&1 & busy=$!; }
elif python3 -c 'import torch' 2>/dev/null; then
  python3 -c 'import torch,time
x=torch.randn(8192,8192,device="cuda")
t=time.time()
while time.time()-t<40: x=x@x; x=x/x.norm()
torch.cuda.synchronize()' & busy=$!
fi
echo "busy_pid=$busy" >> "$out/rc.txt"
if [ -n "$busy" ]; then
  sleep 8
  for i in 1 2 3; do nvidia-smi $q_gpu >> "$out/query-gpu-busy.txt" 2>&1; sleep 1; done
  nvidia-smi $q_apps > "$out/query-apps-busy.txt" 2>&1
  nvidia-smi > "$out/nvidia-smi-busy.txt" 2>&1
  kill $busy 2>/dev/null; wait $busy 2>/dev/null
fi
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
ls -la "$out"

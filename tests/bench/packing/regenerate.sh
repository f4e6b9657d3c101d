#!/usr/bin/env bash
# Regenerates every packing benchmark figure in docs/benchmarks/packing/ (CSVs, summary tables, PNG plots).
#   tests/bench/packing/regenerate.sh [TRACES_DIR]
# Needs a built tree (./test.sh --quick or cmake --build build) and gnuplot (setup.sh installs gnuplot-nox).
# Not timed end to end. The pieces, on the project's 2-vCPU VM: about 3 hours 15 minutes before switchyard-pool
# changed on 2026-11-22; since then its dynamic runs take 13.5 minutes, its MIG dynamic runs 10 and its compaction
# probes 66 (packing.md sections 5 and 6), while its composable runs got 6-7 times faster; expect 3 to 3.5 hours
# on that VM. The VM of the next session was 2-4 times faster (section 3); the compaction with every host kept took
# 23 minutes there, its control (--thin-servers) 14, and both on two more workloads 14. The runs use all cores.
set -euo pipefail
cd "$(dirname "$0")/../../.."
TRACES="${1:-../shared/traces/alibaba-gpu-2023}"
OUT=docs/benchmarks/packing
BIN=build/tests/switchyard_packbench
mkdir -p "$OUT"

"$BIN" --traces "$TRACES" static --workloads all --seeds 42-51 --quiet --out "$OUT"
"$BIN" --traces "$TRACES" latency --gpus 1000,10000,100000 --fill 0.5,0.9 --out "$OUT" | tee "$OUT/latency.md"
"$BIN" --traces "$TRACES" latency --gpus 1000,10000,100000 --fill 0.5,0.9 --pool 16:8:2:16 \
  --policies switchyard-pool,switchyard,fgd,best-fit --out "$OUT" | tee "$OUT/latency_16-8-2-16.md"
"$BIN" --traces "$TRACES" composable --workloads default,multigpu50,gpushare100,cpu250,default+big \
  --shapes mirror,8:4:2:8,16:8:2:16,32:16:2:32 --seeds 42-51 \
  --policies first-fit,best-fit,fgd,switchyard,switchyard-no-frag,switchyard-pool --quiet --out "$OUT"
"$BIN" --traces "$TRACES" dynamic --workloads default --pools static,16:8:2:16 --loads 0.7,0.9,1.0,1.1 \
  --policies best-fit,fgd,switchyard,switchyard-pool --seeds 42-43 --quiet --out "$OUT"
# The utilization loop against FIFO (packing.md section 10): about 17 minutes on the 2-vCPU VM.
mkdir -p "$OUT/loop"
"$BIN" --traces "$TRACES" loop --pools static,16:8:2:16 --policies fgd --modes fifo,loop --loads 0.9,1.0,1.1,1.2 --seeds 42,43 \
  --quiet --out "$OUT/loop"
tests/bench/packing/loop_plots.sh "$OUT/loop"
"$BIN" --traces "$TRACES" compaction --workloads default --pools static,16:8:2:16 --policies best-fit,fgd,switchyard,switchyard-pool \
  --seeds 42-46 --load 0.8 --target 99 --from 60 --quiet --out "$OUT"
# Compaction where the composable pool keeps every host and buys fewer GPUs (packing.md, section 6).
mkdir -p "$OUT/compaction_keep_hosts"
"$BIN" --traces "$TRACES" compaction --workloads default --pools static,16:8:2:16 --keep-hosts --policies best-fit,fgd,switchyard \
  --seeds 42-51 --load 0.8 --target 99 --from 60 --quiet --out "$OUT/compaction_keep_hosts"
# Its control: the same hosts as fixed servers with fewer GPUs, taken evenly or from the smallest servers first.
for THIN in even small-first; do
  mkdir -p "$OUT/compaction_thin_servers/$THIN"
  "$BIN" --traces "$TRACES" compaction --workloads default --pools static --thin-servers "$THIN" --policies best-fit,fgd,switchyard \
    --seeds 42-51 --load 0.8 --target 99 --from 60 --quiet --out "$OUT/compaction_thin_servers/$THIN"
done
# The same pair on two more workloads (switchyard only; multigpu* have no durations to replay).
for W in cpu250 gpushare100; do
  MORE="$OUT/compaction_keep_hosts/more_workloads/$W"
  mkdir -p "$MORE/keep_hosts" "$MORE/thin_small_first"
  "$BIN" --traces "$TRACES" compaction --workloads "$W" --pools 16:8:2:16 --keep-hosts --policies switchyard \
    --seeds 42-51 --load 0.8 --target 99 --from 60 --quiet --out "$MORE/keep_hosts"
  "$BIN" --traces "$TRACES" compaction --workloads "$W" --pools static --thin-servers small-first --policies switchyard \
    --seeds 42-51 --load 0.8 --target 99 --from 60 --quiet --out "$MORE/thin_small_first"
done
# Which request kinds each of the pair turns away, at the same sizes (switchyard, default; both pools in one run).
mkdir -p "$OUT/compaction_keep_hosts/by_kind"
"$BIN" --traces "$TRACES" compaction --workloads default --pools static,16:8:2:16 --keep-hosts --thin-servers small-first \
  --policies switchyard --seeds 42-51 --load 0.8 --target 99 --from 60 --probe-at 80,84,88 --quiet --out "$OUT/compaction_keep_hosts/by_kind"
"$BIN" --traces "$TRACES" optimality --workloads default,gpushare100,multigpu50 --servers 4 --shapes mirror,8:2:2:8 \
  --seeds 42-51 --time-limit 20 --policies first-fit,best-fit,fgd,switchyard,switchyard-pool --quiet --out "$OUT"
# Static mode (the mirror pool) against the per-server GPU-packing LP bound, every variant.
mkdir -p "$OUT/static_bound"
"$BIN" --traces "$TRACES" composable --shapes mirror --policies first-fit,fgd,switchyard --seeds 42-51 --quiet \
  --workloads default,cpu050,cpu100,cpu200,cpu250,gpushare40,gpushare80,gpushare100,gpuspec10,gpuspec20,gpuspec33,multigpu20,multigpu40,multigpu50 \
  --offline --out "$OUT/static_bound"
# Where the composable gap lies (packing.md, section 4): offline placements on every pool, and the server LP.
mkdir -p "$OUT/offline" "$OUT/server_lp" "$OUT/server_lp_big"
"$BIN" --traces "$TRACES" composable --workloads default,multigpu50,gpushare100,cpu250,default+big \
  --shapes mirror,8:4:2:8,16:8:2:16,32:16:2:32 --seeds 42-44 --offline \
  --policies first-fit,best-fit,fgd,switchyard,switchyard-no-frag,switchyard-pool --quiet --out "$OUT/offline"
"$BIN" --traces "$TRACES" composable --workloads default,multigpu50,gpushare100,cpu250 --shapes mirror,16:8:2:16 \
  --policies first-fit --seeds 42 --server-lp --out "$OUT/server_lp"
"$BIN" --traces "$TRACES" composable --workloads default+big --shapes 16:8:2:16,32:16:2:32 \
  --policies first-fit --seeds 42 --server-lp --out "$OUT/server_lp_big"
# GPU-model constraints with departures: FGD's measure (the default) against --own-models-only (packing.md, section 2).
mkdir -p "$OUT/models/own-models-only"
"$BIN" --traces "$TRACES" dynamic --workloads gpuspec20,gpuspec33 --pools static --loads 0.9,1.0 --policies fgd,switchyard \
  --seeds 42-44 --quiet --out "$OUT/models"
"$BIN" --traces "$TRACES" dynamic --workloads gpuspec20,gpuspec33 --pools static --loads 0.9,1.0 --policies switchyard \
  --seeds 42-44 --own-models-only --quiet --out "$OUT/models/own-models-only"
# MIG requests (every GPU taken as A100/H100-class): composable and dynamic modes, in their own folder.
mkdir -p "$OUT/mig"
"$BIN" --traces "$TRACES" composable --workloads default+mig,gpushare100+mig,multigpu50+mig --shapes mirror,16:8:2:16 \
  --seeds 42-51 --policies first-fit,best-fit,gpu-packing,hived-buddy,fgd,switchyard,switchyard-pool --quiet --out "$OUT/mig"
"$BIN" --traces "$TRACES" dynamic --workloads default+mig --pools static,16:8:2:16 --loads 0.9,1.0,1.1 \
  --policies best-fit,fgd,switchyard,switchyard-pool --seeds 42-43 --quiet --out "$OUT/mig"
build/tests/switchyard_bench ablation --load 0.8 > "$OUT/ablation_load080.md"
build/tests/switchyard_bench ablation --load 0.9 > "$OUT/ablation_load090.md"
build/tests/switchyard_bench ablation --load 1.0 > "$OUT/ablation_load100.md"
# The same with sizes that are not powers of two, where buddy cells round up.
MIXED=(--sizes 1,2,3,4,6,8,12,16 --size-weights 30,20,10,15,5,10,5,5)
build/tests/switchyard_bench ablation --load 0.8 "${MIXED[@]}" > "$OUT/ablation_mixed_load080.md"
build/tests/switchyard_bench ablation --load 0.9 "${MIXED[@]}" > "$OUT/ablation_mixed_load090.md"
build/tests/switchyard_bench ablation --load 1.0 "${MIXED[@]}" > "$OUT/ablation_mixed_load100.md"

# Mean allocation curve per policy (default workload) and the bar chart of allocation at 130 % demand.
python3 - "$OUT" <<'PY'
import csv, sys, statistics, collections
out = sys.argv[1]
curves = collections.defaultdict(list)
for row in csv.DictReader(open(f"{out}/static_curves.csv")):
    if row["workload"] == "default":
        curves[row["policy"]].append([float(row[str(p)]) for p in range(131)])
policies = sorted(curves)
with open(f"{out}/curve_default.dat", "w") as f:
    f.write("arrived " + " ".join(policies) + "\n")
    for p in range(131):
        f.write(f"{p} " + " ".join(f"{statistics.mean(c[p] for c in curves[k]):.3f}" for k in policies) + "\n")
at130 = collections.defaultdict(lambda: collections.defaultdict(list))
for row in csv.DictReader(open(f"{out}/static_runs.csv")):
    at130[row["workload"]][row["policy"]].append(float(row["alloc_at_130"]))
with open(f"{out}/alloc130.dat", "w") as f:
    pols = sorted({p for w in at130 for p in at130[w]})
    f.write("workload " + " ".join(pols) + "\n")
    for w in at130:
        f.write(w + " " + " ".join(f"{statistics.mean(at130[w][p]):.3f}" for p in pols) + "\n")
PY

N=$(( $(head -1 "$OUT/curve_default.dat" | wc -w) ))  # first column is the x axis
gnuplot <<GP
N = $N
set terminal pngcairo size 1000,620 font ",10"
set datafile columnheaders
set linetype 9 lc rgb "#8b4513"; set linetype 10 lc rgb "#ff1493"; set linetype 11 lc rgb "#808080"; set linetype 12 lc rgb "#000080"
set output "$OUT/alloc_curve_default.png"
set title "openb default: GPU allocation vs arrived GPU demand (mean of 10 seeds)"
set xlabel "arrived GPU demand (% of capacity)"; set ylabel "GPUs allocated (% of capacity)"
set key left top; set grid
set xrange [60:130]; set yrange [60:100]
plot for [i=2:N] "$OUT/curve_default.dat" using 1:i with lines lw 2 lt (i-1) title columnheader(i)
set output "$OUT/alloc130_by_workload.png"
set title "GPU allocation at 130 % arrived demand (mean of 10 seeds)"
set style data histogram; set style histogram clustered gap 1; set style fill solid 0.8 border -1
set xtics rotate by -40; set yrange [75:100]; set xrange [*:*]; set key outside right
set ylabel "GPUs allocated (% of capacity)"; set xlabel ""
plot for [i=2:N] "$OUT/alloc130.dat" using i:xtic(1) title columnheader(i)
GP

rm -f "$OUT"/*.dat
echo "wrote $OUT/*.png"

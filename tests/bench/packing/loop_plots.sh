#!/usr/bin/env bash
# Plots of `switchyard_packbench loop` (packing.md section 10) from the loop_runs.csv and loop_groups.csv in DIR:
#   tests/bench/packing/loop_plots.sh DIR
# writes DIR/loop_served.png (GPU time served by load) and DIR/loop_wait_p99.png (p99 wait by class and load).
# Needs python3 and gnuplot (setup.sh installs gnuplot-nox).
set -euo pipefail
DIR="$1"
python3 - "$DIR" <<'PY'
import collections, csv, statistics, sys
d = sys.argv[1]
served = collections.defaultdict(list)
for r in csv.DictReader(open(f"{d}/loop_runs.csv")):
    pool = "fixed servers" if r["pool"] == "static" else "composable"
    served[(f"{pool} {r['policy']} {r['mode']}", float(r["load"]))].append(float(r["served_gpu_time_pct"]))
series = sorted({k[0] for k in served})
loads = sorted({k[1] for k in served})
with open(f"{d}/loop_served.dat", "w") as f:
    f.write("load " + " ".join(f'"{s}"' for s in series) + "\n")
    for l in loads:
        f.write(f"{l} " + " ".join(f"{statistics.mean(served[(s, l)]):.3f}" if (s, l) in served else "NaN" for s in series) + "\n")
waits = collections.defaultdict(list)
for r in csv.DictReader(open(f"{d}/loop_groups.csv")):
    if r["group"] != "class" or r["pool"] == "static":
        continue
    waits[(f"{r['mode']} {r['name']}", float(r["load"]))].append(max(1.0, float(r["wait_p99_s"])))
wseries = sorted({k[0] for k in waits})
with open(f"{d}/loop_wait.dat", "w") as f:
    f.write("load " + " ".join(f'"{s}"' for s in wseries) + "\n")
    for l in loads:
        f.write(f"{l} " + " ".join(f"{statistics.mean(waits[(s, l)]):.1f}" if (s, l) in waits else "NaN" for s in wseries) + "\n")
PY
N=$(head -1 "$DIR/loop_served.dat" | grep -o '"[^"]*"' | wc -l)
M=$(head -1 "$DIR/loop_wait.dat" | grep -o '"[^"]*"' | wc -l)
gnuplot <<GP
set terminal pngcairo size 900,560 font ",10"
set datafile columnheaders
set key left bottom; set grid
set output "$DIR/loop_served.png"
set title "openb default, dynamic arrivals: GPU time served (mean over seeds)"
set xlabel "offered load"; set ylabel "GPU time served (% of offered)"
plot for [i=2:$N+1] "$DIR/loop_served.dat" using 1:i with linespoints lw 2 pt 7 title columnheader(i)
set output "$DIR/loop_wait_p99.png"
set title "composable pool: p99 wait by class, FIFO vs the loop (1 s floor)"
set logscale y; set ylabel "p99 wait (s)"; set key left top
plot for [i=2:$M+1] "$DIR/loop_wait.dat" using 1:i with linespoints lw 2 pt 7 title columnheader(i)
GP
rm -f "$DIR/loop_served.dat" "$DIR/loop_wait.dat"
echo "wrote $DIR/loop_served.png, $DIR/loop_wait_p99.png"

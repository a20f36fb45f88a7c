#!/usr/bin/env bash
# Draws docs/cache-hit.svg and docs/cache-rate.svg (hit ratio and lookups/s
# against cache size, per mode) from bench_cache's e2e sweep.
# Usage: bench_cache_plot.sh BENCH_OUTPUT [OUTDIR]   (needs gnuplot)
set -euo pipefail
in=$1
out=${2:-$(dirname "$0")/../../docs}
data=$(mktemp)
trap 'rm -f "$data"' EXIT
# The sweep's rows: elements, hit common, M/s common, hit per-thread, M/s
# per-thread, M/s per-thread in batches of 64, M/s of the trie's batch.
awk '/^sweep:/ { on = 1; next } on && /^[0-9]/ { print } on && /^$/ { on = 0 }' "$in" >"$data"
[ -s "$data" ] || { echo "bench_cache_plot: no sweep rows in $in" >&2; exit 1; }
plot() { # file, ylabel, column common, column per-thread, title[, extra plot clauses]
	gnuplot <<GP
set terminal svg size 640,400 dynamic font "sans,11"
set output "$out/$1"
set logscale x 2
set format x "2^{%L}"
set xlabel "cache size (elements, 2^k + 1)" noenhanced
set ylabel "$2"
set key left top
set grid
set title "$5"
plot "$data" using 1:$3 with linespoints title "common LRU", \
     "$data" using 1:$4 with linespoints title "per-thread LRU"${6:-}
GP
}
plot cache-hit.svg "hit ratio" 2 4 "Full table, zipf 1.0 destinations: hit ratio"
plot cache-rate.svg "M lookups/s (1 thread)" 3 5 "Full table, zipf 1.0 destinations: lookups/s" \
	", \"$data\" using 1:6 with linespoints title \"per-thread LRU, batches of 64\", \"$data\" using 1:7 with linespoints title \"trie alone, batches of 64\""
echo "wrote $out/cache-hit.svg $out/cache-rate.svg"

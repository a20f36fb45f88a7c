#!/usr/bin/env bash
# Draws the plots of docs/BENCHMARKS.md from bench_fib's own output (SVG,
# gnuplot): lookups/s against table size (the sweep section) and the
# sync-mem experiment (the syncmem section).
# Usage: tests/bench/plot.sh BENCH_OUTPUT [OUTDIR]     (OUTDIR: docs)
#   e.g. ./tests/bench/bench_fib | tee bench.out; tests/bench/plot.sh bench.out docs
set -euo pipefail
out=${1:?usage: plot.sh BENCH_OUTPUT [OUTDIR]}
dir=${2:-docs}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
[ -r "$out" ] || { echo "plot.sh: $out: cannot read" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The sweep's two lookup tables: k prefixes lc-single lc-batch lpm-single lpm-bulk ratio hits fib-bulk.
awk -v dir="$tmp" '
	/^== sweep/ { sw = 1 }
	/^== / && !/^== sweep/ { sw = 0 }
	sw && /^lookups, uniform random/ { f = dir "/uniform.dat"; next }
	sw && /^lookups, inside prefixes/ { f = dir "/inside.dat"; next }
	sw && f && /^ *[0-9]+ +[0-9]+ / { print > f; next }
	sw && f && /^$/ { f = "" }
' "$out"
# The syncmem rows: sync-mem in KiB, reader, seconds, routes/s, waits, waited ms.
awk -v dir="$tmp" '
	/^== syncmem/ { sm = 1; next }
	/^== / { sm = 0 }
	sm && /^ *[0-9]+ (KiB|MiB) / {
		kib = $1 * ($2 == "MiB" ? 1024 : 1)
		if ($3 == "none")
			print kib, $5, $6, $7 > (dir "/syncmem-none.dat")
		else # the reader column is "1 ms": two fields
			print kib, $6, $7, $8 > (dir "/syncmem-reader.dat")
	}
' "$out"

for f in uniform inside; do
	[ -s "$tmp/$f.dat" ] || { echo "plot.sh: no sweep section in $out" >&2; exit 1; }
done
gnuplot <<EOF
set terminal svg size 960,420 dynamic enhanced font "sans,11" background "white"
set output "$dir/lookups-vs-size.svg"
set multiplot layout 1,2 title "Lookups on one thread against table size (random prefixes of the full IPv4 table)"
set logscale xy
set xlabel "prefixes in the table"
set ylabel "M lookups/s"
set key bottom left font ",9"
set grid
set logscale x 2
set xtics ("512" 512, "2k" 2048, "8k" 8192, "32k" 32768, "128k" 131072, "512k" 524288)
set datafile missing "-"
do for [f in "uniform inside"] {
	set title (f eq "uniform" ? "uniformly random addresses" : "addresses inside table prefixes")
	plot "$tmp/".f.".dat" using 2:3 with linespoints title "lcfib single", \
	     "" using 2:4 with linespoints title "lcfib batch", \
	     "" using 2:6 with linespoints title "rte\\\\_lpm bulk", \
	     "" using 2:9 with linespoints title "rte\\\\_fib bulk"
}
unset multiplot
EOF
if [ -s "$tmp/syncmem-none.dat" ]; then
	gnuplot <<EOF
set terminal svg size 960,420 dynamic enhanced font "sans,11" background "white"
set output "$dir/syncmem.svg"
set multiplot layout 1,2 title "The full IPv4 load against sync-mem, without and with a reader holding 1 ms read-side sections"
set logscale x 2
set xlabel "sync-mem (KiB)"
set grid
set key font ",9"
set title "forced grace-period waits"
set ylabel "waits"
plot "$tmp/syncmem-none.dat" using 1:3 with linespoints title "no reader", \
     "$tmp/syncmem-reader.dat" using 1:3 with linespoints title "reader"
set title "load rate"
set key bottom right
set ylabel "routes/s"
set yrange [0:*]
plot "$tmp/syncmem-none.dat" using 1:2 with linespoints title "no reader", \
     "$tmp/syncmem-reader.dat" using 1:2 with linespoints title "reader"
unset multiplot
EOF
fi
echo "plot.sh: wrote $dir/lookups-vs-size.svg$([ -s "$tmp/syncmem-none.dat" ] && echo " and $dir/syncmem.svg")"

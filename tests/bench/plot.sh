#!/usr/bin/env bash
# Draws the plots of docs/BENCHMARKS.md from bench_fib's own output (SVG,
# gnuplot): lookups/s against table size (the sweep section), the sync-mem
# experiment (the syncmem section), and lookups/s against memory at each
# root threshold beside DPDK (the dpdk section); each plot where the output
# has its section.
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

# The dpdk section: lcfib's IPv4 batch and single lookups at each root
# threshold and the DPDK tables' bulk lookups, against bytes a route.
# root.dat, by bytes a route: threshold, B/route, batch random, batch inside,
# single random, single inside; dpdk.dat: name, B/route, bulk random, bulk
# inside.
awk -v dir="$tmp" '
	/^== dpdk/ { dp = 1; next }
	/^== / { dp = 0 }
	!dp { next }
	/^lcfib / && !routes { routes = $2; bpr["def"] = $(NF - 1) * 1048576 / routes; th = "def" }
	/its root resized by fib_set_root_threshold\(\) \(default [0-9]+ %\)/ {
		dflt = $(NF - 1)
	}
	/^rte_lpm \(DIR-24-8\)/ { heap["rte_lpm"] = $(NF - 2) * 1048576 / $3 }
	/^rte_fib \(dir24_8/ { heap["rte_fib"] = $(NF - 2) * 1048576 / $6 }
	/^root threshold [0-9]+ %:/ {
		th = $3
		for (i = 1; i < NF; i++)
			if ($(i + 1) == "B/route,")
				bpr[th] = $i
		order[++n] = th
	}
	/^lookups, IPv6/ { th = "" }
	/^IPv4 / && th != "" {
		kind = $2 == "uniform" ? "u" : "i"
		if ($5 == "fib_lookup4_batch_rcu")
			lc[th, "b", kind] = $(NF - 2)
		else if ($5 == "fib_lookup4_rcu")
			lc[th, "s", kind] = $(NF - 2)
		else if ($4 == "rte_lpm_lookup_bulk")
			mps["rte_lpm", kind] = $(NF - 2)
		else if ($4 == "rte_fib_lookup_bulk")
			mps["rte_fib", kind] = $(NF - 2)
	}
	END {
		if (!n)
			exit
		order[0] = "def"
		for (k = 0; k <= n; k++) {
			t = order[k]
			printf "%s%% %.2f %s %s %s %s\n", t == "def" ? dflt : t, bpr[t],
			       lc[t, "b", "u"], lc[t, "b", "i"], lc[t, "s", "u"], lc[t, "s", "i"] \
			       | ("sort -k2,2n > " dir "/root.dat")
		}
		for (d in heap)
			if ((d, "u") in mps)
				printf "%s %.2f %s %s\n", d, heap[d], mps[d, "u"], mps[d, "i"] > (dir "/dpdk.dat")
	}
' "$out"

drawn=""
if [ -s "$tmp/uniform.dat" ] && [ -s "$tmp/inside.dat" ]; then
	drawn="$dir/lookups-vs-size.svg"
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
fi
if [ -s "$tmp/syncmem-none.dat" ]; then
	drawn="$drawn $dir/syncmem.svg"
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
if [ -s "$tmp/root.dat" ]; then
	drawn="$drawn $dir/root-threshold.svg"
	gnuplot <<EOF
set terminal svg size 960,420 dynamic enhanced font "sans,11" background "white"
set output "$dir/root-threshold.svg"
set termoption noenhanced
set multiplot layout 1,2 title "IPv4 full table, one thread: lookups against memory, lcfib at its default root threshold (labelled) and at 30 (the kernel's), 20, 10 and 5 %"
set logscale x
set xlabel "bytes a route (lcfib: accounted; DPDK: its heap)"
set ylabel "M lookups/s"
set yrange [0:*]
set grid
set key top left font ",9"
set offsets 0, 0, graph 0.12, 0
do for [c in "3 4"] {
	set title (c eq "3" ? "uniformly random addresses" : "addresses inside table prefixes")
	plot "$tmp/root.dat" using 2:(column(c + 0)) with linespoints pt 7 ps 0.7 title "lcfib batch", \
	     "" using 2:(column(c + 0)):1 with labels offset 0,1 font ",8" notitle, \
	     "" using 2:(column(c + 2)) with linespoints pt 6 ps 0.7 title "lcfib single", \
	     "$tmp/dpdk.dat" using 2:(column(c + 0)) with points pt 5 ps 0.9 title "DPDK bulk", \
	     "" using 2:(column(c + 0)):1 with labels offset 0,1 font ",8" notitle
}
unset multiplot
EOF
fi
[ -n "$drawn" ] || { echo "plot.sh: $out has none of the sections sweep, syncmem, dpdk" >&2; exit 1; }
echo "plot.sh: wrote$drawn"

#!/usr/bin/env bash
# Draws the timeline plots of docs/BENCHMARKS.md (SVG, gnuplot) from the
# samples tests/bench/bench_timeline.sh wrote:
#   OUTDIR/load-timeline.svg  from load-{64k,same,16m}-RUN.tl
#   OUTDIR/converge.svg       from kernel.tl and fpm.tl (each when present)
# Usage: tests/bench/timeline_plot.sh TLDIR [OUTDIR]     (OUTDIR: docs)
set -euo pipefail
in=${1:?usage: timeline_plot.sh TLDIR [OUTDIR]}
dir=${2:-docs}
command -v gnuplot >/dev/null || { echo "timeline_plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wrote=

# rates TL: the samples as "t routes routes/s waits waited-ms sent zebra", the
# rate over the last 3 samples (one 10 ms sample is a poll's jitter).
rates()
{
	awk '$1 == "sample" {
		i++; t[i] = $2; r[i] = $3
		j = i > 3 ? i - 3 : 1
		rate = t[i] > t[j] ? (r[i] - r[j]) / (t[i] - t[j]) : 0
		print $2, $3, rate, $4, $5, $6, $7
	}' "$1"
}
# event TL NAME: the time of the event NAME, or nothing.
event() { awk -v n="$2" '$1 == "event" && $3 == n { print $2; exit }' "$1"; }

# load_plot COLUMN: one gnuplot plot of every load run's COLUMN, a colour per kind.
load_plot()
{
	local f sep="" title colour
	printf 'plot '
	for f in "$tmp"/load-*.dat; do
		case $f in
		*-64k-1.dat) title='title "sync-mem 64K throughout"' ;;
		*-same-1.dat) title='title "64K, set 64K again at the red line (the request alone)"' ;;
		*-16m-1.dat) title='title "64K, set 16M at the red line"' ;;
		*) title=notitle ;;
		esac
		case $f in
		*-64k-*) colour="#8000a0" ;;
		*-same-*) colour="#e09000" ;;
		*) colour="#00a070" ;;
		esac
		printf '%s"%s" using 1:%s with lines lw 1.5 lc rgb "%s" %s' "$sep" "$f" "$1" "$colour" "$title"
		sep=", "
	done
	echo
}

loads=$(cd "$in" && ls load-64k-*.tl load-same-*.tl load-16m-*.tl 2>/dev/null || true)
if [ -n "$loads" ]; then
	for f in $loads; do
		rates "$in/$f" >"$tmp/${f%.tl}.dat"
	done
	{
		echo 'set terminal svg size 900,760 dynamic enhanced font "sans,11" background "white"'
		echo "set output \"$dir/load-timeline.svg\""
		echo "set multiplot layout 3,1 title \"lcfibctl load of the full table (1,062,046 routes) into lcfibd: $(echo "$loads" | grep -c 64k) runs of each, sampled every 10 ms\""
		echo 'set grid; set key bottom right font ",9"; set xrange [0:*]; set lmargin 12'
		i=1
		for f in $(echo "$loads" | grep -v 64k); do
			c=$(event "$in/$f" at-start)
			echo "set arrow $i from $c, graph 0 to $c, graph 1 nohead lw 0.5 lc rgb \"red\""
			[ $i = 1 ] && echo "set label 1 \"lcfibctl set sync-mem\" at $c, graph 0.6 offset 0.5,0 tc rgb \"red\" font \",9\""
			i=$((i + 1))
		done
		echo 'set ylabel "routes in lcfibd (M)"'
		load_plot '($2/1e6)'
		echo 'set ylabel "M routes/s (last 30 ms)"; unset key'
		load_plot '($3/1e6)'
		echo 'set ylabel "forced grace-period waits"'
		echo 'set xlabel "seconds since lcfibctl load started"'
		load_plot 4
		echo 'unset multiplot'
	} | gnuplot
	wrote="$wrote $dir/load-timeline.svg"
fi

if [ -s "$in/kernel.tl" ] || [ -s "$in/fpm.tl" ]; then
	panels=0
	for f in kernel fpm; do
		[ -s "$in/$f.tl" ] && rates "$in/$f.tl" >"$tmp/$f.dat" && panels=$((panels + 1))
	done
	{
		cat <<EOF
set terminal svg size 960,420 dynamic enhanced font "sans,11" background "white"
set output "$dir/converge.svg"
set multiplot layout 1,$panels title "The full table (1,062,046 routes) reaching lcfibd through its feeds"
set grid
set key top left font ",9"
set xrange [0:*]
set yrange [0:1.3]
set datafile missing "-"
set xlabel "seconds"
set ylabel "routes (M)"
EOF
		if [ -s "$tmp/kernel.dat" ]; then
			end=$(event "$in/kernel.tl" cmd-end)
			cat <<EOF
set title "kernel mirror: ip -batch in a netns"
set arrow 1 from $end, graph 0 to $end, graph 1 nohead
set label 1 "ip -batch ends" at $end, graph 0.4 right offset -0.5,0 font ",9"
plot "$tmp/kernel.dat" using 1:(\$6/1e6) with lines lw 6 lc rgb "#b0b0b0" title "in the kernel (lines ip -batch read)", \
     "" using 1:(\$2/1e6) with lines lw 1.5 lc rgb "#0050c0" title "in lcfibd (its kernel feed)"
unset arrow 1
unset label 1
EOF
		fi
		if [ -s "$tmp/fpm.dat" ]; then
			cat <<EOF
set title "FPM: zebra starts on a kernel holding the table"
plot "$tmp/fpm.dat" using 1:(\$7/1e6) with steps lw 6 lc rgb "#b0b0b0" title "in zebra's RIB (vtysh, once a second)", \
     "" using 1:(\$2/1e6) with lines lw 2 lc rgb "#0050c0" title "in lcfibd (FPM from zebra)"
EOF
		fi
		echo "unset multiplot"
	} | gnuplot
	wrote="$wrote $dir/converge.svg"
fi
[ -n "$wrote" ] || { echo "timeline_plot.sh: no timelines in $in" >&2; exit 1; }
echo "timeline_plot.sh: wrote$wrote"

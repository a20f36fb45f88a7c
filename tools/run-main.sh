#!/usr/bin/env bash
# The main job of the README: installs what is missing, builds, starts
# lcfibd with its default configuration (its socket, pid file and state in
# build/main/, so a run never touches /run/lcfib or /var/lib/lcfib), loads
# the full BGP table through lcfibctl with a progress bar, tunes sync-mem
# while the load runs, and shows the daemon's state. lcfibd keeps running
# afterwards; the last lines say how to reach it and stop it.
# Usage: tools/run-main.sh [--bench]   (--bench: also run the benchmarks)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bench=${1:-}
"$top/tools/deps.sh" ${bench:+--bench}
"$top/tools/build.sh" build --enable-werror
cd "$top"
run=$top/build/main
ctl() { build/cli/lcfibctl -s "$run/lcfibd.sock" -y yang "$@"; }

# A daemon left by an earlier run goes first; then a fresh state directory.
if [ -f "$run/lcfibd.pid" ] && kill "$(cat "$run/lcfibd.pid")" 2>/dev/null; then
	while [ -f "$run/lcfibd.pid" ]; do sleep 0.1; done
fi
rm -rf "$run"
mkdir -p "$run"
zcat tests/data/fullview-2024.txt.gz >"$run/fullview-2024.txt"

echo "== starting lcfibd (default config; log in $run/lcfibd.log)"
build/daemon/lcfibd -s "$run/lcfibd.sock" -S "$run/state" -p "$run/lcfibd.pid" -y yang \
	--stderr -d info 2>"$run/lcfibd.log"
ctl show config

echo "== loading the full table ($(wc -l <"$run/fullview-2024.txt") prefixes), sync-mem 64K, raised to 16M during the load"
ctl set sync-mem 64K
( sleep 0.3; ctl set sync-mem 16M && echo "   (sync-mem set to 16M while loading)" ) &
ctl load "$run/fullview-2024.txt"
wait

echo "== state"
ctl show state routes
ctl show trie
ctl show state reclamation
ctl show memory
ctl show state ingest
ctl show feeds
ctl lookup 8.8.8.8
ctl show config

if [ "$bench" = --bench ]; then
	echo "== benchmarks"
	tests/bench/bench_load.sh build
	LCFIB_DATA="$top/tests/data" build/tests/bench/bench_fib --section full
fi

cat <<MSG
== lcfibd is running (pid $(cat "$run/lcfibd.pid")). Talk to it with
   build/cli/lcfibctl -s $run/lcfibd.sock -y yang        (an interactive shell)
   stop it with: kill \$(cat $run/lcfibd.pid)
MSG

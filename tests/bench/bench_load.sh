#!/usr/bin/env bash
# Loads the full BGP table end to end through lcfibctl into a fresh lcfibd,
# and the same routes with `ip -batch` into the kernel of a new network
# namespace, in one run: wall time (the best and the median lcfibctl load),
# routes/s, and the daemon's peak RSS.
# Both read one file of `route add blackhole PREFIX` lines (the kernel needs
# no device for a blackhole route, so neither side resolves nexthops);
# lcfibctl also loads the same lines shuffled (a fixed shuffle), which the
# daemon's parser sorts a chunk at a time.
# Usage: tests/bench/bench_load.sh [BUILDDIR] [RUNS] [KERNEL_RUNS]   (root, for unshare -n)
# RUNS (default 3) loads per lcfibctl variant, KERNEL_RUNS (default 1) of
# ip -batch, which takes about 45 s on our VM (0: lcfibd alone).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top}" && pwd)
runs=${2:-3}
kruns=${3:-1}
tmp=$(mktemp -d /tmp/lcfib-bench.XXXXXX)
trap 'kill "$(cat "$tmp/pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$tmp"' EXIT

zcat "$top/tests/data/fullview-2024.txt.gz" | tr -d '\r' | sed 's/^/route add blackhole /' >"$tmp/routes.batch"
n=$(wc -l <"$tmp/routes.batch")
shuf --random-source=<(yes) "$tmp/routes.batch" >"$tmp/routes.shuffled"
ctl() { "$build/cli/lcfibctl" -s "$tmp/sock" -y "$top/yang" "$@"; }
now() { date +%s.%N; }

start_daemon() {
	rm -rf "$tmp/state"
	"$build/daemon/lcfibd" -f -s "$tmp/sock" -S "$tmp/state" -p "$tmp/pid" -y "$top/yang" \
		-d warning 2>>"$tmp/daemon.log" &
	for _ in $(seq 100); do ctl show config >/dev/null 2>&1 && return; sleep 0.05; done
	echo "lcfibd did not start:" >&2; cat "$tmp/daemon.log" >&2; exit 1
}
stop_daemon() {
	local pid; pid=$(cat "$tmp/pid")
	kill "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}
peak_rss_mib() { awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$(cat "$tmp/pid")/status"; }

echo "# bench_load: $n routes, best and median of $runs lcfibctl loads and $kruns ip -batch, $(nproc) cpus, $(uname -r)"
printf '%-34s %8s %12s %10s\n' what seconds routes/s peak-MiB
best() { sort -n | head -1; }
for how in file stdin shuffled; do
	times=()
	for _ in $(seq "$runs"); do
		start_daemon
		t0=$(now)
		if [ "$how" = file ]; then
			ctl -q load "$tmp/routes.batch" transient >/dev/null
		elif [ "$how" = shuffled ]; then
			ctl -q load "$tmp/routes.shuffled" transient >/dev/null
		else
			ctl -q load - transient <"$tmp/routes.batch" >/dev/null
		fi
		t1=$(now)
		got=$(ctl --json show state routes | python3 -c 'import json,sys; r = json.load(sys.stdin)["lcfib:lcfib"]["state"]["routes"]; print(int(r["ipv4"]) + int(r["ipv6"]))')
		[ "$got" = "$n" ] || { echo "lcfibd holds $got routes, not $n" >&2; exit 1; }
		rss=$(peak_rss_mib)
		stop_daemon
		times+=("$(echo "$t1 - $t0" | bc -l) $rss")
	done
	read -r t rss < <(printf '%s\n' "${times[@]}" | sort -n | head -1)
	printf '%-34s %8.3f %12.0f %10s\n' "lcfibctl load ($how), best of $runs" "$t" "$(echo "$n / $t" | bc -l)" "$rss"
	# The median too: on a noisy machine the best run alone flatters.
	med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	printf '%-34s %8.3f %12.0f\n' "lcfibctl load ($how), median" "$med" "$(echo "$n / $med" | bc -l)"
	eval "lcfib_$how=$t"
done
if [ "$kruns" -eq 0 ]; then
	echo "(no ip -batch run: KERNEL_RUNS is 0)"
	exit 0
fi
times=()
for _ in $(seq "$kruns"); do
	t=$(unshare -n bash -c '
		ip link set lo up
		t0=$(date +%s.%N); ip -batch "$1"; t1=$(date +%s.%N)
		c=$(( $(ip -4 route show table main | wc -l) + $(ip -6 route show table main | grep -c "^blackhole") ))
		[ "$c" -eq "$2" ] || { echo "kernel holds $c routes" >&2; exit 1; }
		echo "$t1 - $t0" | bc -l' _ "$tmp/routes.batch" "$n")
	times+=("$t")
done
kt=$(printf '%s\n' "${times[@]}" | best)
printf '%-34s %8.3f %12.0f %10s\n' "ip -batch into a netns, best of $kruns" "$kt" "$(echo "$n / $kt" | bc -l)" "-"
printf 'ratio ip -batch / lcfibctl load (file): %.2f, (stdin): %.2f\n' \
	"$(echo "$kt / $lcfib_file" | bc -l)" "$(echo "$kt / $lcfib_stdin" | bc -l)"

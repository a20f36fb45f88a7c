#!/usr/bin/env bash
# Routes in lcfibd over time (tests/bench/timeline.py, sampled every 10 ms)
# for the timeline plots of docs/BENCHMARKS.md (tests/bench/timeline_plot.sh):
#
# load    the full table (1,062,046 routes) through `lcfibctl load FILE
#         transient` into a fresh lcfibd at sync-mem 64K, three ways: left
#         at 64K; `lcfibctl set sync-mem 16M` sent when a third of the routes
#         are in (as tools/run-main.sh raises it during its load); and, for
#         the cost of the request itself, `lcfibctl set sync-mem 64K` (no
#         change) at the same point. Forced grace-period waits are sampled
#         beside the routes. RUNS (environment, default 3) loads of each
#         kind, taking turns.
# kernel  (root) lcfibd mirrors the kernel of a new network namespace
#         (unshare -n, lo only) while `ip -batch` adds the full table there
#         as blackhole routes, proto static; beside lcfibd's count, the
#         lines ip had read of its batch file (ip waits for the kernel's
#         answer to each: the kernel's count, within one stdio buffer).
# fpm     (root, Debian's frr) then FRR's zebra starts in that namespace,
#         learns the table from the kernel and pushes it over FPM
#         (dplane_fpm_nl, nexthop groups on) to a fresh lcfibd; beside
#         lcfibd's count, zebra's RIB (vtysh, once a second).
#
# Usage: tests/bench/bench_timeline.sh [BUILDDIR] [OUTDIR] [load|kernel-fpm]...
# OUTDIR (default .) gets load-{64k,same,16m}-RUN.tl, kernel.tl, fpm.tl: the
# raw samples timeline_plot.sh draws; stdout gets one line of figures each.
# kernel-fpm takes ~2 minutes (ip -batch of the full table: ~45 s).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top}" && pwd)
out=$(mkdir -p "${2:-.}" && cd "${2:-.}" && pwd)
shift $(($# < 2 ? $# : 2))
parts=${*:-load kernel-fpm}
runs=${RUNS:-3}
tmp=$(mktemp -d /tmp/lcfib-bench-timeline.XXXXXX)
chmod 0755 "$tmp"
ns_pid=
# shellcheck source=tests/bench/lib.sh
. "$top/tests/bench/lib.sh"
trap bench_cleanup EXIT

full=$top/tests/data/fullview-2024.txt.gz
n=1062046
timeline=("${PYTHON:-python3}" "$top/tests/bench/timeline.py")
ctl() { "$build/cli/lcfibctl" -s "$tmp/sock" -y "$top/yang" "$@"; }
ns() { nsenter -t "$ns_pid" -n "$@"; }

held() { ctl --json show state routes | "${PYTHON:-python3}" -c 'import json,sys; r = json.load(sys.stdin)["lcfib:lcfib"]["state"]["routes"]; print(int(r["ipv4"]) + int(r["ipv6"]))'; }
# summary FILE WHAT: the timeline's last line, after WHAT.
summary() { printf '%-40s %s\n' "$2" "$(tail -1 "$1" | sed 's/^# //')"; }

echo "# bench_timeline: $n routes; $(nproc) cpus, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for part in $parts; do
case $part in
load)
	zcat "$full" | tr -d '\r' | sed 's/^/route add blackhole /' >"$tmp/load.batch"
	# The kinds take turns, in a rotated order each round.
	kinds=(64k same 16m)
	for run in $(seq "$runs"); do
		for i in 0 1 2; do
			kind=${kinds[$(((run + i) % 3))]}
			start_lcfibd '{"lcfib:lcfib":{"sync-mem":65536}}'
			at=()
			case $kind in
			same) at=(--at $((n / 3)) "$build/cli/lcfibctl -s $tmp/sock -y $top/yang set sync-mem 64K") ;;
			16m) at=(--at $((n / 3)) "$build/cli/lcfibctl -s $tmp/sock -y $top/yang set sync-mem 16M") ;;
			esac
			"${timeline[@]}" "$tmp/sock" "$n" "${at[@]}" -- \
				"$build/cli/lcfibctl" -q -s "$tmp/sock" -y "$top/yang" load "$tmp/load.batch" \
				transient >"$out/load-$kind-$run.tl"
			stop_pid lcfibd
			summary "$out/load-$kind-$run.tl" "load $run, sync-mem 64K$(case $kind in
				same) echo ", set 64K at 1/3" ;; 16m) echo ", 16M at 1/3" ;; esac):"
		done
	done
	;;
kernel-fpm)
	[ "$(id -u)" = 0 ] || { echo "kernel-fpm: needs root" >&2; exit 1; }
	unshare -n sleep 100000 &
	ns_pid=$!
	# unshare -n unshares after the fork: till then nsenter enters ours
	while [ "$(readlink /proc/$ns_pid/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do sleep 0.01; done
	ns ip link set lo up
	zcat "$full" | tr -d '\r' | sed 's/^/route add blackhole /; s/$/ proto static/' >"$tmp/kernel.batch"
	start_lcfibd '{"lcfib:lcfib":{"feeds":{"kernel":{"enabled":true}}}}' nsenter -t "$ns_pid" -n
	sleep 1 # its dump of the namespace's few routes
	base=$(held)
	"${timeline[@]}" "$tmp/sock" $((base + n)) --every 0.05 --batch "$tmp/kernel.batch" -- \
		nsenter -t "$ns_pid" -n ip -batch "$tmp/kernel.batch" >"$out/kernel.tl"
	stop_pid lcfibd
	summary "$out/kernel.tl" "kernel mirror behind ip -batch:"
	if [ ! -x /usr/lib/frr/zebra ] || ! id frr >/dev/null 2>&1; then
		echo "# fpm: skipped (needs Debian's frr package)"
		continue
	fi
	port=$("${PYTHON:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	start_lcfibd "{\"lcfib:lcfib\":{\"feeds\":{\"fpm\":{\"enabled\":true,\"port\":$port}}}}" \
		nsenter -t "$ns_pid" -n
	chown frr:frr "$tmp"
	printf 'hostname zebra\nlog file %s/zebra.log warnings\nfpm address 127.0.0.1 port %s\n' \
		"$tmp" "$port" >"$tmp/zebra.conf"
	"${timeline[@]}" "$tmp/sock" "$n" --every 0.05 --no-wait --zebra "$tmp" -- \
		nsenter -t "$ns_pid" -n /usr/lib/frr/zebra -M dplane_fpm_nl -f "$tmp/zebra.conf" \
		-i "$tmp/zebra.pid" -z "$tmp/zserv.api" --vty_socket "$tmp" >"$out/fpm.tl"
	stop_pid zebra
	stop_pid lcfibd
	summary "$out/fpm.tl" "zebra -> lcfibd over FPM:"
	;;
*)
	echo "bench_timeline: unknown part $part (load, kernel-fpm)" >&2
	exit 1
	;;
esac
done

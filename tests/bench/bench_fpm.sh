#!/usr/bin/env bash
# The FPM feed's ingest rate, end to end: the full BGP table (901,899 IPv4
# and 160,147 IPv6 prefixes) sent to lcfibd over FPM, timed from the first
# frame until lcfibd holds every route (its state's route count, polled every
# 20 ms).
#
# 1. Our sender (tests/e2e/fpm_send.py): the streams are built beforehand
#    and saved, then sent as fast as the socket takes them, so that the
#    figure is lcfibd's and not Python's. Streams: one route a frame as
#    zebra frames them, with and without nexthop objects; 64 routes a frame;
#    and the table again as updates (DEL+NEW in one frame, moving every route
#    onto a nexthop object), timed until the last route moved: on a new
#    connection (a replay: the FIB in bulk mode, after the last replay's
#    end), and outside a sync (the same connection, once its replay settled,
#    as zebra sends updates).
# 2. FRR zebra (when frr is installed and we are root): the table as kernel
#    routes (proto static, blackhole) in a network namespace, which zebra
#    learns at start and sends over FPM. Zebra alone (no FPM module), until
#    its RIB holds them all; then zebra with lcfibd as its FPM peer, until
#    lcfibd holds them all; nexthop groups on and off. CPU seconds of each
#    process show who the bottleneck is.
#
# Usage: tests/bench/bench_fpm.sh [BUILDDIR] [RUNS] [--no-zebra|--zebra-only]   (RUNS: default 3)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top}" && pwd)
runs=${2:-3}
zebra=${3:-}
tmp=$(mktemp -d /tmp/lcfib-bench-fpm.XXXXXX)
chmod 0755 "$tmp"
ns_pid=
# shellcheck source=tests/bench/lib.sh
. "$top/tests/bench/lib.sh"
trap bench_cleanup EXIT

send=("python3" "$top/tests/e2e/fpm_send.py")
ctl() { python3 "$top/tests/e2e/ctl.py" "$tmp/sock" "$@"; }
now() { date +%s.%N; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
full=$top/tests/data/fullview-2024.txt.gz
n=1062046
v4=901899
v6=160147

# start_fpm_lcfibd [WRAP...]: a fresh lcfibd with the FPM feed on $port.
settle=5000
start_fpm_lcfibd()
{
	start_lcfibd "$(printf '{"lcfib:lcfib":{"feeds":{"fpm":{"enabled":true,"port":%s,"replay-settle":%s}}}}' \
		"$port" "$settle")" "$@"
}
peak_rss_mib() { awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$(cat "$tmp/lcfibd.pid")/status"; }
# cpu_s NAME: user+system seconds of the process in $tmp/NAME.pid, every thread.
cpu_s()
{
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$(cat "$tmp/$1.pid")/stat"
}
held() { echo $(($(ctl value /lcfib:lcfib/state/routes/ipv4) + $(ctl value /lcfib:lcfib/state/routes/ipv6))); }

echo "# bench_fpm: the full table, $n routes; best of $runs; $(nproc) cpus, $(uname -r)"
printf '%-52s %8s %12s %9s %9s\n' what seconds routes/s peak-MiB lcfibd-cpu
row() { printf '%-52s %8.3f %12.0f %9s %9s\n' "$1" "$2" "$(echo "$3 / $2" | bc -l)" "$4" "$5"; }
if [ "$zebra" != --zebra-only ]; then
echo "# building the streams..."
"${send[@]}" --save "$tmp/plain.fpm" bulk "$full" >/dev/null
"${send[@]}" --save "$tmp/nhg.fpm" bulk "$full" --nhg 100 >/dev/null
"${send[@]}" --save "$tmp/x64.fpm" bulk "$full" --per-frame 64 >/dev/null
"${send[@]}" --save "$tmp/update.fpm" bulk "$full" --update --nhg 100 >/dev/null

for stream in plain nhg x64; do
	case $stream in
	plain) what="sender: 1 route a frame (zebra's framing)" ;;
	nhg) what="sender: 1 route a frame, nexthop objects" ;;
	x64) what="sender: 64 routes a frame" ;;
	esac
	results=()
	for _ in $(seq "$runs"); do
		start_fpm_lcfibd
		out=$("${send[@]}" --port "$port" --wait-routes "$tmp/sock" "$n" replay "$tmp/$stream.fpm" | tail -1)
		t=$(echo "$out" | sed -E 's/.* ([0-9.]+) s after the first frame.*/\1/')
		results+=("$t $(peak_rss_mib) $(cpu_s lcfibd)")
		stop_pid lcfibd
	done
	read -r t rss cpu < <(printf '%s\n' "${results[@]}" | sort -n | head -1)
	row "$what" "$t" "$n" "$rss" "$cpu"
done

# Updates: the table is there (one anonymous nexthop per family); the
# update stream moves every route onto an object; done when no route keeps
# an anonymous nexthop.
results=()
for _ in $(seq "$runs"); do
	start_fpm_lcfibd
	"${send[@]}" --port "$port" --wait-routes "$tmp/sock" "$n" replay "$tmp/plain.fpm" >/dev/null
	c0=$(cpu_s lcfibd)
	t0=$(now)
	"${send[@]}" --port "$port" replay "$tmp/update.fpm" >/dev/null
	while [ "$(ctl value /lcfib:lcfib/state/routes/nexthops)" != 0 ]; do sleep 0.02; done
	t1=$(now)
	[ "$(held)" = "$n" ] || { echo "lcfibd holds $(held) routes after the updates" >&2; exit 1; }
	results+=("$(echo "$t1 - $t0" | bc -l) $(peak_rss_mib) $(echo "$(cpu_s lcfibd) - $c0" | bc -l)")
	stop_pid lcfibd
done
read -r t rss cpu < <(printf '%s\n' "${results[@]}" | sort -n | head -1)
row "sender: updates, DEL+NEW a frame, new connection" "$t" "$n" "$rss" "$cpu"

# The same updates on the replay's connection once it settled (300 ms
# without a message): outside a sync, the FIB out of bulk mode.
results=()
settle=300
for _ in $(seq "$runs"); do
	start_fpm_lcfibd
	out=$("${send[@]}" --port "$port" --wait-routes "$tmp/sock" "$n" replay "$tmp/plain.fpm" \
		--then "$tmp/update.fpm" --until /lcfib:lcfib/state/routes/nexthops 0 | tail -1)
	t=$(echo "$out" | sed -E 's/.* ([0-9.]+) s after its first byte.*/\1/')
	[ "$(held)" = "$n" ] || { echo "lcfibd holds $(held) routes after the updates" >&2; exit 1; }
	results+=("$t $(peak_rss_mib) -") # its CPU time is the load's too
	stop_pid lcfibd
done
settle=5000
read -r t rss cpu < <(printf '%s\n' "${results[@]}" | sort -n | head -1)
row "sender: updates, DEL+NEW a frame, outside a sync" "$t" "$n" "$rss" "$cpu"
fi

# ------------------------------------------------------------------ zebra
if [ "$zebra" = --no-zebra ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || [ ! -x /usr/lib/frr/zebra ] || ! id frr >/dev/null 2>&1; then
	echo "# zebra: skipped (needs root and Debian's frr package)"
	exit 0
fi
ns() { nsenter -t "$ns_pid" -n "$@"; }
unshare -n sleep 100000 &
ns_pid=$!
# unshare -n unshares after the fork: till then nsenter enters ours
while [ "$(readlink /proc/$ns_pid/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do sleep 0.01; done
ns ip link set lo up
chown frr:frr "$tmp"
echo "# zebra: loading the table into the namespace's kernel (ip -batch, about a minute)..."
zcat "$full" | tr -d '\r' | sed 's/^/route add blackhole /; s/$/ proto static/' >"$tmp/kernel.batch"
ns ip -batch "$tmp/kernel.batch"

# zebra_run FPM(yes|no) NHG(yes|no): starts zebra; returns once it is up.
zebra_run()
{
	{
		echo "hostname zebra"
		echo "log file $tmp/zebra.log warnings"
		if [ "$1" = yes ]; then
			echo "fpm address 127.0.0.1 port $port"
			[ "$2" = no ] && echo "no fpm use-next-hop-groups"
		fi
	} >"$tmp/zebra.conf"
	local mod=()
	[ "$1" = yes ] && mod=(-M dplane_fpm_nl)
	ns /usr/lib/frr/zebra "${mod[@]}" -f "$tmp/zebra.conf" -i "$tmp/zebra.pid" -z "$tmp/zserv.api" \
		--vty_socket "$tmp" >>"$tmp/zebra.out" 2>&1 &
	for _ in $(seq 200); do [ -s "$tmp/zebra.pid" ] && return; sleep 0.05; done
	echo "zebra did not start:" >&2
	cat "$tmp/zebra.out" >&2
	exit 1
}
rib_kernel()
{
	vtysh --vty_socket "$tmp" -c "show $1 route summary" 2>/dev/null | awk '/^kernel/ { print $2 }'
}

t0=$(now)
zebra_run no no
until [ "$(rib_kernel ip)" = "$v4" ] && [ "$(rib_kernel ipv6)" = "$v6" ]; do sleep 0.2; done
t=$(echo "$(now) - $t0" | bc -l)
zcpu=$(cpu_s zebra)
stop_pid zebra
printf '%-52s %8.3f %12.0f %9s %9s   zebra-cpu %s\n' "zebra alone: its RIB holds the table" "$t" \
	"$(echo "$n / $t" | bc -l)" - - "$zcpu"

for nhg in yes no; do
	start_fpm_lcfibd nsenter -t "$ns_pid" -n
	t0=$(now)
	zebra_run yes "$nhg"
	until [ "$(held)" = "$n" ]; do sleep 0.2; done
	t=$(echo "$(now) - $t0" | bc -l)
	zcpu=$(cpu_s zebra)
	printf '%-52s %8.3f %12.0f %9s %9s   zebra-cpu %s\n' \
		"zebra -> lcfibd over FPM, nexthop groups $([ "$nhg" = yes ] && echo on || echo off)" \
		"$t" "$(echo "$n / $t" | bc -l)" "$(peak_rss_mib)" "$(cpu_s lcfibd)" "$zcpu"
	stop_pid zebra
	stop_pid lcfibd
done

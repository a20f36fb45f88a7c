#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# How far behind the kernel lcfibd's kernel feed runs. In a new network
# namespace (veth v0 198.18.0.1/24 and 2001:db8:ff::1/64), lcfibd mirrors
# the kernel while `ip -batch` adds routes of the full view via gateways on
# v0; the figure is the time from the end of ip -batch until lcfibd holds
# as many routes as the kernel (its state's routes, polled every 10 ms).
# Then a second lcfibd starts on the loaded kernel: the time from its start
# until it holds the same routes, and the time its dump took on the netlink
# socket (the log's "dump done in"). For scale, the same ip -batch into a
# namespace where no lcfibd listens.
#
# Usage: tests/bench/bench_kernel.sh [BUILDDIR] [SIZES]   (root, for ip netns)
# SIZES: IPv4 route counts, "full" for the whole view with its IPv6 part
# (default "100000 full"; the kernel takes ~40 s or more for the full view).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top}" && pwd)
sizes=${2:-100000 full}
python=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
tmp=$(mktemp -d /tmp/lcfib-bench-kernel.XXXXXX)
ns=lcfibbench$$
daemon_pid=

cleanup()
{
	[ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

ns_new()
{
	ip netns del "$ns" 2>/dev/null || true
	ip netns add "$ns"
	# No DAD: v0's link-local address and its routes come at once, so the
	# kernel's count before the batch is the one the batch adds to.
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0
	ip -n "$ns" link set lo up
	ip -n "$ns" link add v0 type veth peer name v1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.v1.disable_ipv6=1
	ip -n "$ns" addr add 198.18.0.1/24 dev v0
	ip -n "$ns" -6 addr add 2001:db8:ff::1/64 dev v0 nodad
	ip -n "$ns" link set v0 up
	ip -n "$ns" link set v1 up
	sleep 1
}

# start_daemon NAME: lcfibd in the namespace, the kernel feed on; its log in $tmp/NAME/log.
start_daemon()
{
	local dir=$tmp/$1
	mkdir -p "$dir/state"
	echo '{"lcfib:lcfib":{"feeds":{"kernel":{"enabled":true}}}}' >"$dir/state/lcfibd.json"
	ip netns exec "$ns" "$build/daemon/lcfibd" -f -s "$dir/sock" -S "$dir/state" \
		-p "$dir/pid" -y "$top/yang" -d info 2>>"$dir/log" &
	daemon_pid=$!
	for _ in $(seq 200); do
		[ -S "$dir/sock" ] && "$python" "$top/tests/e2e/ctl.py" "$dir/sock" value \
			/lcfib:lcfib/state/daemon/pid >/dev/null 2>&1 && return
		sleep 0.05
	done
	echo "lcfibd did not start:" >&2
	cat "$dir/log" >&2
	exit 1
}

stop_daemon()
{
	kill "$daemon_pid"
	wait "$daemon_pid" || true
	daemon_pid=
}

kernel_routes()
{
	echo $(($(ip -n "$ns" -o -4 route show table all | wc -l) +
		$(ip -n "$ns" -o -6 route show table all | wc -l)))
}

# lag SOCK WANT [CMD...]: runs CMD (if any), then polls lcfibd every 10 ms
# until it holds WANT routes; prints "CMD-SECONDS LAG-SECONDS HELD-AT-END-OF-CMD".
lag()
{
	"$python" - "$@" <<'EOF'
import os, subprocess, sys, time
sys.path.insert(0, os.environ["TOP"] + "/tests/e2e")
import ctl
sock, want, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
c = ctl.Conn(sock)
def held():
    r = c.state("/lcfib:lcfib/state/routes").get("routes", {})
    return int(r.get("ipv4", 0)) + int(r.get("ipv6", 0))
t = time.monotonic()
if cmd:
    subprocess.run(cmd, check=True)
t0 = time.monotonic()
at_end = held()
n = at_end
while n != want:
    if time.monotonic() - t0 > 120:
        sys.exit("lcfibd holds %d routes after 120 s, not %d" % (n, want))
    time.sleep(0.01)
    n = held()
print("%.3f %.3f %d" % (t0 - t, time.monotonic() - t0, at_end))
EOF
}

# verify SOCK: once the counts agree (the figures), the routes themselves
# must (the oracle of tests/e2e, on samples of a full table); not timed.
verify()
{
	"$python" "$top/tests/e2e/kernel_oracle.py" converge "$1" "$ns" 60 --sample=12,1 \
		>"$tmp/verify" || { cat "$tmp/verify" >&2; exit 1; }
}

export TOP=$top
echo "# bench_kernel: lcfibd's kernel feed behind ip -batch; $(nproc) cpus, $(uname -r)"
printf '%-8s %9s %10s %11s %8s %16s %12s %10s %8s\n' routes alone-s ip-batch-s kernel-rt/s \
	lag-ms held-at-end start-to-eq-s eq-rt/s dump-ms
for size in $sizes; do
	if [ "$size" = full ]; then
		"$python" "$top/tests/e2e/kernel_oracle.py" batch "$top/tests/data/fullview-2024.txt.gz" \
			all all 1 >"$tmp/routes.batch"
	else
		"$python" "$top/tests/e2e/kernel_oracle.py" batch "$top/tests/data/fullview-2024.txt.gz" \
			"$size" 0 1 >"$tmp/routes.batch"
	fi
	n=$(wc -l <"$tmp/routes.batch")
	ns_new
	t0=$(date +%s.%N)
	ip -n "$ns" -batch "$tmp/routes.batch"
	alone=$(echo "$(date +%s.%N) - $t0" | bc -l)
	ns_new
	base=$(kernel_routes)
	start_daemon a
	read -r tb lag held < <(lag "$tmp/a/sock" $((base + n)) \
		ip -n "$ns" -batch "$tmp/routes.batch")
	[ "$(kernel_routes)" = $((base + n)) ] || { echo "the kernel holds $(kernel_routes)" >&2; exit 1; }
	verify "$tmp/a/sock"
	stop_daemon
	# The same routes from a dump: a new lcfibd on the loaded kernel.
	t0=$(date +%s.%N)
	start_daemon b
	lag "$tmp/b/sock" $((base + n)) >/dev/null
	eq=$(echo "$(date +%s.%N) - $t0" | bc -l)
	verify "$tmp/b/sock"
	stop_daemon
	dms=$(sed -n 's/.*kernel feed: dump done in \([0-9]*\) ms.*/\1/p' "$tmp/b/log" | head -1)
	printf '%-8s %9.1f %10.1f %11.0f %8.0f %16s %12.2f %10.0f %8s\n' "$n" "$alone" "$tb" \
		"$(echo "$n / $tb" | bc -l)" "$(echo "$lag * 1000" | bc -l)" "$held/$((base + n))" \
		"$eq" "$(echo "$n / $eq" | bc -l)" "$dms"
	rm -rf "$tmp/a" "$tmp/b"
done

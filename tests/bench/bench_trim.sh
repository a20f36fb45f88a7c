#!/usr/bin/env bash
# The daemon's resident memory against its live bytes around a full-view
# load: after the load, after `flush family ipv4`, and after loading the
# IPv4 routes again; each figure read once the daemon has settled (1 s idle).
# RSS is VmRSS from /proc/PID/status; live, slab and slab-free bytes, the
# released bytes and trims come from `show state memory`.
# Usage: tests/bench/bench_trim.sh [BUILDDIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top}" && pwd)
tmp=$(mktemp -d /tmp/lcfib-trim.XXXXXX)
trap 'kill "$(cat "$tmp/pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$tmp"' EXIT

zcat "$top/tests/data/fullview-2024.txt.gz" | tr -d '\r' | sed 's/^/route add blackhole /' >"$tmp/routes.batch"
grep -v ':' "$tmp/routes.batch" >"$tmp/routes4.batch"
ctl() { "$build/cli/lcfibctl" -s "$tmp/sock" -y "$top/yang" "$@"; }

"$build/daemon/lcfibd" -f -s "$tmp/sock" -S "$tmp/state" -p "$tmp/pid" -y "$top/yang" \
	-d warning 2>>"$tmp/daemon.log" &
for _ in $(seq 100); do ctl show config >/dev/null 2>&1 && break; sleep 0.05; done

mib() { echo "scale=1; $1 / 1048576" | bc -l; }
row() {
	local rss mem
	sleep 1
	rss=$(awk '/VmRSS/ { print $2 * 1024 }' "/proc/$(cat "$tmp/pid")/status")
	mem=$(ctl --json show state memory | python3 -c '
import json, sys
m = json.load(sys.stdin)["lcfib:lcfib"]["state"]["memory"]
print(m["live-bytes"], m["slab-bytes"], m["slab-free-bytes"],
      m.get("slab-released-bytes", 0), m.get("trims", 0))')
	read -r live slab free rel trims <<<"$mem"
	printf '%-26s %9s %9s %9s %9s %9s %6s %7s\n' "$1" "$(mib "$rss")" "$(mib "$live")" \
		"$(mib "$slab")" "$(mib "$free")" "$(mib "$rel")" "$trims" \
		"$(echo "scale=2; $rss / $live" | bc -l)"
}
printf '%-26s %9s %9s %9s %9s %9s %6s %7s\n' "after" "RSS MiB" "live MiB" "slab MiB" \
	"free MiB" "rel. MiB" trims RSS/live
row "start"
ctl -q load "$tmp/routes.batch" transient >/dev/null
row "full-view load"
ctl -q flush family ipv4 >/dev/null
row "flush ipv4"
ctl -q load "$tmp/routes4.batch" transient >/dev/null
row "reload of ipv4"

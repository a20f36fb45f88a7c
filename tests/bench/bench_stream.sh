#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# lcfibd as a lookup service on the full table, streamed against the
# per-request path, in one run (ratios; this machine is shared and noisy):
#
#   lookups: lcfibctl reading N `lookup ADDRESS` commands from stdin (one
#            request each, as scripts did), against `lookup -f FILE` with a
#            million addresses (one stream), text and --json;
#   listing: `routes limit 10000000 format json` (the RPC's one document,
#            which lcfibctl parses whole with libyang) against the streamed
#            text and JSON lines.
#
# Prints each figure with lcfibctl's peak memory and the daemon's RSS
# before and after. Usage: tests/bench/bench_stream.sh [BUILDDIR [N]]
# (N: the per-request lookups, default 20000). Needs GNU time.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
n_single=${2:-20000}
tmp=$(mktemp -d)
ns_pid=
# shellcheck source=tests/bench/lib.sh
. "$top/tests/bench/lib.sh"
trap bench_cleanup EXIT

CTL=("$build/cli/lcfibctl" -s "$tmp/sock" -y "$top/yang")
ctl() { "${CTL[@]}" "$@"; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$(cat "$tmp/lcfibd.pid")/status"; }

# timed NAME UNITS COUNT CMD...: runs CMD (stdout to /dev/null), prints a
# line: name, seconds, units per second, lcfibctl's peak KiB, daemon RSS KiB
# before and after.
timed()
{
	local name=$1 units=$2 count=$3 before after t0 t1 peak
	shift 3
	before=$(rss)
	t0=$(date +%s%N)
	# 5: the last lookup found no route, which is an answer too
	/usr/bin/time -q -f %M -o "$tmp/peak" "$@" >/dev/null || [ $? = 5 ] || {
		echo "$name: $* failed" >&2
		exit 1
	}
	t1=$(date +%s%N)
	after=$(rss)
	peak=$(cat "$tmp/peak")
	awk -v n="$name" -v u="$units" -v c="$count" -v ns=$((t1 - t0)) -v p="$peak" \
		-v b="$before" -v a="$after" 'BEGIN {
		s = ns / 1e9
		printf "%-44s %8.3f s %12.0f %s/s  lcfibctl %7d KiB  lcfibd %d -> %d KiB\n",
			n, s, c / s, u, p, b, a }'
}

zcat "$top/tests/data/fullview-2024.txt.gz" >"$tmp/full.txt"
start_lcfibd '{"lcfib:lcfib":{}}'
ctl -q load "$tmp/full.txt" transient >/dev/null
echo "# full table: $(ctl routes summary | awk '$1 == "total" { print $2 }') routes; $(nproc) CPUs"

# A million addresses: random IPv4, IPv6 within the table's prefixes (seeded).
python3 - "$tmp/full.txt" >"$tmp/addrs" <<'EOF'
import ipaddress, random, sys
rng = random.Random(1)
v6 = [l.strip() for l in open(sys.argv[1]) if ":" in l]
for i in range(1000000):
    if rng.random() < 0.85:
        print(ipaddress.IPv4Address(rng.getrandbits(32)))
    else:
        net = ipaddress.ip_network(rng.choice(v6))
        print(net.network_address + rng.getrandbits(128 - net.prefixlen))
EOF
head -n "$n_single" "$tmp/addrs" | sed 's/^/lookup /' >"$tmp/commands"

echo "== lookups"
timed "per request: $n_single lookup commands" lookups "$n_single" "${CTL[@]}" <"$tmp/commands"
timed "streamed: lookup -f (1M, text)" lookups 1000000 "${CTL[@]}" lookup -f "$tmp/addrs"
timed "streamed: --json lookup -f (1M, JSON lines)" lookups 1000000 "${CTL[@]}" --json lookup -f "$tmp/addrs"
echo "== listing the full table"
timed "one document: routes format json" routes 1062046 "${CTL[@]}" routes limit 10000000 format json
timed "streamed: routes (text)" routes 1062046 "${CTL[@]}" routes limit 10000000
timed "streamed: --json routes (JSON lines)" routes 1062046 "${CTL[@]}" --json routes limit 10000000
stop_pid lcfibd

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of lcfibd's kernel feed, with the kernel as the oracle.
# Each test makes a network namespace (ip netns: this kernel has no dummy
# netdev, so a veth pair, v0 198.18.0.1/24 and 2001:db8:ff::1/64, v1 its
# peer), runs lcfibd in it with the feed enabled, changes the kernel's
# routes with ip, and waits until lcfibd holds what `ip -N -j route show
# table all` shows (tests/e2e/kernel_oracle.py compares every table, both
# families: type, protocol, scope, metric, nexthop id and paths). The local
# table's local and broadcast routes and IPv6's multicast ones are mirrored
# and compared like the rest: with no table configured the feed takes all.
#
# Needs root (network namespaces), iproute2, python3; setpriv (util-linux)
# for the unprivileged test. One test loads the full IPv4 table (the
# kernel takes ~35 s); the others work on a few thousand routes.
# LCFIB_STRESS (a float, default 1) scales every volume (TSan: 0.05);
# E2E_ONLY=REGEX runs some tests (lib.sh).

# shellcheck disable=SC2317 # functions run through t_run
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || e2e_skip_all "needs root, to make network namespaces"
command -v ip >/dev/null || e2e_skip_all "needs iproute2's ip"
ip netns add "lcfibk-probe$$" 2>/dev/null || e2e_skip_all "cannot make a network namespace"
ip netns del "lcfibk-probe$$"
e2e_init

ORACLE=$E2E_HELPERS/kernel_oracle.py
# How long convergence may take before a test fails: only so that a broken
# feed cannot hang the run; nothing asserts a time (see tests/bench).
CONVERGE_S=${CONVERGE_S:-60}
STRESS=${LCFIB_STRESS:-1}
NS=

# scale N [MIN]: N scaled by LCFIB_STRESS, and at least MIN (100).
scale()
{
	awk -v n="$1" -v s="$STRESS" -v m="${2:-100}" \
		'BEGIN { v = int(n * s); print (v < m ? m : v) }'
}

# The smaller tests' routes: the kernel loads them in well under a second.
SMALL4=$(scale 4000)
SMALL6=$(scale 1000)

# ------------------------------------------------------------------ helpers

# ns_new: a namespace for this test in $NS, with lo up and the veth pair,
# removed when the test ends (with its daemons).
ns_new()
{
	NS=lcfibk$$-${RANDOM}
	ip netns add "$NS" || fail "ip netns add $NS"
	trap 'd_kill_mine; ip netns del "$NS" 2>/dev/null' EXIT
	ip -n "$NS" link set lo up
	# No DAD: link-local addresses come at once, not as a late address
	# change (a resync) in the middle of a test.
	in_ns sysctl -qw net.ipv6.conf.default.accept_dad=0
	ip -n "$NS" link add v0 type veth peer name v1
	# No IPv6 on v1: its fe80::/64 and ff00::/8 would be second routes of
	# v0's prefix and metric (see test_ipv6_routes_of_one_prefix_on_two_links).
	in_ns sysctl -qw net.ipv6.conf.v1.disable_ipv6=1
	ip -n "$NS" addr add 198.18.0.1/24 dev v0
	ip -n "$NS" -6 addr add 2001:db8:ff::1/64 dev v0 nodad
	ip -n "$NS" link set v0 up
	ip -n "$NS" link set v1 up
}

# in_ns CMD...: CMD in the test's namespace.
in_ns() { ip netns exec "$NS" "$@"; }

# k_start NAME [JSON-OF-THE-KERNEL-CONTAINER]: lcfibd in the namespace with
# the kernel feed enabled by its config file ($K_WRAP goes before it; its
# files belong to $K_OWNER when set).
k_start()
{
	local name=$1 kcfg=${2:-'{"enabled":true}'} dir
	dir=$(d_dir "$name")
	mkdir -p "$dir/state"
	chmod 0755 "$dir" "$dir/state"
	printf '{"lcfib:lcfib":{"feeds":{"kernel":%s}}}\n' "$kcfg" >"$dir/state/lcfibd.json"
	[ -z "${K_OWNER:-}" ] || chown -R "$K_OWNER:$K_OWNER" "$dir"
	D_WRAP="ip netns exec $NS ${K_WRAP:-}" d_start "$name" || fail "lcfibd $name did not start"
}

# converge NAME: waits until lcfibd NAME holds the kernel's routes.
converge()
{
	"$PYTHON" "$ORACLE" converge "$(d_sock "$1")" "$NS" "$CONVERGE_S" ||
		fail "lcfibd $1 does not mirror the kernel (above)"
}

# batch FILE N4 N6 [STRIDE]: an ip -batch file of full-view prefixes via
# v0's gateways. Made once per N4 N6 STRIDE (reading the full view takes
# a second or two), in $T, which the tests' subshells share.
batch()
{
	local made=$T/batch-$2-$3-${4:-1}
	if [ ! -s "$made" ]; then
		"$PYTHON" "$ORACLE" batch "$FULLVIEW_GZ" "$2" "$3" 7 "${4:-1}" >"$made.tmp" &&
			mv "$made.tmp" "$made" || fail "cannot write $1"
	fi
	cp "$made" "$1" || fail "cannot write $1"
}

# kstate NAME LEAF: a leaf of the kernel feed's state (nothing when absent).
kstate()
{
	value "$(d_sock "$1")" "/lcfib:lcfib/state/feeds/feed[name='kernel']/$2" 2>/dev/null
}

log_has() { grep -Eq -- "$2" "$(d_log "$1")"; }

# A seed for the random choices: E2E_SEED, or a new one (printed by the test).
seed() { echo "${E2E_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"; }


# wait_routes SOCK N: waits until lcfibd holds N routes.
wait_routes()
{
	local i n
	for ((i = 0; i < CONVERGE_S * 10; i++)); do
		n=$(( $(value "$1" /lcfib:lcfib/state/routes/ipv4) + $(value "$1" /lcfib:lcfib/state/routes/ipv6) ))
		[ "$n" = "$2" ] && return 0
		sleep 0.1
	done
	fail "lcfibd holds $n routes, not $2"
}

# ------------------------------------------------------------------ tests

# full_check SOCK SEED: lcfibd on SOCK holds the kernel's routes: their
# count, all of them within the /12s of 4 random routes (listing 900k
# routes would take minutes), every other table in full; lookups agree.
full_check()
{
	"$PYTHON" "$ORACLE" count "$1" "$NS" "$CONVERGE_S" || fail "route counts differ (above)"
	"$PYTHON" "$ORACLE" converge "$1" "$NS" "$CONVERGE_S" --sample=4,"$2" ||
		fail "lcfibd does not mirror the kernel (above)"
	in_ns "$PYTHON" "$ORACLE" lookups "$1" "$(scale 1000)" "$2" ||
		fail "lookups disagree with ip route get fibmatch (above)"
}

test_the_full_table_from_ip_batch_is_mirrored_and_lookups_agree()
{
	local seed n4 ev
	seed=$(seed)
	echo "# seed $seed"
	ns_new
	# The IPv4 full view (scaled) and every 8th IPv6 prefix (20k).
	n4=$(scale 901899)
	[ "$n4" -lt 901899 ] || n4=all
	batch "$T/full.batch" "$n4" "$(scale 160147)" 1
	awk '!/:/ || NR % 8 == 0' "$T/full.batch" >"$T/full8.batch"
	# As events, while lcfibd runs: the first 100k routes (scaled). The
	# rest without it (the kernel adds routes at half the speed while a
	# listener takes each event), then from the first dump of a new lcfibd.
	ev=$(scale 100000)
	head -n "$ev" "$T/full8.batch" >"$T/ev.batch"
	tail -n +"$((ev + 1))" "$T/full8.batch" >"$T/rest.batch"
	k_start k
	SECONDS=0
	in_ns ip -batch "$T/ev.batch" || fail "ip -batch of $ev routes"
	echo "# ip -batch of $ev routes, as events: $SECONDS s"
	full_check "$(d_sock k)" "$seed"
	[ "$(kstate k dumps)" -ge 1 ] || fail "dumps is '$(kstate k dumps)', not 1 or more"
	d_stop k
	SECONDS=0
	in_ns ip -batch "$T/rest.batch" || fail "ip -batch of the full table"
	echo "# ip -batch of $(wc -l <"$T/rest.batch") more routes: $SECONDS s"
	k_start k2
	full_check "$(d_sock k2)" $((seed + 1))
}

# k_loaded NAME: the namespace with $SMALL4 IPv4 and $SMALL6 IPv6 routes,
# then lcfibd NAME started on them (they arrive by its first dump) and
# converged.
k_loaded()
{
	ns_new
	batch "$T/$1.batch" "$SMALL4" "$SMALL6" 16
	in_ns ip -batch "$T/$1.batch" || fail "ip -batch"
	k_start "$1" "${2:-}"
	converge "$1"
}

test_a_replaced_route_is_replaced_and_a_deleted_one_goes()
{
	local p4 p6
	k_loaded k
	p4=$(awk '$3 !~ /:/ { print $3; exit }' "$T/k.batch")
	p6=$(awk '$3 ~ /:/ { print $3; exit }' "$T/k.batch")
	# `ip route replace` sends a lone RTM_NEWROUTE with NLM_F_REPLACE.
	in_ns ip route replace "$p4" via 198.18.0.77 metric 0
	in_ns ip -6 route replace "$p6" via 2001:db8:ff::77 metric 1024
	in_ns ip route replace 192.0.2.0/24 via 198.18.0.78 # replace creates
	converge k
	# The same nexthop, another protocol: the FIB's identity of the route stays.
	in_ns ip route replace "$p4" via 198.18.0.77 metric 0 proto static
	converge k
	in_ns ip route del "$p4"
	in_ns ip -6 route del "$p6"
	# A thousand deletes in one burst.
	grep -v : "$T/k.batch" | sed -n '100,1100s/^route add \([^ ]*\) .*/route del \1/p' >"$T/del.batch"
	in_ns ip -batch "$T/del.batch" || fail "ip -batch of deletes"
	converge k
}

test_multipath_routes_are_mirrored_with_their_weights()
{
	k_loaded k
	in_ns ip route add 203.0.113.0/24 nexthop via 198.18.0.2 weight 2 nexthop via 198.18.0.3
	in_ns ip route add 203.0.114.0/24 metric 7 \
		nexthop via 198.18.0.4 nexthop via 198.18.0.5 nexthop via 198.18.0.6 weight 9
	in_ns ip -6 route add 2001:db8:100::/48 nexthop via 2001:db8:ff::2 nexthop via 2001:db8:ff::3
	converge k
	in_ns ip route replace 203.0.113.0/24 nexthop via 198.18.0.7 nexthop via 198.18.0.8 weight 3
	in_ns ip route del 203.0.114.0/24
	converge k
	# IPv6 paths come and go one by one (siblings).
	in_ns ip -6 route append 2001:db8:100::/48 via 2001:db8:ff::4
	converge k
	in_ns ip -6 route del 2001:db8:100::/48 via 2001:db8:ff::2
	converge k
}

test_routes_of_other_tables_are_mirrored()
{
	k_loaded k
	in_ns ip route add 10.0.0.0/8 via 198.18.0.2 table 100
	in_ns ip route add default via 198.18.0.3 table 100
	in_ns ip route add blackhole 10.9.0.0/16 table 4000000000
	in_ns ip -6 route add 2001:db8:1::/48 via 2001:db8:ff::2 table 100
	in_ns ip route add 10.0.0.0/8 via 198.18.0.4 table 253
	converge k
	in_ns ip route flush table 100
	converge k
}

test_nexthop_objects_and_the_routes_using_them_are_mirrored()
{
	local s
	k_loaded k
	s=$(d_sock k)
	in_ns ip nexthop add id 1 via 198.18.0.2 dev v0
	in_ns ip nexthop add id 2 via 198.18.0.3 dev v0
	in_ns ip nexthop add id 3 group 1/2,3
	in_ns ip nexthop add id 4 via 2001:db8:ff::2 dev v0
	in_ns ip nexthop add id 5 blackhole
	in_ns ip route add 203.0.113.0/24 nhid 1
	in_ns ip route add 203.0.114.0/24 nhid 3
	in_ns ip route add 203.0.115.0/24 nhid 5
	in_ns ip -6 route add 2001:db8:200::/48 nhid 4
	converge k
	# The routes follow their object.
	in_ns ip nexthop replace id 1 via 198.18.0.9 dev v0
	converge k
	# A member goes: the group loses it; routes using it directly go (IPv4 silently).
	in_ns ip nexthop add id 6 via 198.18.0.6 dev v0
	in_ns ip route add 203.0.116.0/24 nhid 6
	in_ns ip nexthop del id 2
	in_ns ip nexthop del id 6
	converge k
	expect_eq "$(kstate k nexthop-objects || echo 4)" 4 "nexthop objects the feed holds"
	# A group whose id is lower than its members' comes first in a dump.
	in_ns ip nexthop add id 100 via 198.18.0.5 dev v0
	in_ns ip nexthop add id 50 group 100
	in_ns ip route add 203.0.117.0/24 nhid 50
	d_stop k
	k_start k2
	converge k2
}

test_routes_through_a_link_that_goes_down_vanish()
{
	k_loaded k
	in_ns ip route add 203.0.113.0/24 dev v0 # a device route, no gateway
	converge k
	# The kernel removes the IPv4 routes through v0 without RTM_DELROUTE.
	in_ns ip link set v0 down
	converge k
	log_has k "resync" || fail "no resync in the log"
	in_ns ip link set v0 up
	converge k
}

test_routes_using_a_removed_address_vanish()
{
	k_loaded k
	# The last IPv4 address of v0: every IPv4 route through it goes, silently.
	in_ns ip addr del 198.18.0.1/24 dev v0
	converge k
}

test_lost_events_are_counted_and_a_resync_converges()
{
	local pid enobufs resyncs dumps
	# The smallest receive buffer: a burst while lcfibd is stopped overflows it.
	k_loaded k '{"enabled":true,"receive-buffer":65536}'
	pid=$(d_pid k)
	# Prefixes of several routes, for the sweep of one route of a prefix
	# whose other routes stay.
	in_ns ip route add 203.0.113.0/24 via 198.18.0.2
	in_ns ip route append 203.0.113.0/24 via 198.18.0.3
	in_ns ip route append 203.0.113.0/24 via 198.18.0.4
	in_ns ip route add 203.0.114.0/24 via 198.18.0.2
	in_ns ip route append 203.0.114.0/24 via 198.18.0.3
	converge k
	batch "$T/more.batch" "$(scale 20000 4000)" "$(scale 3000 500)" 3
	# Half of the new routes, deletes of half of the old ones, and changes
	# to the prefixes of several routes.
	{
		awk 'NR % 2 == 0' "$T/more.batch"
		sed -n 's/^route add \([^ ]*\) .*/route del \1/p' "$T/k.batch" | awk 'NR % 2 == 0'
		echo "route del 203.0.113.0/24 via 198.18.0.3"
		echo "route prepend 203.0.114.0/24 via 198.18.0.5"
		echo "route replace 203.0.114.0/24 via 198.18.0.6"
	} >"$T/burst.batch"
	# Counted before (a late address change may have made a resync already).
	enobufs=$(kstate k enobufs)
	resyncs=$(kstate k resyncs)
	dumps=$(kstate k dumps)
	[ -n "$enobufs" ] && [ -n "$resyncs" ] && [ -n "$dumps" ] ||
		fail "no enobufs, resyncs or dumps in the feed's state"
	kill -STOP "$pid"
	in_ns ip -force -batch "$T/burst.batch" >/dev/null 2>&1
	kill -CONT "$pid"
	converge k
	log_has k "events lost" || fail "no 'events lost' in the log"
	[ "$(kstate k enobufs)" -gt "$enobufs" ] || fail "enobufs still $enobufs"
	[ "$(kstate k resyncs)" -gt "$resyncs" ] || fail "resyncs still $resyncs"
	[ "$(kstate k dumps)" -gt "$dumps" ] || fail "dumps still $dumps"
	# The same counter as lcfibctl shows it ("feed kernel", then a line per counter).
	if have_cli; then
		expect_eq "$(cli "$(d_sock k)" show feeds | awk '
			$1 == "feed" { in_kernel = $2 == "kernel" }
			in_kernel && $1 == "enobufs" { print $2 }')" "$(kstate k enobufs)" \
			"enobufs in lcfibctl show feeds"
	fi
}

# Events lost while a delete waits on the socket: the add that followed
# it fell in the hole. The dump after the loss has the route; replaying the
# queued delete after it would take the route away for good.
test_a_delete_queued_before_lost_events_is_not_replayed_over_them()
{
	local pid
	k_loaded k '{"enabled":true,"receive-buffer":65536}'
	in_ns ip route add 203.0.113.0/24 via 198.18.0.2
	converge k
	batch "$T/flood.batch" "$(scale 20000 4000)" 0 3
	pid=$(d_pid k)
	kill -STOP "$pid"
	in_ns ip route del 203.0.113.0/24
	in_ns ip -force -batch "$T/flood.batch" >/dev/null 2>&1
	in_ns ip route add 203.0.113.0/24 via 198.18.0.2 # the very route: the delete would match it
	kill -CONT "$pid"
	converge k
	[ "$(kstate k enobufs)" -gt 0 ] || fail "no events were lost: the test did not test"
}

test_a_route_deleted_while_the_dump_runs_does_not_come_back()
{
	local pid
	ns_new
	batch "$T/k.batch" "$(scale 20000 5000)" 0 1
	in_ns ip -batch "$T/k.batch" || fail "ip -batch"
	sed -n 's/^route add \([^ ]*\) .*/route del \1/p' "$T/k.batch" | awk 'NR % 2 == 1' \
		>"$T/del.batch"
	# The deletes race the first dump: events held during it go after it.
	in_ns ip -batch "$T/del.batch" &
	pid=$!
	k_start k
	wait "$pid" || fail "ip -batch of deletes"
	converge k
}

test_turning_the_feed_off_flushes_its_routes_and_on_mirrors_again()
{
	local s
	k_loaded k
	s=$(d_sock k)
	ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"kernel":{"enabled":false}}}}' >/dev/null ||
		fail "cannot turn the feed off"
	wait_routes "$s" 0
	in_ns ip route add 203.0.113.0/24 via 198.18.0.2
	ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"kernel":{"enabled":true}}}}' >/dev/null ||
		fail "cannot turn the feed on"
	converge k
}

# show_both PREFIX: `ip route show PREFIX` and lcfibctl's `route show root
# PREFIX` (lcfibd in the namespace), trailing blanks cut, for a diff (ip
# leaves out "proto boot", lcfibctl does not).
show_both()
{
	in_ns ip route show root "$1" | sed 's/ *$//' >"$T/ip.out"
	cli "$(d_sock k)" route show root "$1" family ipv4 | sed -e 's/ *$//' -e 's/ proto boot//' \
		>"$T/lcfib.out"
}

# The kernel as the oracle of nexthop flags and the preferred source: a
# path through a link that goes down is listed "dead linkdown" (IPv4 keeps
# the route while one path lives), src is kept, an IPv6 gateway of an IPv4
# route is "via inet6", and lookups agree with ip route get fibmatch.
test_nexthop_flags_and_the_preferred_source_are_mirrored()
{
	local p i
	have_cli || t_skip "lcfibctl is not built"
	k_loaded k
	ip -n "$NS" link add vb type veth peer name vbp
	# IPv4 only: the links' fe80::/64 routes would only add noise
	in_ns sysctl -qw net.ipv6.conf.vb.disable_ipv6=1
	in_ns sysctl -qw net.ipv6.conf.vbp.disable_ipv6=1
	ip -n "$NS" addr add 198.19.5.1/24 dev vb
	ip -n "$NS" link set vb up
	ip -n "$NS" link set vbp up
	in_ns ip route add 10.200.0.0/16 nexthop via 198.18.0.2 dev v0 nexthop via 198.19.5.2 dev vb
	in_ns ip route add 10.201.0.0/16 via 198.18.0.2 dev v0 src 198.18.0.1
	in_ns ip route add 10.202.0.0/16 via inet6 fe80::2 dev v0
	converge k
	for p in 10.200.0.0/16 10.201.0.0/16 10.202.0.0/16; do
		show_both "$p"
		diff -u "$T/ip.out" "$T/lcfib.out" || fail "lcfibd's $p differs from the kernel's"
	done
	expect_match "$(cat "$T/lcfib.out")" "via inet6 fe80::2" "the IPv6 gateway of an IPv4 route"
	in_ns ip link set vb down
	in_ns ip route show 10.200.0.0/16 | grep -q dead || fail "the kernel kept the path alive"
	converge k
	for ((i = 0; i < CONVERGE_S * 10; i++)); do
		show_both 10.200.0.0/16
		cmp -s "$T/ip.out" "$T/lcfib.out" && break
		sleep 0.1
	done
	diff -u "$T/ip.out" "$T/lcfib.out" || fail "the dead path differs from the kernel's"
	expect_match "$(cat "$T/lcfib.out")" "dev vb weight 1 dead linkdown" "the dead path"
	fibmatch k 10.200.1.1 10.201.1.1 10.202.1.1
}

# Counters are counter64s: an off feed shows its totals, not zeros, and
# they go on from there when it is on again; what turning it off removed
# counts in flushed, not in swept.
test_feed_counters_survive_off_and_on_and_a_flush_is_not_a_sweep()
{
	local s msgs swept routes
	k_loaded k
	s=$(d_sock k)
	converge k
	msgs=$(kstate k messages)
	swept=$(kstate k swept)
	routes=$(kstate k routes)
	[ "${msgs:-0}" -gt 0 ] && [ "${routes:-0}" -gt 0 ] || fail "no messages or routes counted"
	ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"kernel":{"enabled":false}}}}' >/dev/null ||
		fail "cannot turn the feed off"
	wait_routes "$s" 0
	expect_eq "$(kstate k running)" false "running, off"
	expect_eq "$(kstate k messages)" "$msgs" "messages of the off feed"
	expect_eq "$(kstate k swept)" "$swept" "swept, after turning it off"
	expect_eq "$(kstate k flushed)" "$routes" "flushed: the routes turning it off removed"
	expect_eq "$(kstate k routes)" 0 "routes held by the off feed"
	ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"kernel":{"enabled":true}}}}' >/dev/null ||
		fail "cannot turn the feed on"
	converge k
	[ "$(kstate k messages)" -ge "$msgs" ] || fail "messages went back: $(kstate k messages) < $msgs"
	expect_eq "$(kstate k flushed)" "$routes" "flushed, on again"
	[ "$(kstate k dumps)" -ge 2 ] || fail "dumps: $(kstate k dumps), expected the two dumps"
}

test_only_the_configured_tables_are_mirrored()
{
	local s
	ns_new
	in_ns ip route add 10.0.0.0/8 via 198.18.0.2 table 100
	in_ns ip route add 10.0.0.0/8 via 198.18.0.3 table 200
	in_ns ip -6 route add 2001:db8:1::/48 via 2001:db8:ff::2 table 100
	k_start k '{"enabled":true,"table":[100]}'
	s=$(d_sock k)
	"$PYTHON" "$ORACLE" converge "$s" "$NS" "$CONVERGE_S" 100 || fail "table 100 (above)"
	# Tables given by name; the routes of table 100 are swept.
	ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"kernel":{"table":["main","local"]}}}}' \
		>/dev/null || fail "cannot set the tables"
	ctl "$s" edit delete "/lcfib:lcfib/feeds/kernel/table[.='100']" >/dev/null ||
		fail "cannot drop table 100"
	"$PYTHON" "$ORACLE" converge "$s" "$NS" "$CONVERGE_S" 254,255 || fail "tables main, local"
	ctl "$s" edit delete "/lcfib:lcfib/feeds/kernel/table" >/dev/null ||
		fail "cannot drop the tables"
	converge k
}

# rules_agree SOCK ADDRESS...: for each, `lcfibctl lookup` without a table
# and `ip route get fibmatch` in the namespace give the same type and prefix,
# or both no route.
rules_agree()
{
	local s=$1
	shift
	in_ns "$PYTHON" - "$LCFIBCTL" "$s" "$YANG_DIR" "$@" <<'EOF'
import ipaddress, json, subprocess, sys
ctl, sock, yang, bad = sys.argv[1], sys.argv[2], sys.argv[3], 0
for a in sys.argv[4:]:
    k = subprocess.run(["ip", "-j", "route", "get", "fibmatch", a], capture_output=True, text=True)
    if k.returncode:
        want = "no route"
    else:
        r = json.loads(k.stdout)[0]
        dst = r["dst"]
        if dst == "default":
            dst = "::/0" if ":" in a else "0.0.0.0/0"
        want = "%s %s" % (r.get("type", "unicast"), ipaddress.ip_network(dst))
    l = subprocess.run([ctl, "-s", sock, "-y", yang, "--json", "lookup", a],
                       capture_output=True, text=True)
    if l.returncode == 5:
        got = "no route"
    else:
        r = json.loads(l.stdout)["lcfib:lookup"]
        got = "%s %s" % (r.get("type", "unicast"), ipaddress.ip_network(r["prefix"]))
        got += " (table %s)" % r.get("table")
    print("%-16s kernel: %-28s lcfib: %s" % (a, want, got))
    bad += not got.startswith(want) or (want == "no route") != (got == "no route")
sys.exit(1 if bad else 0)
EOF
}

# Without a table a lookup asks local, main, then default, as the kernel's
# default rules do; a throw route in main goes on to default.
test_lookups_without_a_table_follow_the_kernels_rules()
{
	local s
	ns_new
	in_ns ip route add 10.0.0.0/8 via 198.18.0.2
	in_ns ip route add throw 10.6.0.0/16
	in_ns ip route add 10.6.0.0/15 via 198.18.0.3 table default
	in_ns ip route add throw 10.9.0.0/16
	in_ns ip route add 0.0.0.0/0 via 198.18.0.4 table default
	in_ns ip route add throw 10.8.0.0/16 table default
	in_ns ip -6 route add 2001:db8:5::/48 via 2001:db8:ff::2 table default
	k_start k '{"enabled":true,"table":["local","main","default"]}'
	s=$(d_sock k)
	"$PYTHON" "$ORACLE" converge "$s" "$NS" "$CONVERGE_S" 253,254,255 ||
		fail "tables local, main and default (above)"
	rules_agree "$s" 127.0.0.5 127.0.0.1 198.18.0.1 198.18.0.255 198.18.0.7 10.1.2.3 \
		10.6.1.1 10.7.1.1 10.9.1.1 10.8.1.1 192.0.2.1 ::1 2001:db8:ff::1 2001:db8:ff::9 \
		2001:db8:5::1 2001:db8:6::1 || fail "lookups and the kernel's fibmatch disagree (above)"
	# With a table, that table alone: main's throw route is what matches there.
	expect_match "$(cli "$s" lookup 10.6.1.1 table main)" "throw 10.6.0.0/16" "lookup in main"
}

test_an_unprivileged_lcfibd_mirrors_read_only()
{
	command -v setpriv >/dev/null || t_skip "setpriv is not installed (Debian: util-linux)"
	e2e_programs_for_nobody || fail "cannot copy lcfibd where nobody can run it"
	ns_new
	batch "$T/k.batch" "$SMALL4" "$SMALL6" 16
	K_OWNER=65534 K_WRAP="setpriv --reuid=65534 --regid=65534 --clear-groups --" k_start k
	in_ns ip -batch "$T/k.batch" || fail "ip -batch"
	converge k
	# Without CAP_NET_ADMIN the receive buffer stops at net.core.rmem_max.
	log_has k "bytes by SO_RCVBUF, not the [0-9]+ asked for" || fail "the capped receive buffer is not logged"
}

test_ipv6_routes_of_one_prefix_on_two_links_are_both_mirrored()
{
	ns_new
	in_ns sysctl -qw net.ipv6.conf.v1.disable_ipv6=0
	# IPv6 keeps routes of one prefix and metric on several links (fe80::/64
	# on every link): prepend (NLM_F_CREATE, no NLM_F_EXCL) makes a second one.
	in_ns ip -6 route add 2001:db8:77::/48 dev v0 metric 512
	in_ns ip -6 route prepend 2001:db8:77::/48 dev v1 metric 512 || fail "ip -6 route prepend"
	k_start k
	converge k
	in_ns ip -6 route add 2001:db8:78::/48 dev v0 metric 512
	in_ns ip -6 route prepend 2001:db8:78::/48 dev v1 metric 512 || fail "ip -6 route prepend"
	converge k
	in_ns ip -6 route del 2001:db8:77::/48 dev v1 metric 512
	converge k
}

test_routes_appended_to_one_prefix_are_all_mirrored()
{
	ns_new
	# IPv4 keeps them apart: append adds after, prepend before.
	in_ns ip route add 203.0.113.0/24 via 198.18.0.2
	in_ns ip route append 203.0.113.0/24 via 198.18.0.3
	in_ns ip route prepend 203.0.113.0/24 via 198.18.0.4
	in_ns ip route add 203.0.114.0/24 via 198.18.0.2 metric 5
	in_ns ip route append 203.0.114.0/24 dev v0 metric 5
	# IPv6 merges gateways into one multipath route.
	in_ns ip -6 route add 2001:db8:50::/48 via 2001:db8:ff::2
	in_ns ip -6 route append 2001:db8:50::/48 via 2001:db8:ff::3
	# From the first dump, then as events.
	k_start k
	converge k
	# As root the receive buffer goes past net.core.rmem_max (SO_RCVBUFFORCE).
	log_has k "kernel feed: receive buffer [0-9]+ bytes by SO_RCVBUFFORCE$" ||
		fail "the receive buffer's size is not logged, or is capped"
	in_ns ip route append 203.0.115.0/24 via 198.18.0.2
	in_ns ip route append 203.0.115.0/24 via 198.18.0.3
	in_ns ip route prepend 203.0.115.0/24 via 198.18.0.4
	in_ns ip -6 route prepend 2001:db8:50::/48 via 2001:db8:ff::4
	in_ns ip -6 route add 2001:db8:51::/48 via 2001:db8:ff::2
	in_ns ip -6 route append 2001:db8:51::/48 via 2001:db8:ff::3
	converge k
	in_ns ip route del 203.0.113.0/24 via 198.18.0.3
	in_ns ip route replace 203.0.115.0/24 via 198.18.0.5
	in_ns ip -6 route del 2001:db8:50::/48 via 2001:db8:ff::3
	converge k
	# Lookups agree on which route of a prefix wins.
	in_ns "$PYTHON" "$ORACLE" lookups "$(d_sock k)" 200 "$(seed)" ||
		fail "lookups disagree with ip route get fibmatch (above)"
}

# converge_ordered NAME [ARGS...]: converge, the routes of each prefix and
# the paths of each route in the kernel's order (`ip -6 route` lists
# siblings in the order they came).
converge_ordered()
{
	local n=$1
	shift
	"$PYTHON" "$ORACLE" converge "$(d_sock "$n")" "$NS" "$CONVERGE_S" "$@" --ordered ||
		fail "lcfibd $n does not hold the kernel's routes in its order (above)"
}

# fibmatch NAME ADDR...: ip route get fibmatch and lcfibd's lookup agree, paths in order.
fibmatch()
{
	local n=$1
	shift
	in_ns "$PYTHON" "$ORACLE" fibmatch "$(d_sock "$n")" "$@" ||
		fail "lcfibd $n and ip route get fibmatch disagree (above)"
}

# The IPv6 edits both multipath tests make, as ip -batch lines: siblings
# added, appended, prepended (the kernel appends them too) and taken out;
# a device route and other metrics beside them, a blackhole apart.
multipath6_edits()
{
	cat <<-EOF
		route add 2001:db8:60::/48 via 2001:db8:ff::2 dev v0 metric 1024
		route append 2001:db8:60::/48 via 2001:db8:ff::3 dev v0 metric 1024
		route prepend 2001:db8:60::/48 via 2001:db8:ff::4 dev v0 metric 1024
		route append 2001:db8:60::/48 metric 1024 nexthop via 2001:db8:ff::5 dev v0 weight 3 nexthop via 2001:db8:ff::6 dev v0
		route append 2001:db8:60::/48 dev v0 metric 1024
		route add 2001:db8:60::/48 via 2001:db8:ff::7 dev v0 metric 10
		route append 2001:db8:60::/48 via 2001:db8:ff::8 dev v0 metric 10
		route add 2001:db8:61::/48 metric 1024 nexthop via 2001:db8:ff::2 dev v0 nexthop via 2001:db8:ff::3 dev v0
		route append 2001:db8:61::/48 via 2001:db8:ff::4 dev v0 metric 1024
		route add 2001:db8:62::/48 dev v0 metric 1024
		route append 2001:db8:62::/48 via 2001:db8:ff::9 dev v0 metric 1024
		route add blackhole 2001:db8:63::/48 metric 1024
		route append 2001:db8:63::/48 via 2001:db8:ff::2 dev v0 metric 1024
		route del 2001:db8:61::/48 via 2001:db8:ff::2
		route del 2001:db8:60::/48 via 2001:db8:ff::3
		route del 2001:db8:60::/48 via 2001:db8:ff::7 metric 10
	EOF
}

MP6_ADDRS="2001:db8:60::1 2001:db8:61::1 2001:db8:62::1 2001:db8:63::1 2001:db8:60:ffff::1"

test_ipv6_multipath_from_add_and_append_is_mirrored_in_the_kernels_order()
{
	ns_new
	k_start k
	# As events: each line alone, as an operator types them.
	while read -r line; do
		# shellcheck disable=SC2086 # the words of the line
		in_ns ip -6 $line || fail "ip -6 $line"
	done < <(multipath6_edits)
	converge_ordered k
	fibmatch k $MP6_ADDRS
	# The first sibling goes; a replace takes the multipath route whole.
	in_ns ip -6 route del 2001:db8:60::/48 via 2001:db8:ff::2
	in_ns ip -6 route replace 2001:db8:61::/48 nexthop via 2001:db8:ff::7 dev v0 \
		nexthop via 2001:db8:ff::8 dev v0 weight 2
	in_ns ip -6 route del 2001:db8:62::/48 via 2001:db8:ff::9
	converge_ordered k
	fibmatch k $MP6_ADDRS
	# From a dump: a new lcfibd gets the same order.
	d_stop k
	k_start k2
	converge_ordered k2
	fibmatch k2 $MP6_ADDRS
}

test_an_ipv6_multipath_route_file_applies_as_ip_batch_does()
{
	local f
	ns_new
	# lcfibd's own FIB (no feed): the same file loaded into both.
	k_start k '{"enabled":false}'
	f=$T/multipath6.routes
	multipath6_edits >"$f"
	in_ns ip -6 -batch "$f" || fail "ip -6 -batch $f"
	ctl "$(d_sock k)" rpc "{\"lcfib:load\":{\"path\":\"$f\"}}" >/dev/null ||
		fail "lcfibd did not load $f"
	converge_ordered k --within=2001:db8:60::/44
	fibmatch k $MP6_ADDRS
	# What both refuse: a sibling again, a device-only nexthop in a multipath route.
	echo "route append 2001:db8:60::/48 via 2001:db8:ff::4 dev v0 metric 1024" >"$f.dup"
	echo "route add 2001:db8:64::/48 nexthop via 2001:db8:ff::2 dev v0 nexthop dev v0" \
		>"$f.devonly"
	for g in "$f.dup" "$f.devonly"; do
		! in_ns ip -6 -batch "$g" 2>/dev/null || fail "the kernel took $(cat "$g")"
		! ctl "$(d_sock k)" rpc "{\"lcfib:load\":{\"path\":\"$g\"}}" >/dev/null 2>&1 ||
			fail "lcfibd took $(cat "$g")"
	done
	converge_ordered k --within=2001:db8:60::/44
}

test_ipv6_routes_added_without_a_metric_get_1024_as_from_ip()
{
	local s f
	ns_new
	k_start k '{"enabled":false}'
	s=$(d_sock k)
	# A route file (no metric, metric 0), the route-add RPC, lcfibctl: as ip -6 route add.
	f=$T/metric.routes
	printf '%s\n' "route add 2001:db8:70::/48 via 2001:db8:ff::2 dev v0" \
		"route add 2001:db8:71::/48 via 2001:db8:ff::2 dev v0 metric 0" \
		"route add blackhole 2001:db8:72::/48" >"$f"
	in_ns ip -6 -batch "$f" || fail "ip -6 -batch $f"
	ctl "$s" rpc "{\"lcfib:load\":{\"path\":\"$f\"}}" >/dev/null || fail "lcfibd did not load $f"
	in_ns ip -6 route add 2001:db8:73::/48 via 2001:db8:ff::3 dev v0
	ctl "$s" rpc '{"lcfib:route-add":{"prefix":"2001:db8:73::/48",
		"nexthop":[{"gateway":"2001:db8:ff::3","interface":"v0"}]}}' >/dev/null ||
		fail "route-add"
	if have_cli; then
		in_ns ip -6 route add 2001:db8:74::/48 via 2001:db8:ff::4 dev v0
		cli "$s" route add 2001:db8:74::/48 via 2001:db8:ff::4 dev v0 ||
			fail "lcfibctl route add"
	fi
	converge_ordered k --within=2001:db8:70::/45
	# A delete without a metric takes any metric, in both.
	in_ns ip -6 route del 2001:db8:70::/48
	ctl "$s" rpc '{"lcfib:route-delete":{"prefix":"2001:db8:70::/48"}}' >/dev/null ||
		fail "route-delete without a metric"
	converge_ordered k --within=2001:db8:70::/45
}

t_run test_the_full_table_from_ip_batch_is_mirrored_and_lookups_agree
t_run test_a_replaced_route_is_replaced_and_a_deleted_one_goes
t_run test_multipath_routes_are_mirrored_with_their_weights
t_run test_routes_of_other_tables_are_mirrored
t_run test_nexthop_objects_and_the_routes_using_them_are_mirrored
t_run test_routes_through_a_link_that_goes_down_vanish
t_run test_routes_using_a_removed_address_vanish
t_run test_lost_events_are_counted_and_a_resync_converges
t_run test_a_delete_queued_before_lost_events_is_not_replayed_over_them
t_run test_a_route_deleted_while_the_dump_runs_does_not_come_back
t_run test_turning_the_feed_off_flushes_its_routes_and_on_mirrors_again
t_run test_feed_counters_survive_off_and_on_and_a_flush_is_not_a_sweep
t_run test_nexthop_flags_and_the_preferred_source_are_mirrored
t_run test_only_the_configured_tables_are_mirrored
t_run test_lookups_without_a_table_follow_the_kernels_rules
t_run test_an_unprivileged_lcfibd_mirrors_read_only
t_run test_ipv6_routes_of_one_prefix_on_two_links_are_both_mirrored
t_run test_routes_appended_to_one_prefix_are_all_mirrored
t_run test_ipv6_multipath_from_add_and_append_is_mirrored_in_the_kernels_order
t_run test_an_ipv6_multipath_route_file_applies_as_ip_batch_does
t_run test_ipv6_routes_added_without_a_metric_get_1024_as_from_ip
t_summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of lcfibd's FPM feed: routes and nexthop objects sent the
# way FRR zebra's dplane_fpm_nl sends them, first by our own sender
# (tests/e2e/fpm_send.py: exact scenarios, garbage, volume), then by a real
# zebra from Debian's frr package, run in a network namespace of its own with
# every file in the test's temp dir.
#
# Needs: bash, python3. The zebra tests also need root, unshare and nsenter
# (util-linux), iproute2 and frr (zebra, staticd, vtysh, dplane_fpm_nl);
# without them they are skipped, saying why. See tests/e2e/lib.sh for the
# harness (E2E_ONLY=REGEX runs some tests).

# shellcheck disable=SC2317 # functions run through t_run
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

SETTLE=300 # replay-settle of most tests, ms: short, so that sweeps come quickly
DEV=900    # an ifindex no host has: routes print "if900", the same everywhere

# ----------------------------------------------------------------- helpers

# wait_until WHAT CMD...: retries CMD until it succeeds. The bound (120 s)
# only keeps a broken daemon from hanging the run; nothing asserts a time.
wait_until()
{
	local what=$1 end=$((SECONDS + 120))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || fail "gave up waiting (120 s) until $what"
		sleep 0.05
	done
}

log_has() { grep -Eq -- "$2" "$(d_log "$1")"; }
log_count() { grep -Ec -- "$2" "$(d_log "$1")" || true; }
# log_count_ge NAME N REGEX: at least N lines match (for wait_until).
log_count_ge() { [ "$(log_count "$1" "$3")" -ge "$2" ]; }
# route_count_is SOCK N: the main table holds N routes (for wait_until).
route_count_is() { [ "$(show "$1" | wc -l)" = "$2" ]; }

# lcfib_has SOCK PREFIX: lcfibd's main table has a route of exactly PREFIX.
lcfib_has()
{
	PYTHONPATH=$E2E_HELPERS "$PYTHON" - "$1" "$2" <<'EOF'
import sys, ctl
ok, r = ctl.Conn(sys.argv[1]).rpc({"lcfib:routes": {"table": 254, "prefix": sys.argv[2]}})
assert ok, r
sys.exit(0 if any(rt["prefix"] == sys.argv[2] for rt in r["lcfib:routes"].get("route", [])) else 1)
EOF
}

# A TCP port nothing listens on (the kernel's pick), so that tests run side by side.
free_port()
{
	"$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A: the test's lcfibd, named for the test (logs are per daemon: a test
# counts its own lines).
A=
d_name() { A=d$(echo "${FUNCNAME[*]}" | md5sum | cut -c1-8); }

# fpm_start PORT [SETTLE] [ADDRESS] [MORE]: lcfibd $A with the FPM feed on
# from its config file; MORE: more feeds/fpm leaves (',"hold-time":1').
fpm_start()
{
	fpm_start_only "$@"
	log_has "$A" "FPM feed listening on .*:$1" || fail "no listening line in the log"
}

# fpm_start_only PORT [SETTLE] [ADDRESS] [MORE]: as fpm_start, whether it listens or not.
fpm_start_only()
{
	local port=$1 settle=${2:-$SETTLE} addr=${3:-127.0.0.1} more=${4:-} name
	d_name
	name=$A
	rm -f "$T/stage1" "$T/stage2"
	mkdir -p "$T/$name"
	printf '{"lcfib:lcfib":{"feeds":{"fpm":{"enabled":true,"address":"%s","port":%s,"replay-settle":%s%s}}}}\n' \
		"$addr" "$port" "$settle" "$more" >"$T/$name/config.json"
	d_start "$name" -c "$T/$name/config.json" || fail "lcfibd $name did not start"
}

# "${SEND[@]}" [OPTIONS...] script|bulk|probe ...: our FPM sender, in the
# background too (then $! is the sender itself).
SEND=()

# send PORT [OPTIONS...] script|bulk|probe ...
send() {
	local port=$1
	shift
	"$PYTHON" "$E2E_HELPERS/fpm_send.py" --port "$port" "$@"
}

# send_script PORT [OPTIONS...] <<EOF: a script from standard input.
send_script() {
	local port=$1
	shift
	send "$port" "$@" script -
}

# show SOCK [TABLE]: one line per route, in prefix order:
# "PREFIX TYPE metric M [nhid N] [via GW] [dev IF] [weight W][, via ...]".
show()
{
	PYTHONPATH=$E2E_HELPERS "$PYTHON" - "$1" "${2:-254}" <<'EOF'
import sys, ctl
ok, r = ctl.Conn(sys.argv[1]).rpc({"lcfib:routes": {"table": int(sys.argv[2]), "limit": 10000000}})
assert ok, r
for rt in r["lcfib:routes"].get("route", []):
    line = "%s %s metric %s" % (rt["prefix"], rt["type"], rt.get("metric", 0))
    if "nexthop-id" in rt:
        line += " nhid %s" % rt["nexthop-id"]
    hops = []
    for h in rt.get("nexthop", []):
        hops.append(" ".join(w for w in ("via %s" % h["gateway"] if "gateway" in h else "",
                                         "dev %s" % h["interface"] if "interface" in h else "",
                                         "weight %s" % h["weight"] if "weight" in h else "") if w))
    print(line + (" " + ", ".join(hops) if hops else ""))
EOF
}

# routes_total SOCK: IPv4 + IPv6 routes over all tables.
routes_total()
{
	echo $(($(value "$1" /lcfib:lcfib/state/routes/ipv4) + $(value "$1" /lcfib:lcfib/state/routes/ipv6)))
}

# expect_routes SOCK EXPECTED WHAT: the main table is exactly EXPECTED (show's lines).
expect_routes()
{
	local got
	got=$(show "$1") || fail "routes RPC failed"
	[ "$got" = "$2" ] || fail "$3: lcfibd holds
$got
expected
$2"
}

# wait_routes SOCK EXPECTED WHAT: as expect_routes, once the writer caught up.
wait_routes()
{
	local got end=$((SECONDS + 60))
	while :; do
		got=$(show "$1") || fail "routes RPC failed"
		[ "$got" = "$2" ] && return 0
		[ $SECONDS -lt $end ] || break
		sleep 0.05
	done
	fail "$3: after 60 s lcfibd holds
$got
expected
$2"
}

# fpm_value SOCK NAME: a leaf of the FPM feed's state.
fpm_value() { value "$1" "/lcfib:lcfib/state/feeds/feed[name='fpm']/$2"; }

# fpm_counter SOCK NAME EXPECTED: the FPM feed's counter NAME is EXPECTED.
fpm_counter()
{
	local v
	v=$(fpm_value "$1" "$2") || fail "no state feeds/feed[name='fpm']/$2"
	expect_eq "$v" "$3" "state feeds/feed[name='fpm']/$2"
}

# fpm_counter_is SOCK NAME EXPECTED: as fpm_counter, for wait_until.
fpm_counter_is() { [ "$(fpm_value "$1" "$2")" = "$3" ]; }

# ------------------------------------------------------------- our sender

test_fpm_routes_are_added_replaced_and_deleted()
{
	local port s
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	"${SEND[@]}" --port "$port" --hold 30 script - <<EOF &
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV metric 20
route add 2001:db8:1::/48 via 2001:db8::1 dev $DEV
route add 10.3.0.0/16 type blackhole
route add 10.4.0.0/16 type unreachable
wait $T/stage1
route replace 10.0.0.0/24 via 192.0.2.2 dev $DEV metric 20
wait $T/stage2
route del 10.0.0.0/24 via 192.0.2.2 dev $DEV metric 20
route del 10.4.0.0/16 type unreachable
EOF
	bg=$!
	wait_routes "$s" "10.0.0.0/24 unicast metric 20 via 192.0.2.1 dev if$DEV
10.3.0.0/16 blackhole metric 0
10.4.0.0/16 unreachable metric 0
2001:db8:1::/48 unicast metric 0 via 2001:db8::1 dev if$DEV" "after the adds"
	touch "$T/stage1"
	wait_routes "$s" "10.0.0.0/24 unicast metric 20 via 192.0.2.2 dev if$DEV
10.3.0.0/16 blackhole metric 0
10.4.0.0/16 unreachable metric 0
2001:db8:1::/48 unicast metric 0 via 2001:db8::1 dev if$DEV" "after the replace"
	touch "$T/stage2"
	wait_routes "$s" "10.3.0.0/16 blackhole metric 0
2001:db8:1::/48 unicast metric 0 via 2001:db8::1 dev if$DEV" "after the deletes"
	log_has "$A" "FPM peer 127.0.0.1:[0-9]+ connected" || fail "no connect line in the log"
	fpm_counter "$s" connects 1
	fpm_counter "$s" refused 0
	kill "$bg"
	d_stop "$A"
}

test_fpm_multipath_routes_keep_their_paths_and_weights()
{
	local port s
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	send_script "$port" <<EOF
route add 10.2.0.0/16 nexthop via 192.0.2.1 dev $DEV weight 1 nexthop via 192.0.2.2 dev 901 weight 3
route add 2001:db8:2::/48 nexthop via 2001:db8::1 dev $DEV nexthop via 2001:db8::2 dev $DEV
route add 10.5.0.0/16 nexthop via 2001:db8::9 dev $DEV weight 2 nexthop via 192.0.2.9 dev $DEV
EOF
	wait_routes "$s" "10.2.0.0/16 unicast metric 0 via 192.0.2.1 dev if$DEV weight 1, via 192.0.2.2 dev if901 weight 3
10.5.0.0/16 unicast metric 0 via 2001:db8::9 dev if$DEV weight 2, via 192.0.2.9 dev if$DEV weight 1
2001:db8:2::/48 unicast metric 0 via 2001:db8::1 dev if$DEV weight 1, via 2001:db8::2 dev if$DEV weight 1" \
		"multipath routes"
	d_stop "$A"
}

test_fpm_nexthop_objects_and_groups_resolve_routes()
{
	local port s
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	"${SEND[@]}" --port "$port" --hold 30 script - <<EOF &
nexthop add id 1 via 192.0.2.1 dev $DEV
nexthop add id 2 via 192.0.2.2 dev $DEV
nexthop add id 3 blackhole
nexthop add id 10 group 1/2,3
route add 10.1.0.0/16 nhid 10
route add 10.6.0.0/16 nhid 1
route add 10.7.0.0/16 nhid 3
wait $T/stage1
nexthop replace id 10 group 2
nexthop add id 1 via 192.0.2.11 dev $DEV
wait $T/stage2
nexthop del id 10
EOF
	bg=$!
	wait_routes "$s" "10.1.0.0/16 unicast metric 0 nhid 10 via 192.0.2.1 dev if$DEV weight 1, via 192.0.2.2 dev if$DEV weight 3
10.6.0.0/16 unicast metric 0 nhid 1 via 192.0.2.1 dev if$DEV
10.7.0.0/16 unicast metric 0 nhid 3" "routes through objects and a group"
	touch "$T/stage1"
	wait_routes "$s" "10.1.0.0/16 unicast metric 0 nhid 10 via 192.0.2.2 dev if$DEV
10.6.0.0/16 unicast metric 0 nhid 1 via 192.0.2.11 dev if$DEV
10.7.0.0/16 unicast metric 0 nhid 3" "after the group and an object changed"
	touch "$T/stage2"
	# As in the kernel, deleting an object deletes the routes that use it.
	wait_routes "$s" "10.6.0.0/16 unicast metric 0 nhid 1 via 192.0.2.11 dev if$DEV
10.7.0.0/16 unicast metric 0 nhid 3" "after the group's delete"
	kill "$bg"
	d_stop "$A"
}

# During a replay objects can come after what needs them: zebra's replay
# walks its hash of nexthop groups, so a group can come before one of its
# members, and routes zebra learns meanwhile can come before their group
# (both seen with FRR 8.4). They wait until the objects come; what still
# waits when the replay settles is dropped, counted and logged. Outside a
# replay a route through a missing object is refused at once.
test_fpm_objects_may_come_after_what_needs_them_in_a_replay()
{
	local port s
	port=$(free_port)
	# No settle until the test says so (it shortens replay-settle below).
	fpm_start "$port" 600000
	s=$(d_sock "$A")
	"${SEND[@]}" --port "$port" --hold 30 script - <<EOF &
nexthop add id 13 via 192.0.2.1 dev $DEV
nexthop add id 14 group 13/15
nexthop add id 16 group 15/17
nexthop add id 18 group 13/19
route add 10.1.0.0/16 nhid 20
route add 10.2.0.0/16 nhid 14
route add 10.3.0.0/16 nhid 16
route add 10.5.0.0/16 nhid 18
nexthop del id 18
route add 10.6.0.0/16 nhid 14
route add 10.6.0.0/16 via 192.0.2.9 dev $DEV
route add 10.7.0.0/16 nhid 14
route del 10.7.0.0/16
wait $T/stage1
nexthop add id 15 via 192.0.2.2 dev $DEV
nexthop add id 20 via 192.0.2.3 dev $DEV
wait $T/stage2
route add 10.9.0.0/16 nhid 99
EOF
	bg=$!
	# 14 and 16 wait for 15 (and 17), 20 has not come: a route waits for
	# each; 18 went with its route; later updates superseded 10.6's and 10.7's.
	wait_until "three objects and three routes wait" eval \
		'fpm_counter_is "$s" waiting-nexthop-objects 3 && fpm_counter_is "$s" waiting-routes 3'
	wait_routes "$s" "10.6.0.0/16 unicast metric 0 via 192.0.2.9 dev if$DEV" "while objects are awaited"
	fpm_counter "$s" nexthop-objects 1
	touch "$T/stage1"
	wait_routes "$s" "10.1.0.0/16 unicast metric 0 nhid 20 via 192.0.2.3 dev if$DEV
10.2.0.0/16 unicast metric 0 nhid 14 via 192.0.2.1 dev if$DEV weight 1, via 192.0.2.2 dev if$DEV weight 1
10.6.0.0/16 unicast metric 0 via 192.0.2.9 dev if$DEV" "once 15 and 20 came"
	fpm_counter "$s" waiting-nexthop-objects 1
	fpm_counter "$s" waiting-routes 1
	fpm_counter "$s" nexthop-objects 4
	fpm_counter "$s" routes 3
	fpm_counter "$s" apply-errors 0
	# The replay settles: group 16 never got member 17.
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"replay-settle":100}}}}'
	wait_until "the waiting group is dropped" log_has "$A" \
		"nexthop group 16: member 17 never came .*; dropped with the 1 routes through it"
	wait_until "nothing waits" eval \
		'fpm_counter_is "$s" waiting-nexthop-objects 0 && fpm_counter_is "$s" waiting-routes 0'
	fpm_counter "$s" apply-errors 2
	expect_match "$(fpm_value "$s" last-error)" "nexthop group 16: member 17 never came" "last-error"
	touch "$T/stage2"
	wait_until "the route through a missing object is refused" fpm_counter_is "$s" apply-errors 3
	expect_match "$(fpm_value "$s" last-error)" "10.9.0.0/16 .*nexthop id 99 does not exist" "last-error"
	fpm_counter "$s" waiting-routes 0
	expect_routes "$s" "10.1.0.0/16 unicast metric 0 nhid 20 via 192.0.2.3 dev if$DEV
10.2.0.0/16 unicast metric 0 nhid 14 via 192.0.2.1 dev if$DEV weight 1, via 192.0.2.2 dev if$DEV weight 1
10.6.0.0/16 unicast metric 0 via 192.0.2.9 dev if$DEV" "after the replay settled"
	kill "$bg"
	d_stop "$A"
}

# zebra sends a route's change as RTM_DELROUTE + RTM_NEWROUTE in one frame;
# IPv6's RTM_NEWROUTE has no NLM_F_REPLACE.
test_fpm_update_as_delete_and_add_in_one_frame()
{
	local port s
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	# Each update's delete is left out only where the add alone ends the
	# same (counted in coalesced): the first. Not the IPv6 prepend (it adds
	# a sibling), not a key the feed does not hold, not a key of two routes
	# (the add would replace the first, the delete names the other). The
	# last add is refused (a blackhole takes no gateway): its delete then
	# applies after it, and the prefix goes, as sent.
	send_script "$port" <<EOF
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV metric 20
route prepend 2001:db8:1::/48 via 2001:db8::1 dev $DEV metric 20
route add 10.9.0.0/24 via 192.0.2.1 dev $DEV metric 20
route append 10.9.0.0/24 via 192.0.2.3 dev $DEV metric 20
route del 10.0.0.0/24 via 192.0.2.1 dev $DEV metric 20 ; route add 10.0.0.0/24 via 192.0.2.2 dev $DEV metric 20
route del 2001:db8:1::/48 via 2001:db8::1 dev $DEV metric 20 ; route prepend 2001:db8:1::/48 via 2001:db8::2 dev $DEV metric 20
route del 10.8.0.0/16 metric 20 ; route add 10.8.0.0/16 via 192.0.2.8 dev $DEV metric 20
route del 10.9.0.0/24 via 192.0.2.3 dev $DEV metric 20 ; route add 10.9.0.0/24 via 192.0.2.5 dev $DEV metric 20
route add 10.7.0.0/24 via 192.0.2.1 dev $DEV metric 20
route del 10.7.0.0/24 via 192.0.2.1 dev $DEV metric 20 ; route add 10.7.0.0/24 type blackhole via 192.0.2.9 metric 20
EOF
	wait_routes "$s" "10.0.0.0/24 unicast metric 20 via 192.0.2.2 dev if$DEV
10.8.0.0/16 unicast metric 20 via 192.0.2.8 dev if$DEV
10.9.0.0/24 unicast metric 20 via 192.0.2.5 dev if$DEV
2001:db8:1::/48 unicast metric 20 via 2001:db8::2 dev if$DEV" "after DEL+NEW frames"
	fpm_counter "$s" coalesced 1
	fpm_counter "$s" skipped 1
	fpm_counter "$s" apply-errors 1
	expect_match "$(fpm_value "$s" last-error)" "10.7.0.0/24 .*takes no gateway" "last-error"
	d_stop "$A"
}

test_fpm_a_second_peer_is_refused_and_the_first_goes_on()
{
	local port s out
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	"${SEND[@]}" --port "$port" --hold 30 script - <<EOF >"$T/first.out" &
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
wait $T/stage1
route add 10.9.0.0/24 via 192.0.2.1 dev $DEV
EOF
	bg=$!
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "the first peer's route"
	out=$(send "$port" probe) || fail "the second connection was not closed by lcfibd: $out"
	expect_eq "$out" "closed by lcfibd" "the second peer"
	log_has "$A" "FPM peer 127.0.0.1:[0-9]+ refused: 127.0.0.1:[0-9]+ is connected" ||
		fail "no refusal line in the log: $(cat "$(d_log "$A")")"
	touch "$T/stage1"
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV
10.9.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "the first peer's route after the refusal"
	fpm_counter "$s" refused 1
	fpm_counter "$s" connects 1
	kill "$bg"
	d_stop "$A"
}

test_fpm_a_bad_frame_closes_that_connection_and_lcfibd_serves_on()
{
	local port s bad out n=0
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	# version 2; type 2 (protobuf); length 3 (below the header); length 10 (not a multiple of 4)
	for bad in "frame 2 1 4" "frame 1 2 4" "frame 1 1 3" "frame 1 1 10 000000000000"; do
		n=$((n + 1))
		out=$(send_script "$port" --expect-close 10 <<EOF
route add 10.$n.0.0/16 via 192.0.2.1 dev $DEV
$bad
route add 10.99.$n.0/24 via 192.0.2.1 dev $DEV
EOF
		) || fail "lcfibd did not close the connection after '$bad': $out"
		expect_match "$out" "closed by lcfibd" "after '$bad'"
	done
	expect_eq "$(log_count "$A" "FPM peer 127.0.0.1:[0-9]+: bad frame after 1 good ones: .*; closing the connection")" 4 \
		"bad-frame lines in the log"
	log_has "$A" "bad frame after 1 good ones: FPM version 2, expected 1" || fail "the log does not say why"
	# The good frame before each bad one is applied; nothing after it.
	wait_routes "$s" "10.1.0.0/16 unicast metric 0 via 192.0.2.1 dev if$DEV
10.2.0.0/16 unicast metric 0 via 192.0.2.1 dev if$DEV
10.3.0.0/16 unicast metric 0 via 192.0.2.1 dev if$DEV
10.4.0.0/16 unicast metric 0 via 192.0.2.1 dev if$DEV" "routes around bad frames"
	fpm_counter "$s" decode-errors 4
	send_script "$port" <<EOF >/dev/null || fail "a new connection after the bad frames failed"
route add 10.50.0.0/16 via 192.0.2.1 dev $DEV
EOF
	wait_until "the route of a new connection arrives" eval "show '$s' | grep >/dev/null '^10.50.0.0/16 '"
	d_stop "$A"
}

# Malformed netlink inside a well-framed FPM frame is the writer's to count and skip.
test_fpm_malformed_netlink_in_a_good_frame_is_skipped()
{
	local port s
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	# An RTM_NEWROUTE whose RTA_DST has 3 bytes; then a good route.
	"${SEND[@]}" --port "$port" --hold 30 script - <<EOF &
frame 1 1 48 2c000000 1800 0105 00000000 00000000 02180000 fe0b0001 00000000 0700 0100 0a0000 00 0800 0f00 fe000000
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
EOF
	bg=$!
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "the good route after a malformed one"
	log_has "$A" "FPM peer .* bad frame" && fail "a malformed message in a good frame closed the connection"
	kill "$bg"
	d_stop "$A"
}

test_fpm_a_disconnect_keeps_the_routes()
{
	local port s
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	send_script "$port" <<EOF >/dev/null
nexthop add id 1 via 192.0.2.1 dev $DEV
route add 10.0.0.0/24 nhid 1
route add 10.1.0.0/24 via 192.0.2.1 dev $DEV
EOF
	wait_until "lcfibd logs the disconnect" log_has "$A" "FPM peer .* disconnected after .* its routes stay"
	# Whatever the disconnect made the writer do comes before the next
	# peer's route (the writer applies in order); that replay never settles.
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"replay-settle":600000}}}}'
	"${SEND[@]}" --port "$port" --hold 30 script - <<EOF >/dev/null &
route add 10.9.0.0/24 via 192.0.2.9 dev $DEV
EOF
	bg=$!
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 nhid 1 via 192.0.2.1 dev if$DEV
10.1.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV
10.9.0.0/24 unicast metric 0 via 192.0.2.9 dev if$DEV" "after the disconnect"
	fpm_counter "$s" routes 3
	fpm_counter "$s" nexthop-objects 1
	kill "$bg"
	d_stop "$A"
}

# first_session PORT SOCK < SCRIPT: a peer sends SCRIPT and waits; once its
# replay settled, replay-settle goes up to 600 s (from then on a replay
# settles when the test lowers it), and the peer disconnects.
first_session()
{
	local bg
	{ cat; echo "wait $T/stage1"; } | "${SEND[@]}" --port "$1" script - >/dev/null &
	bg=$!
	wait_until "the first session's replay settles" log_has "$A" "replay settled"
	expect_status 0 ctl "$2" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"replay-settle":600000}}}}'
	touch "$T/stage1"
	wait "$bg"
}

# zebra replays its table on connect: what it held before and not again goes,
# once the replay settles; what it replays stays, IPv6 routes too, which
# zebra adds without NLM_F_REPLACE (they are there already: not an error).
test_fpm_a_partial_replay_sweeps_what_was_not_replayed()
{
	local port s
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	first_session "$port" "$s" <<EOF
nexthop add id 1 via 192.0.2.1 dev $DEV
nexthop add id 2 via 192.0.2.2 dev $DEV
route add 10.0.0.0/24 nhid 1
route add 10.1.0.0/24 nhid 2
route add 10.2.0.0/24 via 192.0.2.1 dev $DEV
route add 10.3.0.0/24 via 192.0.2.1 dev $DEV metric 10
route add 10.3.0.0/24 via 192.0.2.3 dev $DEV metric 20
route prepend 2001:db8:1::/48 via 2001:db8::1 dev $DEV
route add 2001:db8:2::/48 via 2001:db8::1 dev $DEV
EOF
	wait_until "the first session ends" log_has "$A" "FPM peer .* disconnected"
	"${SEND[@]}" --port "$port" --hold 30 script - <<EOF >/dev/null &
nexthop add id 1 via 192.0.2.1 dev $DEV
route add 10.0.0.0/24 nhid 1
route add 10.3.0.0/24 via 192.0.2.1 dev $DEV metric 10
route prepend 2001:db8:1::/48 via 2001:db8::1 dev $DEV
EOF
	bg=$!
	wait_until "lcfibd applied the second session's messages" fpm_counter_is "$s" messages 13
	# Part of the table replayed, the replay not settled: nothing goes yet.
	expect_eq "$(show "$s" | wc -l)" 7 "routes before the replay settled"
	expect_eq "$(log_count "$A" "replay settled")" 1 "replays settled"
	fpm_counter "$s" syncing true
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"replay-settle":100}}}}'
	wait_until "the replay settles" log_count_ge "$A" 2 "replay settled"
	wait_until "the feed's state says the replay is over" fpm_counter_is "$s" syncing false
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 nhid 1 via 192.0.2.1 dev if$DEV
10.3.0.0/24 unicast metric 10 via 192.0.2.1 dev if$DEV
2001:db8:1::/48 unicast metric 0 via 2001:db8::1 dev if$DEV" "after the sweep"
	wait_until "the sweep is logged" log_has "$A" "swept 4 routes and 1 nexthop objects"
	fpm_counter "$s" swept 5
	fpm_counter "$s" connects 2
	fpm_counter "$s" dumps 2
	fpm_counter "$s" routes 3
	fpm_counter "$s" nexthop-objects 1
	# zebra adds IPv6 routes without NLM_F_REPLACE: the replayed one was there already.
	fpm_counter "$s" skipped 1
	fpm_counter "$s" apply-errors 0
	kill "$bg"
	d_stop "$A"
}

# A replay cut short (zebra died in the middle) must not sweep what zebra had not sent yet.
test_fpm_a_replay_cut_short_does_not_sweep()
{
	local port s
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	first_session "$port" "$s" <<EOF
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
route add 10.1.0.0/24 via 192.0.2.1 dev $DEV
EOF
	send_script "$port" <<EOF >/dev/null
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
EOF
	wait_until "the second session ends" log_count_ge "$A" 2 "disconnected after"
	log_has "$A" "disconnected after .*in the middle of its replay" || fail "no cut-short line"
	# A short settle time now would end a replay still in progress at once (in
	# the edit, before its answer): the cut one is over.
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"replay-settle":100}}}}'
	expect_eq "$(log_count "$A" "replay settled")" 1 "replays settled"
	wait_until "lcfibd applied the second session's message" fpm_counter_is "$s" messages 3
	wait_until "the feed's state says the cut replay is over" fpm_counter_is "$s" syncing false
	expect_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV
10.1.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "after a replay cut short"
	fpm_counter "$s" swept 0
	d_stop "$A"
}

test_fpm_a_port_in_use_refuses_the_edit()
{
	local port s out
	port=$(free_port)
	d_name
	d_start "$A" || fail "no lcfibd"
	s=$(d_sock "$A")
	"$PYTHON" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
print("ok", flush=True); time.sleep(30)' "$port" >"$T/holder.out" &
	bg=$!
	wait_until "the other listener is up" grep -q ok "$T/holder.out"
	expect_status 1 ctl "$s" edit merge "{\"lcfib:lcfib\":{\"feeds\":{\"fpm\":{\"enabled\":true,\"port\":$port}}}}"
	expect_match "$OUT" "cannot listen on 127.0.0.1:$port: Address already in use" "the error"
	expect_match "$OUT" '"path":"/lcfib:lcfib/feeds/fpm/address"' "the error's path"
	expect_eq "$(value "$s" /lcfib:lcfib/feeds/fpm/enabled)" false "enabled after the refused edit"
	kill "$bg"
	wait "$bg" 2>/dev/null
	# The port free again: the same edit goes through.
	expect_status 0 ctl "$s" edit merge "{\"lcfib:lcfib\":{\"feeds\":{\"fpm\":{\"enabled\":true,\"port\":$port}}}}"
	send_script "$port" <<EOF >/dev/null || fail "no FPM listener after the edit"
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
EOF
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "a route after enabling"
	d_stop "$A"
}

# nobody_need: a python3 that nobody may run ($NOBODY_PYTHON), and
# $T/bin/fpm_send.py that it can read; or a skip.
NOBODY_PYTHON=
nobody_need()
{
	[ "$(id -u)" = 0 ] || t_skip "needs root, to run a client as nobody"
	command -v setpriv >/dev/null || t_skip "setpriv is not installed (Debian: util-linux)"
	NOBODY_PYTHON=$PYTHON
	as_nobody "$NOBODY_PYTHON" -c '' 2>/dev/null || NOBODY_PYTHON=/usr/bin/python3
	as_nobody "$NOBODY_PYTHON" -c '' || t_skip "no python3 that nobody may run"
	mkdir -p "$T/bin"
	cp "$E2E_HELPERS/fpm_send.py" "$T/bin/"
	chmod -R a+rX "$T/bin"
	as_nobody test -r "$T/bin/fpm_send.py" || t_skip "nobody cannot reach $T: make TMPDIR traversable by all"
}

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

# An FPM connection of a user not in allowed-user (nobody) is refused before
# it can add a route or start a replay whose sweep would remove zebra's
# routes; it is counted, and logged at most once in 10 s. A uid in
# allowed-user lets the same client in.
test_fpm_a_user_not_allowed_is_refused_and_counted()
{
	local port s i
	nobody_need
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	# zebra's session (ours, as root): its replay settles, then it goes.
	first_session "$port" "$s" <<EOF
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
route add 10.1.0.0/24 via 192.0.2.1 dev $DEV
EOF
	wait_until "the first session ends" log_has "$A" "FPM peer .* disconnected"
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"replay-settle":100}}}}'
	for i in 1 2 3; do
		as_nobody "$NOBODY_PYTHON" "$T/bin/fpm_send.py" --port "$port" --hold 1 script - <<EOF >/dev/null 2>&1
route add 10.250.$i.0/24 via 192.0.2.1 dev $DEV
EOF
	done
	wait_until "three connections of nobody are refused" fpm_counter_is "$s" unauthorized 3
	expect_eq "$(log_count "$A" "FPM peer 127.0.0.1:[0-9]+ refused: uid 65534 \(nobody\) is not an allowed-user")" 1 \
		"refusal lines in the log (one per 10 s)"
	fpm_counter "$s" connects 1
	fpm_counter "$s" dumps 1
	# No route of nobody's, and no sweep of zebra's (replay-settle is 100 ms now).
	sleep 0.5
	expect_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV
10.1.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "after nobody's connections"
	fpm_counter "$s" swept 0
	# By uid: nobody may, now (root still may: it is named too).
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"allowed-user":["root","65534"]}}}}'
	as_nobody "$NOBODY_PYTHON" "$T/bin/fpm_send.py" --port "$port" script - <<EOF >/dev/null ||
route add 10.250.9.0/24 via 192.0.2.1 dev $DEV
EOF
		fail "nobody's FPM client failed"
	wait_until "nobody's route arrives" lcfib_has "$s" 10.250.9.0/24
	fpm_counter "$s" unauthorized 3
	fpm_counter "$s" connects 2
	# A user this host does not have is refused in the edit, naming it.
	expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"allowed-user":["no-such-user-lcfib"]}}}}'
	expect_match "$OUT" "allowed-user: no user 'no-such-user-lcfib' on this host" "the error"
	d_stop "$A"
}

# A peer that sends part of a frame and then nothing is dropped after
# hold-time (else it would hold the only slot for ever); one that sent whole
# frames may stay silent far longer: zebra sends no keepalives.
test_fpm_a_peer_that_leaves_a_frame_unfinished_is_dropped()
{
	local port s out
	port=$(free_port)
	fpm_start "$port" "$SETTLE" 127.0.0.1 ',"hold-time":1'
	s=$(d_sock "$A")
	out=$("$PYTHON" - "$port" <<'EOF'
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"\x01\x01")  # an FPM header's first 2 bytes
c.settimeout(30)
try:
    print("closed by lcfibd" if c.recv(16) == b"" else "data?")
except socket.timeout:
    print("still open after 30 s")
EOF
	)
	expect_eq "$out" "closed by lcfibd" "a peer with 2 bytes of a frame"
	log_has "$A" "FPM peer 127.0.0.1:[0-9]+ sent 2 bytes of a frame and nothing more for 1 s \(hold-time\); dropping it" ||
		fail "no hold-time line in the log"
	fpm_counter "$s" dropped-silent 1
	# Whole frames, then silence for 4 hold-times: the peer stays.
	"${SEND[@]}" --port "$port" --hold 30 script - <<EOF >/dev/null &
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
EOF
	bg=$!
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "the quiet peer's route"
	sleep 4
	expect_match "$(fpm_value "$s" peer)" "127.0.0.1:[0-9]+" "the quiet peer"
	fpm_counter "$s" dropped-silent 1
	fpm_counter "$s" connects 2
	# While it holds the slot, a new connection is refused (the rule stays).
	out=$(send "$port" probe) || fail "the second connection was not closed by lcfibd: $out"
	expect_eq "$out" "closed by lcfibd" "a second peer while a quiet one is connected"
	fpm_counter "$s" refused 1
	kill "$bg"
	d_stop "$A"
}

# Anyone may take the FPM port first: lcfibd starts anyway, the feed's state
# says why it does not listen, the log says it once, and the feed binds once
# the port is free.
test_fpm_a_port_taken_at_start_does_not_stop_lcfibd()
{
	local port s
	port=$(free_port)
	"$PYTHON" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
print("ok", flush=True); time.sleep(60)' "$port" >"$T/squatter.out" &
	bg=$!
	wait_until "the squatter listens" grep -q ok "$T/squatter.out"
	fpm_start_only "$port"
	s=$(d_sock "$A")
	expect_eq "$(fpm_value "$s" listen-error)" "cannot listen on 127.0.0.1:$port: Address already in use" \
		"listen-error while the port is taken"
	expect_eq "$(fpm_value "$s" running)" true "running"
	fpm_value "$s" listening >/dev/null && fail "the state says it listens"
	# Edits of other leaves go through while it tries again.
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"replay-settle":200}}}}'
	sleep 4.5 # two tries at least
	expect_eq "$(log_count "$A" "FPM feed: cannot listen on 127.0.0.1:$port: Address already in use")" 1 \
		"error lines in the log (once per change)"
	kill "$bg"
	wait "$bg" 2>/dev/null
	wait_until "the feed listens" fpm_counter_is "$s" listening "127.0.0.1:$port"
	log_has "$A" "FPM feed listening on 127.0.0.1:$port, after [0-9]+ s without a listener" ||
		fail "no listening line after the tries"
	fpm_value "$s" listen-error >/dev/null && fail "listen-error is still there"
	send_script "$port" <<EOF >/dev/null || fail "no FPM listener after the port came free"
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
EOF
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "a route once the feed listens"
	d_stop "$A"
}

test_fpm_listens_on_ipv6()
{
	local port s
	"$PYTHON" -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null ||
		t_skip "no IPv6 loopback here"
	port=$(free_port)
	fpm_start "$port" "$SETTLE" ::1
	s=$(d_sock "$A")
	log_has "$A" "FPM feed listening on \[::1\]:$port" || fail "no listening line for [::1]"
	send_script "$port" --host ::1 <<EOF >/dev/null || fail "cannot send over IPv6"
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
EOF
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "a route over IPv6"
	log_has "$A" "FPM peer \[::1\]:[0-9]+ connected" || fail "the peer's IPv6 name is not logged"
	d_stop "$A"
}

test_fpm_a_new_address_or_port_rebinds()
{
	local p1 p2 s
	p1=$(free_port)
	p2=$(free_port)
	fpm_start "$p1"
	s=$(d_sock "$A")
	expect_status 0 ctl "$s" edit merge "{\"lcfib:lcfib\":{\"feeds\":{\"fpm\":{\"port\":$p2}}}}"
	send "$p1" --connect-timeout 0 probe >/dev/null 2>&1 && fail "still listening on the old port"
	send_script "$p2" <<EOF >/dev/null || fail "not listening on the new port"
route add 10.0.0.0/24 via 192.0.2.1 dev $DEV
EOF
	# 127.0.0.1 -> 0.0.0.0 on the same port overlaps: the old listener makes way.
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"address":"0.0.0.0"}}}}'
	log_has "$A" "FPM feed listening on 0.0.0.0:$p2" || fail "no listening line for 0.0.0.0"
	send_script "$p2" <<EOF >/dev/null || fail "not listening on 0.0.0.0"
route add 10.1.0.0/24 via 192.0.2.1 dev $DEV
EOF
	wait_routes "$s" "10.0.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV
10.1.0.0/24 unicast metric 0 via 192.0.2.1 dev if$DEV" "routes through the moved listener"
	d_stop "$A"
}

test_fpm_turning_the_feed_off_removes_its_routes()
{
	local port s
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	expect_status 0 ctl "$s" rpc '{"lcfib:route-add":{"prefix":"10.200.0.0/16","type":"blackhole"}}'
	"${SEND[@]}" --port "$port" --hold 30 script - <<EOF >/dev/null &
nexthop add id 1 via 192.0.2.1 dev $DEV
route add 10.0.0.0/24 nhid 1
route add 10.1.0.0/24 via 192.0.2.1 dev $DEV
EOF
	bg=$!
	wait_until "the feed's routes arrive" route_count_is "$s" 3
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"enabled":false}}}}'
	# Only the feed's routes go; the one added through the control socket stays.
	wait_routes "$s" "10.200.0.0/16 blackhole metric 0" "after turning the feed off"
	log_has "$A" "FPM peer .* disconnected: the feed is off" || fail "the peer was not closed"
	send "$port" --connect-timeout 0 probe >/dev/null 2>&1 && fail "still listening after turning off"
	kill "$bg" 2>/dev/null
	d_stop "$A"
}

# The full table (901,899 IPv4 and 160,147 IPv6 prefixes) through FPM, with and without objects.
test_fpm_full_table()
{
	local port s out n
	n=$(scaled "$FULLVIEW_ROUTES" 10000)
	[ "$n" -le "$FULLVIEW_ROUTES" ] || n=$FULLVIEW_ROUTES
	port=$(free_port)
	# Our sender builds the messages as it goes: a pause of its must not end the replay.
	fpm_start "$port" 5000
	s=$(d_sock "$A")
	out=$(send "$port" --wait-routes "$s" "$n" bulk "$FULLVIEW_GZ" --per-frame 64 --limit "$n") ||
		fail "full table: $out"
	echo "# $out" | tr '\n' ' '
	echo
	# The same table again as updates (DEL+NEW in one frame), over nexthop
	# objects: every route ends on one of the two objects.
	out=$(send "$port" bulk "$FULLVIEW_GZ" --update --nhg 100 --limit "$n") ||
		fail "full table as updates: $out"
	wait_until "no route keeps its own nexthop" value_is "$s" /lcfib:lcfib/state/routes/nexthops 0
	expect_eq "$(value "$s" /lcfib:lcfib/state/routes/nexthop-objects)" 2 "nexthop objects"
	expect_eq "$(routes_total "$s")" "$n" "routes after the updates"
	fpm_counter "$s" routes "$n"
	fpm_counter "$s" nexthop-objects 2
	fpm_counter "$s" messages $((3 * n + 2))
	# Each update's add replaces its key's one route: the deletes are left
	# out (coalesced).
	fpm_counter "$s" route-updates $((2 * n))
	fpm_counter "$s" coalesced "$n"
	fpm_counter "$s" skipped 0
	fpm_counter "$s" decode-errors 0
	fpm_counter "$s" apply-errors 0
	d_stop "$A"
}

# A peer that sends faster than the writer applies (a saved stream, sent
# as fast as the socket takes it) waits in TCP: lcfibd stops reading it
# while 4 MiB of its messages are queued, and reads on as they drain.
# Nothing is lost, and the pauses are no quiet: the replay settles once,
# after the last frame, and sweeps nothing.
test_fpm_a_fast_peer_waits_for_the_writer()
{
	local port s n=200000
	port=$(free_port)
	fpm_start "$port"
	s=$(d_sock "$A")
	send "$port" --save "$T/fast.fpm" bulk "$FULLVIEW_GZ" --limit "$n" >/dev/null ||
		fail "cannot build the stream"
	[ "$(stat -c %s "$T/fast.fpm")" -gt $((8 << 20)) ] || fail "the stream is under 8 MiB"
	# Connected until the replay settled: a peer that leaves cuts it short.
	"${SEND[@]}" --port "$port" --hold 60 --wait-routes "$s" "$n" replay "$T/fast.fpm" \
		>"$T/fast.out" &
	bg=$!
	wait_until "lcfibd holds the routes" grep -q "lcfibd holds" "$T/fast.out"
	echo "# $(tail -1 "$T/fast.out")"
	wait_until "the replay settles" log_has "$A" "replay settled"
	wait_until "the writer ends the sync" fpm_counter_is "$s" syncing false
	[ "$(fpm_value "$s" backlog-waits)" -gt 0 ] || fail "lcfibd never waited for its writer"
	expect_eq "$(routes_total "$s")" "$n" "routes"
	fpm_counter "$s" routes "$n"
	fpm_counter "$s" messages "$n"
	fpm_counter "$s" swept 0
	fpm_counter "$s" decode-errors 0
	fpm_counter "$s" apply-errors 0
	expect_eq "$(log_count "$A" "replay settled")" 1 "replays settled"
	kill "$bg"
	d_stop "$A"
}

# ------------------------------------------------------------------ zebra

FRR_BIN=/usr/lib/frr
NS_PID=

# frr_need: skips unless zebra and friends can run here.
frr_need()
{
	[ "$(id -u)" = 0 ] || t_skip "zebra tests need root (network namespaces)"
	[ -x "$FRR_BIN/zebra" ] && [ -x "$FRR_BIN/staticd" ] && command -v vtysh >/dev/null ||
		t_skip "FRR is not installed (Debian: apt-get install frr; tools/deps.sh does)"
	ls /usr/lib/*/frr/modules/dplane_fpm_nl.so >/dev/null 2>&1 ||
		t_skip "FRR has no dplane_fpm_nl module"
	command -v unshare >/dev/null && command -v nsenter >/dev/null ||
		t_skip "unshare and nsenter (util-linux) are needed"
	id frr >/dev/null 2>&1 || t_skip "no frr user (the frr package makes it)"
}

# frr_netns: a network namespace held by a sleeping process, with lo and a
# veth pair (veth0 198.18.0.1/24, fd00::1/64) for the routes' gateways.
frr_netns()
{
	unshare -n sleep 100000 &
	NS_PID=$!
	trap frr_cleanup EXIT
	wait_until "the namespace of $NS_PID" netns_ready "$NS_PID"
	ns ip link set lo up &&
		ns ip link add veth0 type veth peer name veth1 &&
		ns ip addr add 198.18.0.1/24 dev veth0 &&
		ns ip -6 addr add fd00::1/64 dev veth0 nodad &&
		ns ip link set veth0 up && ns ip link set veth1 up ||
		fail "cannot set up the network namespace"
	FRR_DIR=$T/frr
	mkdir -p "$FRR_DIR"
	# zebra drops to user frr: its pid file, sockets and log go here.
	chown frr:frr "$FRR_DIR"
}

ns() { nsenter -t "$NS_PID" -n "$@"; }

# At the end of a zebra test: its lcfibd, zebra and staticd, then the namespace.
frr_cleanup()
{
	local f
	d_kill_mine
	for f in "$FRR_DIR"/*.pid; do
		[ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	[ -n "$NS_PID" ] && kill "$NS_PID" 2>/dev/null && wait "$NS_PID" 2>/dev/null
}

# zebra_start PORT [NHG]: zebra in the namespace, FPM to 127.0.0.1:PORT;
# NHG "no" turns nexthop groups off (`no fpm use-next-hop-groups`).
zebra_start()
{
	local port=$1 nhg=${2:-yes}
	{
		echo "hostname zebra"
		echo "log file $FRR_DIR/zebra.log informational"
		echo "fpm address 127.0.0.1 port $port"
		[ "$nhg" = no ] && echo "no fpm use-next-hop-groups"
	} >"$FRR_DIR/zebra.conf"
	rm -f "$FRR_DIR/zebra.pid"
	ns "$FRR_BIN/zebra" -M dplane_fpm_nl -f "$FRR_DIR/zebra.conf" -i "$FRR_DIR/zebra.pid" \
		-z "$FRR_DIR/zserv.api" --vty_socket "$FRR_DIR" >>"$FRR_DIR/zebra.out" 2>&1 &
	wait_until "zebra writes its pid file" test -s "$FRR_DIR/zebra.pid"
}

zebra_kill()
{
	local pid
	pid=$(cat "$FRR_DIR/zebra.pid")
	kill "-${1:-TERM}" "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	rm -f "$FRR_DIR/zebra.pid"
}

# staticd_start FILE: staticd with the routes of FILE (FRR config lines).
staticd_start()
{
	{
		echo "hostname staticd"
		cat "$1"
	} >"$FRR_DIR/staticd.conf"
	ns "$FRR_BIN/staticd" -f "$FRR_DIR/staticd.conf" -i "$FRR_DIR/staticd.pid" \
		-z "$FRR_DIR/zserv.api" --vty_socket "$FRR_DIR" >>"$FRR_DIR/staticd.out" 2>&1 &
	wait_until "staticd writes its pid file" test -s "$FRR_DIR/staticd.pid"
}

vty() { vtysh --vty_socket "$FRR_DIR" "$@"; }

# lcfibd in the namespace (zebra connects to its 127.0.0.1).
frr_lcfibd()
{
	local port=$1 settle=${2:-1000}
	D_WRAP="nsenter -t $NS_PID -n" fpm_start "$port" "$settle"
}

# kernel_routes PROTO: the namespace's main table as "PREFIX via GW[,GW]" lines,
# routes of protocol PROTO (a number) but link-local ones (the kernel has one
# per interface; zebra sends the one it selects).
kernel_routes()
{
	ns ip -j route show table main proto "$1" | "$PYTHON" -c '
import json, sys
for r in json.load(sys.stdin):
    gws = [h.get("gateway", "-") for h in r.get("nexthops", [])] or [r.get("gateway", "-")]
    print(r["dst"] if "/" in r["dst"] else r["dst"] + "/32", "via", ",".join(gws))'
	ns ip -6 -j route show table main proto "$1" | "$PYTHON" -c '
import json, sys
for r in json.load(sys.stdin):
    if r["dst"].startswith("fe80:"):
        continue
    gws = [h.get("gateway", "-") for h in r.get("nexthops", [])] or [r.get("gateway", "-")]
    print(r["dst"] if "/" in r["dst"] else r["dst"] + "/128", "via", ",".join(gws))'
}

# lcfib_routes PROTO [REGEX]: lcfibd's main table in kernel_routes' form,
# routes of protocol PROTO whose prefix matches REGEX (Python's re).
lcfib_routes()
{
	PYTHONPATH=$E2E_HELPERS "$PYTHON" - "$(d_sock "$A")" "$1" "${2:-}" <<'EOF'
import re, sys, ctl
ok, r = ctl.Conn(sys.argv[1]).rpc({"lcfib:routes": {"table": 254, "limit": 10000000}})
assert ok, r
for rt in r["lcfib:routes"].get("route", []):
    if rt["protocol"] != int(sys.argv[2]) or not re.match(sys.argv[3], rt["prefix"]):
        continue
    if rt["prefix"].startswith("fe80:"):
        continue
    gws = [h.get("gateway", "-") for h in rt.get("nexthop", [])] or ["-"]
    print(rt["prefix"], "via", ",".join(gws))
EOF
}

# same_routes KPROTO LPROTO WHAT [REGEX]: lcfibd's routes of protocol LPROTO
# (zebra sends the kernel's own routes as RTPROT_KERNEL) are the kernel's of
# KPROTO, once lcfibd caught up.
same_routes()
{
	local k l end=$((SECONDS + 120))
	while :; do
		k=$(kernel_routes "$1" | sort)
		l=$(lcfib_routes "$2" "${4:-}" | sort)
		[ "$k" = "$l" ] && return 0
		[ $SECONDS -lt $end ] || break
		sleep 0.2
	done
	fail "$3: after 120 s lcfibd and the kernel differ (kernel proto $1, lcfibd $2; < kernel, > lcfibd):
$(diff <(echo "$k") <(echo "$l") | head -20)"
}

# zebra installs staticd's routes in the namespace's kernel and sends them to
# lcfibd: the kernel is the oracle. $1: nexthop groups on or off.
frr_static_routes()
{
	local port nhg=$1 zstatic=196
	frr_need
	frr_netns
	port=$(free_port)
	frr_lcfibd "$port"
	zebra_start "$port" "$nhg"
	cat >"$T/static.conf" <<EOF
ip route 10.1.0.0/16 198.18.0.2
ip route 10.9.0.0/16 blackhole
ipv6 route 2001:db8:5::/48 fd00::2
EOF
	staticd_start "$T/static.conf"
	wait_until "zebra installs the static routes" eval "[ \"\$(kernel_routes $zstatic | wc -l)\" = 3 ]"
	same_routes "$zstatic" "$zstatic" "static routes"
	# blackhole routes are not "via" anything: check the type too.
	show "$(d_sock "$A")" | grep >/dev/null '^10.9.0.0/16 blackhole ' || fail "no blackhole route in lcfibd"
	vty -c 'conf t' -c 'no ip route 10.1.0.0/16 198.18.0.2' -c 'ip route 10.1.0.0/16 198.18.0.3' \
		-c 'ip route 10.5.0.0/16 198.18.0.2' -c 'no ipv6 route 2001:db8:5::/48 fd00::2' >/dev/null ||
		fail "vtysh failed"
	wait_until "zebra applies the changes" eval "kernel_routes $zstatic | grep '^10.5.0.0/16 ' >/dev/null"
	same_routes "$zstatic" "$zstatic" "after a change, an add and a delete"
	lcfib_routes "$zstatic" | grep >/dev/null '^2001:db8:5::/48' && fail "the deleted IPv6 route is still there"
	# zebra's connected routes come too.
	same_routes 2 2 "connected routes"
	zebra_kill
	d_stop "$A"
}

test_fpm_frr_static_routes_with_nexthop_groups() { frr_static_routes yes; }
test_fpm_frr_static_routes_without_nexthop_groups() { frr_static_routes no; }

# zebra sends no keepalives: connected, its table sent, it is silent for as
# long as nothing changes (docs/DAEMON.md has the measurement). The hold
# timer counts only while a frame is unfinished, so an idle zebra stays: here
# hold-time is 1 s and zebra idles for 6. zebra runs as user frr, one of the
# default allowed users.
test_fpm_frr_an_idle_zebra_stays_connected()
{
	local port s
	frr_need
	frr_netns
	port=$(free_port)
	D_WRAP="nsenter -t $NS_PID -n" fpm_start "$port" 300 127.0.0.1 ',"hold-time":1'
	s=$(d_sock "$A")
	zebra_start "$port"
	cat >"$T/static.conf" <<EOF
ip route 10.1.0.0/16 198.18.0.2
EOF
	staticd_start "$T/static.conf"
	wait_until "zebra's route arrives" lcfib_has "$s" 10.1.0.0/16
	wait_until "the replay settles" log_has "$A" "replay settled"
	log_has "$A" "FPM peer 127.0.0.1:[0-9]+ connected \(uid [0-9]+ \(frr\)\)" ||
		fail "zebra's connection is not logged as frr's: $(grep connected "$(d_log "$A")")"
	sleep 6
	expect_match "$(fpm_value "$s" peer)" "127.0.0.1:[0-9]+" "zebra's connection after 6 s idle"
	fpm_counter "$s" connects 1
	fpm_counter "$s" dropped-silent 0
	fpm_counter "$s" unauthorized 0
	log_has "$A" "FPM peer .* (disconnected|dropped)" && fail "zebra's connection was closed"
	zebra_kill
	d_stop "$A"
}

# A peer that is not a process of this host (here: in another network
# namespace, through a veth pair) has no owner lcfibd can see: it is refused
# unless its address is in allowed-remote.
NS2_PID=
remote_cleanup()
{
	d_kill_mine
	[ -n "$NS2_PID" ] && kill "$NS2_PID" 2>/dev/null && wait "$NS2_PID" 2>/dev/null
	[ -n "$NS_PID" ] && kill "$NS_PID" 2>/dev/null && wait "$NS_PID" 2>/dev/null
}

test_fpm_a_remote_peer_needs_allowed_remote()
{
	local port s
	[ "$(id -u)" = 0 ] || t_skip "needs root (network namespaces)"
	command -v unshare >/dev/null && command -v nsenter >/dev/null ||
		t_skip "unshare and nsenter (util-linux) are needed"
	unshare -n sleep 100000 &
	NS_PID=$!
	unshare -n sleep 100000 &
	NS2_PID=$!
	trap remote_cleanup EXIT
	wait_until "the namespace of $NS_PID" netns_ready "$NS_PID"
	wait_until "the namespace of $NS2_PID" netns_ready "$NS2_PID"
	ip link add fpmr0 netns "$NS_PID" type veth peer name fpmr1 netns "$NS2_PID" &&
		ns ip addr add 198.19.0.1/24 dev fpmr0 && ns ip link set fpmr0 up && ns ip link set lo up &&
		nsenter -t "$NS2_PID" -n ip addr add 198.19.0.2/24 dev fpmr1 &&
		nsenter -t "$NS2_PID" -n ip link set fpmr1 up || fail "cannot set up the namespaces"
	port=$(free_port)
	D_WRAP="nsenter -t $NS_PID -n" fpm_start "$port" "$SETTLE" 198.19.0.1
	s=$(d_sock "$A")
	nsenter -t "$NS2_PID" -n "$PYTHON" "$E2E_HELPERS/fpm_send.py" --host 198.19.0.1 --port "$port" \
		--connect-timeout 30 script - <<EOF >/dev/null || fail "the remote sender failed"
route add 10.250.0.0/16 via 192.0.2.1 dev $DEV
EOF
	wait_until "the remote peer is refused" fpm_counter_is "$s" unauthorized 1
	log_has "$A" "FPM peer 198.19.0.2:[0-9]+ refused: not a process of this host, and its address is not in allowed-remote" ||
		fail "no refusal line for the remote peer"
	fpm_counter "$s" connects 0
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"allowed-remote":["198.19.0.0/24"]}}}}'
	nsenter -t "$NS2_PID" -n "$PYTHON" "$E2E_HELPERS/fpm_send.py" --host 198.19.0.1 --port "$port" \
		script - <<EOF >/dev/null || fail "the remote sender failed"
route add 10.250.0.0/16 via 192.0.2.1 dev $DEV
EOF
	wait_routes "$s" "10.250.0.0/16 unicast metric 0 via 192.0.2.1 dev if$DEV" "the allowed remote peer's route"
	log_has "$A" "FPM peer 198.19.0.2:[0-9]+ connected \(not on this host\)" || fail "no connect line for the remote peer"
	fpm_counter "$s" unauthorized 1
	fpm_counter "$s" connects 1
	d_stop "$A"
}

# An ECMP route: with nexthop groups zebra may send a group before a member.
frr_ecmp()
{
	local port nhg=$1 zstatic=196
	frr_need
	frr_netns
	port=$(free_port)
	frr_lcfibd "$port"
	zebra_start "$port" "$nhg"
	cat >"$T/static.conf" <<EOF
ip route 10.2.0.0/16 198.18.0.2
ip route 10.2.0.0/16 198.18.0.3
ip route 10.3.0.0/16 198.18.0.3
ip route 10.3.0.0/16 198.18.0.4
ip route 10.3.0.0/16 198.18.0.5
EOF
	staticd_start "$T/static.conf"
	wait_until "zebra installs the ECMP routes" eval "[ \"\$(kernel_routes $zstatic | wc -l)\" = 2 ]"
	same_routes "$zstatic" "$zstatic" "ECMP routes"
	zebra_kill
	d_stop "$A"
}

test_fpm_frr_ecmp_routes_with_nexthop_groups() { frr_ecmp yes; }
test_fpm_frr_ecmp_routes_without_nexthop_groups() { frr_ecmp no; }

# N kernel routes (proto static) in the namespace: zebra learns them at start
# and replays them to every FPM peer. $1 N, $2 first /24 (an integer offset).
kernel_batch()
{
	"$PYTHON" -c '
import ipaddress, sys
n, first, verb = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for i in range(first, first + n):
    a = ipaddress.ip_address("20.0.0.0") + i * 256
    print("route %s %s/24 via 198.18.0.%d proto static" % (verb, a, 2 + i % 3))' "$@"
}

# zebra's FPM connection in the namespace has data it cannot send (lcfibd
# reads nothing: it is stopped).
zebra_blocked()
{
	ns ss -tnH state established "( dport = :$1 )" | awk '$2 > 0 { found = 1 } END { exit !found }'
}

# zebra killed in the middle of its replay, with routes gone from the kernel
# and new ones come meanwhile: the cut replay sweeps nothing; the next full
# one leaves no stale route and misses none. $1: nexthop groups on or off.
frr_restart_mid_replay()
{
	local port nhg=$1 n kstatic=4 total gone frames s settled line gone_re
	n=$(scaled 3000 1000)
	frr_need
	frr_netns
	# Tiny TCP buffers in the namespace (still fast over lo, whose round
	# trip is tiny), so that a stopped lcfibd stops zebra's replay soon.
	ns sysctl -qw net.ipv4.tcp_rmem="4096 4096 4096" net.ipv4.tcp_wmem="4096 4096 4096" ||
		fail "cannot shrink the namespace's TCP buffers"
	port=$(free_port)
	frr_lcfibd "$port" 1500
	s=$(d_sock "$A")
	kernel_batch "$n" 0 add >"$T/add.batch"
	ns ip -batch "$T/add.batch" || fail "ip -batch"
	zebra_start "$port" "$nhg"
	wait_until "the first replay settles" log_has "$A" "replay settled"
	same_routes "$kstatic" 2 "the first replay" "2[01]\\."
	# Live, while zebra runs: a kernel route deleted and one added reach lcfibd.
	ns ip route del 20.0.1.0/24 || fail "ip route del"
	ns ip route add 21.255.0.0/24 via 198.18.0.2 proto static || fail "ip route add"
	same_routes "$kstatic" 2 "a kernel route deleted and one added, live" "2[01]\\."
	lcfib_has "$s" 20.0.1.0/24 && fail "the deleted kernel route is still in lcfibd"
	lcfib_has "$s" 21.255.0.0/24 || fail "the added kernel route is not in lcfibd"
	zebra_kill TERM
	# Meanwhile: a seventh of the routes goes, n/50 new ones come.
	"$PYTHON" -c '
import sys
for i, line in enumerate(open(sys.argv[1])):
    if i % 7 == 0:
        print(line.replace("route add", "route del", 1), end="")' "$T/add.batch" >"$T/del.batch"
	gone=$(wc -l <"$T/del.batch")
	ns ip -batch "$T/del.batch" || fail "ip -batch del"
	kernel_batch $((n / 50)) "$n" add >"$T/new.batch"
	ns ip -batch "$T/new.batch" || fail "ip -batch new"
	total=$(kernel_routes "$kstatic" | wc -l)
	# The cut, without guessing when: lcfibd stopped (SIGSTOP), zebra fills
	# its connection and waits in the middle of its replay; then it is
	# killed, and lcfibd goes on.
	kill -STOP "$(d_pid "$A")"
	zebra_start "$port" "$nhg"
	wait_until "zebra waits on its full connection to lcfibd" zebra_blocked "$port"
	zebra_kill KILL
	kill -CONT "$(d_pid "$A")"
	# Killed, zebra may leave in the middle of a frame; or, killed before
	# lcfibd (stopped) could accept it and read who owns its socket, it is
	# refused whole (seen in an ASan build): a cut replay all the same.
	gone_re="(disconnected|a frame) after|closed its socket before its owner could be checked"
	wait_until "lcfibd sees zebra go" log_count_ge "$A" 2 "$gone_re"
	line=$(grep -E "$gone_re" "$(d_log "$A")" | tail -1)
	if [[ $line == *"before its owner could be checked"* ]]; then
		echo "# zebra was gone before lcfibd could identify it: its replay refused whole"
	else
		expect_match "$line" "in the middle of its replay" "the cut replay's end"
		frames=$(echo "$line" | sed -E 's/.*\(([0-9]+) frames.*/\1/')
		echo "# zebra killed after $frames frames of a replay of $total routes"
		[ "$frames" -lt "$total" ] || fail "zebra's replay was not cut: $frames frames of $total routes"
	fi
	# 20.0.0.0/24 left the kernel with the first seventh: a cut replay does not sweep it.
	lcfib_has "$s" 20.0.0.0/24 || fail "a cut replay swept"
	# Longer than any pause of zebra's in a slow (sanitizer) build: an early
	# settle would sweep what zebra had yet to replay.
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"fpm":{"replay-settle":3000}}}}'
	settled=$(log_count "$A" "replay settled")
	zebra_start "$port" "$nhg"
	wait_until "the full replay settles" log_count_ge "$A" $((settled + 1)) "replay settled"
	same_routes "$kstatic" 2 "after the full replay: no stale route" "2[01]\\."
	expect_eq "$(lcfib_routes 2 '2[01]\.' | wc -l)" "$total" "routes after the full replay"
	# Exactly the routes that left the kernel were swept (and objects zebra
	# did not replay: its ids are its own, per start).
	log_has "$A" "swept $gone routes and [0-9]+ nexthop objects not announced again" ||
		fail "the sweep did not remove the $gone routes gone: $(grep swept "$(d_log "$A")")"
	fpm_counter "$s" waiting-routes 0
	fpm_counter "$s" waiting-nexthop-objects 0
	fpm_counter "$s" decode-errors 0
	fpm_counter "$s" apply-errors 0
	zebra_kill
	d_stop "$A"
}

test_fpm_frr_restart_in_the_middle_of_the_replay_with_nexthop_groups() { frr_restart_mid_replay yes; }
test_fpm_frr_restart_in_the_middle_of_the_replay_without_nexthop_groups() { frr_restart_mid_replay no; }

# ------------------------------------------------------------------- run

e2e_init
SEND=("$PYTHON" "$E2E_HELPERS/fpm_send.py")
t_run test_fpm_routes_are_added_replaced_and_deleted
t_run test_fpm_multipath_routes_keep_their_paths_and_weights
t_run test_fpm_nexthop_objects_and_groups_resolve_routes
t_run test_fpm_objects_may_come_after_what_needs_them_in_a_replay
t_run test_fpm_update_as_delete_and_add_in_one_frame
t_run test_fpm_a_second_peer_is_refused_and_the_first_goes_on
t_run test_fpm_a_bad_frame_closes_that_connection_and_lcfibd_serves_on
t_run test_fpm_malformed_netlink_in_a_good_frame_is_skipped
t_run test_fpm_a_disconnect_keeps_the_routes
t_run test_fpm_a_partial_replay_sweeps_what_was_not_replayed
t_run test_fpm_a_replay_cut_short_does_not_sweep
t_run test_fpm_a_port_in_use_refuses_the_edit
t_run test_fpm_a_user_not_allowed_is_refused_and_counted
t_run test_fpm_a_peer_that_leaves_a_frame_unfinished_is_dropped
t_run test_fpm_a_port_taken_at_start_does_not_stop_lcfibd
t_run test_fpm_listens_on_ipv6
t_run test_fpm_a_new_address_or_port_rebinds
t_run test_fpm_turning_the_feed_off_removes_its_routes
t_run test_fpm_full_table
t_run test_fpm_a_fast_peer_waits_for_the_writer
t_run test_fpm_frr_static_routes_with_nexthop_groups
t_run test_fpm_frr_static_routes_without_nexthop_groups
t_run test_fpm_a_remote_peer_needs_allowed_remote
t_run test_fpm_frr_an_idle_zebra_stays_connected
t_run test_fpm_frr_ecmp_routes_with_nexthop_groups
t_run test_fpm_frr_ecmp_routes_without_nexthop_groups
t_run test_fpm_frr_restart_in_the_middle_of_the_replay_with_nexthop_groups
t_run test_fpm_frr_restart_in_the_middle_of_the_replay_without_nexthop_groups
t_summary

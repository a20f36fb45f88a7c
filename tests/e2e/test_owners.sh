#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of route ownership: each source (the control socket,
# static routes, route files, the kernel feed, the FPM feed) owns the
# routes it put in, and a feed's add, replace, delete and sweep touch only
# its own. A key (table, prefix, metric) has one owner, the first source
# whose route went in; a feed leaves a key another source holds alone,
# and the operator's add to a key a feed holds is refused with the feed's
# name (docs/DAEMON.md, "Ownership"). Every pair of sources, in a network
# namespace (unshare: ip netns) with a veth pair, the kernel's routes made
# with ip, FPM's with tests/e2e/fpm_send.py run in the namespace.
#
# Needs root (network namespaces), iproute2, python3.

# shellcheck disable=SC2317 # functions run through t_run
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || e2e_skip_all "needs root, to make network namespaces"
command -v ip >/dev/null || e2e_skip_all "needs iproute2's ip"
ip netns add "lcfibo-probe$$" 2>/dev/null || e2e_skip_all "cannot make a network namespace"
ip netns del "lcfibo-probe$$"
e2e_init
have_cli || e2e_skip_all "lcfibctl is not built"

NS=
PORT=2620 # in the test's own namespace: no other test's listener there
OP=198.18.0.80 # the operator's gateway
KV=198.18.0.81 # the kernel's

# ------------------------------------------------------------------ helpers

# ns_new: a namespace for this test in $NS (lo up, v0 198.18.0.1/24 and
# its veth peer), removed when the test ends, with its daemons. It returns
# once the links are settled: a link or address change the daemon hears
# after its start makes its kernel feed resync, and a resync gives back a
# kernel route the operator deleted from lcfibd, which some tests do. So
# no IPv6 duplicate address detection (its end is an address change, a
# second later), and the veths' carrier is up (the kernel tells of it late).
ns_new()
{
	NS=lcfibo$$-${RANDOM}
	ip netns add "$NS" || fail "ip netns add $NS"
	trap 'd_kill_mine; ip netns del "$NS" 2>/dev/null' EXIT
	in_ns sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	ip -n "$NS" link set lo up
	ip -n "$NS" link add v0 type veth peer name v1
	ip -n "$NS" addr add 198.18.0.1/24 dev v0
	ip -n "$NS" link set v0 up
	ip -n "$NS" link set v1 up
	ip -n "$NS" route add 10.250.0.0/16 via $KV
	wait_until "the veths are up" links_up
}

links_up() { [ "$(ip -n "$NS" -o link show up | grep -c 'state UP')" = 2 ]; }

in_ns() { ip netns exec "$NS" "$@"; }

# o_start NAME KERNEL FPM: lcfibd in the namespace, the feeds on or off
# (true/false) from its config file.
o_start()
{
	local dir
	ns_new
	dir=$(d_dir "$1")
	mkdir -p "$dir/state"
	printf '{"lcfib:lcfib":{"feeds":{"kernel":{"enabled":%s,"table":["main"]},"fpm":{"enabled":%s,"port":%s,"replay-settle":300}}}}\n' \
		"$2" "$3" "$PORT" >"$dir/state/lcfibd.json"
	D_WRAP="ip netns exec $NS" d_start "$1" || fail "lcfibd $1 did not start"
	S=$(d_sock "$1")
}

# has PREFIX: lcfibd's main table routes of PREFIX, one a line: "metric M via GW".
has()
{
	PYTHONPATH=$E2E_HELPERS "$PYTHON" - "$S" "$1" <<'EOF'
import sys, ctl
ok, r = ctl.Conn(sys.argv[1]).rpc({"lcfib:routes": {"table": 254, "prefix": sys.argv[2]}})
assert ok, r
for rt in r["lcfib:routes"].get("route", []):
    if rt["prefix"] == sys.argv[2]:
        print("metric %s via %s" % (rt.get("metric", 0),
              ",".join(h.get("gateway", "-") for h in rt.get("nexthop", [])) or "-"))
EOF
}

# expect_routes PREFIX EXPECTED WHAT: lcfibd holds EXPECTED of PREFIX, once
# the writer caught up (the bound only keeps a broken feed from hanging).
expect_routes()
{
	local got end=$((SECONDS + 30))
	while :; do
		got=$(has "$1") || fail "routes RPC failed"
		[ "$got" = "$2" ] && return 0
		[ $SECONDS -lt $end ] || break
		sleep 0.05
	done
	fail "$3: lcfibd holds of $1
${got:-nothing}
expected
${2:-nothing}"
}

# quiet PREFIX EXPECTED WHAT: as expect_routes, and still so after the
# writer had time to apply what the feed read (a later event settles).
quiet()
{
	expect_routes "$@"
	sleep 0.5
	expect_routes "$@"
}

feed_counter() { value "$S" "/lcfib:lcfib/state/feeds/feed[name='$1']/$2"; }

# wait_dump: the kernel feed's first dump is over: it holds the sentinel
# route ns_new made, which the dump lists after the tests' prefixes.
wait_dump() { expect_routes 10.250.0.0/16 "metric 0 via $KV" "the kernel's sentinel route"; }

# fpm_bg <<EOF: a script sent to lcfibd's FPM feed from the namespace, the connection held.
fpm_bg()
{
	cat >"$T/fpm.script"
	# ip netns exec execs the sender: $! is the sender.
	ip netns exec "$NS" "$PYTHON" "$E2E_HELPERS/fpm_send.py" --port "$PORT" --hold 60 \
		script "$T/fpm.script" &
	FPM_PID=$!
}

# The routes file NAME with LINES.
route_file()
{
	local f=$T/$1
	shift
	printf '%s\n' "$@" >"$f"
	echo "$f"
}

# ------------------------------------------------------------------ tests

# The issue's case: the operator's route, then the kernel's on its key, by
# the first dump and by events. Before the fix the dump replaced the
# operator's route and the kernel's delete took the prefix away.
test_the_kernel_feed_leaves_a_control_socket_route_alone()
{
	o_start o1 false false
	cli "$S" route add 10.81.0.0/16 via $OP >/dev/null || fail "route add"
	in_ns ip route add 10.81.0.0/16 via $KV
	cli "$S" set feeds kernel enabled true >/dev/null || fail "set feeds kernel enabled true"
	wait_dump
	quiet 10.81.0.0/16 "metric 0 via $OP" "after the kernel feed's first dump"
	in_ns ip route del 10.81.0.0/16
	quiet 10.81.0.0/16 "metric 0 via $OP" "after ip route del"
	# By events: the kernel's add and delete of a key the operator holds.
	cli "$S" route add 10.80.0.0/16 via $OP >/dev/null || fail "route add"
	in_ns ip route add 10.80.0.0/16 via $KV
	in_ns ip route add 10.79.0.0/16 via $KV # the feed's own: it goes in
	expect_routes 10.79.0.0/16 "metric 0 via $KV" "the kernel's own route"
	quiet 10.80.0.0/16 "metric 0 via $OP" "after the kernel's add event"
	in_ns ip route replace 10.80.0.0/16 via 198.18.0.82
	quiet 10.80.0.0/16 "metric 0 via $OP" "after the kernel's replace event"
	in_ns ip route del 10.80.0.0/16
	quiet 10.80.0.0/16 "metric 0 via $OP" "after the kernel's delete event"
	# Another metric is another key: both are held.
	in_ns ip route add 10.81.0.0/16 via $KV metric 5
	expect_routes 10.81.0.0/16 "metric 0 via $OP
metric 5 via $KV" "the kernel's route of another metric"
	# A resync (a link change) and turning the feed off sweep only its own.
	in_ns ip link set v1 down
	in_ns ip link set v1 up
	sleep 1
	expect_routes 10.80.0.0/16 "metric 0 via $OP" "after a resync"
	cli "$S" set feeds kernel enabled false >/dev/null || fail "set feeds kernel enabled false"
	expect_routes 10.81.0.0/16 "metric 0 via $OP" "after turning the kernel feed off"
	expect_routes 10.79.0.0/16 "" "the kernel's own route after turning the feed off"
	d_stop o1
}

# A route file's routes against the kernel's (they are the operator's too).
test_the_kernel_feed_leaves_a_route_file_route_alone()
{
	local f
	o_start o2 false false
	f=$(route_file a.routes "route add 10.82.0.0/16 via $OP" "route add 10.83.0.0/16 via $OP")
	cli "$S" load "$f" >/dev/null || fail "load $f"
	in_ns ip route add 10.82.0.0/16 via $KV
	cli "$S" set feeds kernel enabled true >/dev/null || fail "set feeds kernel enabled true"
	wait_dump
	quiet 10.82.0.0/16 "metric 0 via $OP" "after the first dump"
	in_ns ip route del 10.82.0.0/16
	in_ns ip route add 10.83.0.0/16 via $KV
	in_ns ip route del 10.83.0.0/16
	quiet 10.82.0.0/16 "metric 0 via $OP" "after ip route del"
	quiet 10.83.0.0/16 "metric 0 via $OP" "after the kernel's add and delete events"
	d_stop o2
}

# The other way round: the operator cannot add to a key the kernel feed
# holds (the error names the feed), neither by the control socket nor by a
# route file (which then applies nothing); once the operator deleted the
# kernel's route the key is free, and the kernel's delete leaves the
# operator's new route.
test_the_operator_cannot_add_to_a_key_the_kernel_feed_holds()
{
	local out f
	o_start o3 true false
	wait_dump
	in_ns ip route add 10.84.0.0/16 via $KV
	expect_routes 10.84.0.0/16 "metric 0 via $KV" "the kernel's route"
	out=$(cli "$S" route replace 10.84.0.0/16 via $OP 2>&1) && fail "route replace on the kernel's key succeeded"
	expect_match "$out" "held by the kernel feed" "route replace's error"
	f=$(route_file b.routes "route add 10.85.0.0/16 via $OP" "route append 10.84.0.0/16 via $OP")
	out=$(cli "$S" load "$f" 2>&1) && fail "a route file appending to the kernel's key loaded"
	expect_match "$out" "b.routes:2:.*held by the kernel feed" "load's error"
	expect_routes 10.85.0.0/16 "" "the file's first line (the file applies whole or not at all)"
	expect_routes 10.84.0.0/16 "metric 0 via $KV" "the kernel's route after the refusals"
	cli "$S" route del 10.84.0.0/16 >/dev/null || fail "route del of the kernel's route"
	cli "$S" route add 10.84.0.0/16 via $OP >/dev/null || fail "route add once the key is free"
	in_ns ip route del 10.84.0.0/16
	quiet 10.84.0.0/16 "metric 0 via $OP" "after the kernel deleted its route"
	d_stop o3
}

# FPM against the control socket and a route file, both ways.
test_the_fpm_feed_leaves_the_operators_routes_alone()
{
	local f out
	o_start o4 false true
	cli "$S" route add 10.86.0.0/16 via $OP >/dev/null || fail "route add"
	f=$(route_file c.routes "route add 10.87.0.0/16 via $OP")
	cli "$S" load "$f" >/dev/null || fail "load $f"
	rm -f "$T/stage1"
	fpm_bg <<EOF
route add 10.86.0.0/16 via $KV dev 1
route add 10.87.0.0/16 via $KV dev 1
route add 10.88.0.0/16 via $KV dev 1
wait $T/stage1
route replace 10.86.0.0/16 via 198.18.0.82 dev 1
route del 10.86.0.0/16 via $KV dev 1
route del 10.87.0.0/16
EOF
	expect_routes 10.88.0.0/16 "metric 0 via $KV" "the FPM feed's own route"
	out=$(cli "$S" route add 10.88.0.0/16 via $OP metric 0 2>&1) && fail "route add on FPM's key succeeded"
	expect_match "$out" "held by the fpm feed" "route add's error"
	expect_routes 10.86.0.0/16 "metric 0 via $OP" "after FPM's add"
	expect_routes 10.87.0.0/16 "metric 0 via $OP" "after FPM's add"
	touch "$T/stage1"
	quiet 10.86.0.0/16 "metric 0 via $OP" "after FPM's replace and delete"
	quiet 10.87.0.0/16 "metric 0 via $OP" "after FPM's delete"
	# The peer goes, comes back and replays nothing: its sweep takes its own.
	kill "$FPM_PID" 2>/dev/null
	wait "$FPM_PID" 2>/dev/null
	local end=$((SECONDS + 30))
	until grep -q "FPM peer .* disconnected" "$(d_log o4)"; do
		[ $SECONDS -lt $end ] || fail "lcfibd does not see the FPM peer go"
		sleep 0.05
	done
	echo "sleep 2" | in_ns "$PYTHON" "$E2E_HELPERS/fpm_send.py" --port "$PORT" script - ||
		fail "second FPM session"
	expect_routes 10.88.0.0/16 "" "FPM's own route after its empty replay"
	expect_routes 10.86.0.0/16 "metric 0 via $OP" "after FPM's sweep"
	expect_routes 10.87.0.0/16 "metric 0 via $OP" "after FPM's sweep"
	d_stop o4
}

# The two feeds on one key: the first holds it, the other's add, delete
# and sweep leave it alone.
test_the_kernel_and_fpm_feeds_leave_each_others_routes_alone()
{
	o_start o5 true true
	wait_dump
	in_ns ip route add 10.89.0.0/16 via $KV
	expect_routes 10.89.0.0/16 "metric 0 via $KV" "the kernel's route"
	rm -f "$T/stage1"
	fpm_bg <<EOF
route add 10.89.0.0/16 via $OP dev 1
route add 10.90.0.0/16 via $OP dev 1
wait $T/stage1
route del 10.89.0.0/16 via $OP dev 1
EOF
	expect_routes 10.90.0.0/16 "metric 0 via $OP" "FPM's own route"
	quiet 10.89.0.0/16 "metric 0 via $KV" "after FPM's add on the kernel's key"
	in_ns ip route add 10.90.0.0/16 via $KV
	in_ns ip route del 10.90.0.0/16
	quiet 10.90.0.0/16 "metric 0 via $OP" "after the kernel's add and delete on FPM's key"
	touch "$T/stage1"
	quiet 10.89.0.0/16 "metric 0 via $KV" "after FPM's delete on the kernel's key"
	kill "$FPM_PID" 2>/dev/null
	wait "$FPM_PID" 2>/dev/null
	d_stop o5
}

# o_restart NAME: lcfibd NAME stopped and started again on its state.
o_restart()
{
	d_stop "$1"
	D_WRAP="ip netns exec $NS" d_start "$1" || fail "lcfibd $1 did not start again"
}

# Item 1 of issue 14: a restart loads the recorded route files again and
# the static routes of the config; runtime edits through the control
# socket are forgotten, as with ip route. Before, static routes did not
# exist and the README promised the same FIB after a restart.
test_a_restart_keeps_static_routes_and_recorded_files_not_runtime_edits()
{
	local f out
	o_start o6 false false
	f=$(route_file a.routes "route add 10.1.0.0/16 via $OP")
	cli "$S" load "$f" >/dev/null || fail "load $f"
	cli "$S" route add 10.2.0.0/16 via $OP >/dev/null || fail "route add"
	cli "$S" route del 10.1.0.0/16 >/dev/null || fail "route del"
	cli "$S" set static-routes route "10.3.0.0/16 via $OP metric 7" >/dev/null ||
		fail "set static-routes route"
	expect_routes 10.3.0.0/16 "metric 7 via $OP" "the static route"
	out=$(cli "$S" set static-routes route "10.4.0.0/33 via $OP" 2>&1) &&
		fail "a bad static route was taken"
	expect_match "$out" "static-routes route '10.4.0.0/33 via $OP'" "the bad static route's error"
	o_restart o6
	expect_routes 10.1.0.0/16 "metric 0 via $OP" "the recorded file's route after the restart"
	expect_routes 10.2.0.0/16 "" "the runtime route after the restart"
	expect_routes 10.3.0.0/16 "metric 7 via $OP" "the static route after the restart"
	# Deleting the entry deletes its route, and only it.
	cli "$S" route add 10.3.0.0/16 via $KV metric 8 >/dev/null || fail "route add"
	cli "$S" delete static-routes route "10.3.0.0/16 via $OP metric 7" >/dev/null ||
		fail "delete static-routes route"
	expect_routes 10.3.0.0/16 "metric 8 via $KV" "after deleting the static route"
	o_restart o6
	expect_routes 10.3.0.0/16 "" "the deleted static route after a restart"
	d_stop o6
}

# Static routes are the operator's: the feeds leave them alone, and a
# static route on a key a feed holds is not applied (the log says why).
test_the_feeds_leave_static_routes_alone()
{
	local out
	o_start o7 true true
	wait_dump
	cli "$S" set static-routes route "10.92.0.0/16 via $OP" >/dev/null || fail "set static route"
	expect_routes 10.92.0.0/16 "metric 0 via $OP" "the static route"
	in_ns ip route add 10.92.0.0/16 via $KV
	in_ns ip route del 10.92.0.0/16
	in_ns ip route add 10.93.0.0/16 via $KV
	expect_routes 10.93.0.0/16 "metric 0 via $KV" "the kernel's route"
	# A static route on a key the kernel feed holds fails the edit, saying why.
	out=$(cli "$S" set static-routes route "10.93.0.0/16 via $OP" 2>&1) &&
		fail "a static route on a kernel-held key was taken"
	expect_match "$out" "held by the kernel feed.*in-use" "the refusal"
	fpm_bg <<EOF
route add 10.92.0.0/16 via 198.18.0.82 dev 1
route del 10.92.0.0/16
EOF
	quiet 10.92.0.0/16 "metric 0 via $OP" "the static route after the feeds' adds and deletes"
	expect_routes 10.93.0.0/16 "metric 0 via $KV" "the kernel's route after a static one on its key"
	kill "$FPM_PID" 2>/dev/null
	wait "$FPM_PID" 2>/dev/null
	d_stop o7
}

t_run test_the_kernel_feed_leaves_a_control_socket_route_alone
t_run test_the_kernel_feed_leaves_a_route_file_route_alone
t_run test_the_operator_cannot_add_to_a_key_the_kernel_feed_holds
t_run test_the_fpm_feed_leaves_the_operators_routes_alone
t_run test_the_kernel_and_fpm_feeds_leave_each_others_routes_alone
t_run test_a_restart_keeps_static_routes_and_recorded_files_not_runtime_edits
t_run test_the_feeds_leave_static_routes_alone
t_summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of the control socket under clients that abuse it: one
# that writes requests and never reads, listings of the whole table that
# nobody reads, readers that take every connection slot. What they check
# is that everyone else is still served and the daemon's memory stays
# bounded (docs/DAEMON.md, "Limits"). tests/e2e/conn_abuse.py plays the
# clients and prints figures; the bounds here are generous on purpose:
# they separate "served in turn" from "starved", not fast from slow.
#
# Needs: bash, python3, gzip; setpriv (util-linux) and root for the slot
# test, which is skipped, saying why, without them.

# shellcheck disable=SC2317 # functions run through t_run
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

# figure OUTPUT KEY: the value of KEY=... in conn_abuse.py's output.
figure() { printf '%s\n' "$1" | sed -n "s/^$2=//p" | head -n 1; }


abuse() { "$PYTHON" "$E2E_HELPERS/conn_abuse.py" "$@"; }

# A daemon with the full table, as a neighbour would find it.
start_full()
{
	d_start "$1" "${@:2}" || fail "lcfibd did not start"
	ctl "$(d_sock "$1")" rpc "{\"lcfib:load\":{\"path\":\"$(fullview_file)\",\"transient\":true}}" \
		>/dev/null || fail "the full table did not load"
}

test_a_client_that_never_reads_neither_stalls_others_nor_keeps_the_daemon_busy()
{
	local s out kind=get
	start_full greedy
	s=$(d_sock greedy)
	# 100 `get` frames of the whole datastore at a time, never read, for up
	# to 60 s. A sanitizer build makes them too slowly to fill the buffers
	# in that time (TSan: 2,500 frames, no drop): there, lookups.
	e2e_sanitized && kind=lookup
	out=$(abuse greedy "$s" "$(d_pid greedy)" 60 "$kind")
	echo "$out" | sed 's/^/# greedy: /'
	expect_eq "$(figure "$out" prober_error)" "" "the other client's requests"
	# Typically under 0.2 s (0.3 s in a loaded make check; a sanitizer build
	# runs the daemon several times slower: 1.4 s seen under TSan); starved,
	# over 60 s.
	below "$(figure "$out" max_latency)" "$(latency_bound 1)" ||
		fail "another client's state took $(figure "$out" max_latency) s while one never read"
	expect_eq "$(figure "$out" dropped)" 1 "the greedy client dropped"
	expect_eq "$(value "$s" /lcfib:lcfib/state/control/dropped)" 1 "state control/dropped"
	log_has greedy 'left [0-9]+ bytes of replies unread for 10 s: dropping it' ||
		fail "no log line for the dropped client"
	below "$(figure "$out" cpu_after)" 0.2 ||
		fail "the daemon used $(figure "$out" cpu_after) of a CPU after the client left"
	d_stop greedy
}

test_listings_nobody_reads_keep_the_daemon_small_and_others_served()
{
	local s out grown
	start_full lister
	s=$(d_sock lister)
	# Three connections ask for every IPv4 route and read nothing, for 10 s.
	out=$(abuse listing "$s" "$(d_pid lister)" 10 3)
	echo "$out" | sed 's/^/# listing: /'
	expect_eq "$(figure "$out" prober_error)" "" "the other client's requests"
	below "$(figure "$out" max_latency)" "$(latency_bound 0.5)" ||
		fail "another client's state took $(figure "$out" max_latency) s during the listings"
	grown=$(($(figure "$out" rss_max) - $(figure "$out" rss_before)))
	[ "$grown" -lt 65536 ] || fail "the daemon grew by $grown KiB during three unread listings"
	grown=$(($(figure "$out" rss_after) - $(figure "$out" rss_before)))
	[ "$grown" -lt 65536 ] || fail "the daemon kept $grown KiB after three unread listings"
	d_stop lister
}

test_a_listing_in_pieces_is_the_table_exactly()
{
	local s f n
	have_cli || t_skip "no lcfibctl"
	d_start pieces || fail "lcfibd did not start"
	s=$(d_sock pieces)
	# 5,000 prefixes of each family: several pieces of either, and a family change.
	f=$T/pieces.txt
	{
		grep -m 5000 -v : "$(fullview_file)"
		grep -m 5000 : "$(fullview_file)"
	} | tr -d '\r' >"$f"
	ctl "$s" rpc "{\"lcfib:load\":{\"path\":\"$f\",\"transient\":true}}" >/dev/null ||
		fail "the load"
	cli "$s" show routes limit 10000000 | awk '{print $2}' >"$T/listed.txt" ||
		fail "lcfibctl show routes"
	expect_eq "$(sort "$T/listed.txt" | md5sum)" "$(sort "$f" | md5sum)" \
		"the listing against the file"
	# A limit at a piece's end, and one past it.
	cli "$s" show routes limit 1024 >"$T/out" || fail "show routes limit 1024"
	expect_eq "$(grep -vc '^#' "$T/out")" 1024 "routes with limit 1024"
	expect_match "$(tail -n 1 "$T/out")" '^# truncated: more routes match than the limit of 1024' \
		"the truncation, on stdout"
	n=$(cli "$s" show routes family ipv6 limit 1025 2>/dev/null | grep -vc '^#')
	expect_eq "$n" 1025 "IPv6 routes with limit 1025"
	# Within a prefix: what the file has there.
	n=$(cli "$s" show routes 1.0.0.0/8 limit 10000 | wc -l)
	expect_eq "$n" "$(grep -c '^1\.' "$f")" "routes within 1.0.0.0/8"
	expect_eq "$(cli "$s" show routes 192.0.2.0/24 | wc -l)" 0 "routes within an empty prefix"
	d_stop pieces
}

test_root_connects_when_readers_take_every_slot_and_refusals_are_answered()
{
	local s out nobody_py holder i refusals
	[ "$(id -u)" = 0 ] || t_skip "needs root, to run clients as nobody"
	command -v setpriv >/dev/null || t_skip "setpriv is not installed (Debian: util-linux)"
	getent group nogroup >/dev/null || t_skip "no group 'nogroup' on this host"
	nobody_py=$PYTHON
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$nobody_py" -c '' 2>/dev/null ||
		nobody_py=/usr/bin/python3
	mkdir -p "$T/bin"
	cp "$E2E_HELPERS/ctl.py" "$E2E_HELPERS/conn_abuse.py" "$T/bin/"
	chmod -R a+rX "$T/bin"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$nobody_py" -c '' 2>/dev/null ||
		t_skip "no python3 that nobody may run"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- test -r "$T/bin/ctl.py" ||
		t_skip "nobody cannot reach $T: make TMPDIR traversable by all"
	d_start slots -G nogroup || fail "lcfibd did not start"
	s=$(d_sock slots)
	# nobody opens 257 connections and holds them.
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$nobody_py" "$T/bin/conn_abuse.py" slots "$s" 257 60 >"$T/slots.out" 2>&1 &
	holder=$!
	for ((i = 0; i < 600; i++)); do
		grep -q '^holding' "$T/slots.out" && break
		kill -0 "$holder" 2>/dev/null || break
		sleep 0.1
	done
	out=$(cat "$T/slots.out")
	echo "$out" | sed 's/^/# nobody: /'
	expect_match "$out" '^holding' "nobody's connections"
	# Root still gets in, and may still change things.
	expect_status 0 ctl "$s" get state /lcfib:lcfib/state/control/clients
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"sync-mem":65536}}'
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	expect_eq "$(figure "$out" silent)" 0 "connections closed without a word"
	expect_eq "$(figure "$out" served)" 32 "nobody's connections served"
	expect_eq "$(figure "$out" refused)" 225 "nobody's connections refused"
	expect_match "$(figure "$out" refusal)" '"app-tag":"resource-denied"' "the refusal"
	expect_match "$(figure "$out" refusal)" 'as many connections as a read-only user may' \
		"the refusal's reason"
	expect_eq "$(value "$s" /lcfib:lcfib/state/control/refused)" 225 "state control/refused"
	# 225 refusals within seconds: one log line, saying how many it stands for later.
	refusals=$(grep -c 'control socket: refused' "$(d_log slots)")
	[ "$refusals" -le 2 ] || fail "$refusals log lines for 225 refusals"
	d_stop slots
}

test_lcfibctl_says_why_when_every_slot_is_taken()
{
	local s out holder i
	have_cli || t_skip "no lcfibctl"
	d_start full || fail "lcfibd did not start"
	s=$(d_sock full)
	# Root itself takes all 256 slots; the 257th connection is lcfibctl's.
	abuse slots "$s" 256 60 >"$T/full.out" 2>&1 &
	holder=$!
	for ((i = 0; i < 600; i++)); do
		grep -q '^holding' "$T/full.out" && break
		kill -0 "$holder" 2>/dev/null || break
		sleep 0.1
	done
	expect_eq "$(figure "$(cat "$T/full.out")" served)" 256 "root's connections served"
	expect_status 1 cli "$s" show state
	expect_match "$ERR" 'refused the connection: all connection slots are taken' \
		"lcfibctl's message"
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	d_stop full
}

e2e_init
[ -r "$FULLVIEW_GZ" ] || e2e_skip_all "no full table at $FULLVIEW_GZ"

t_run test_a_client_that_never_reads_neither_stalls_others_nor_keeps_the_daemon_busy
t_run test_listings_nobody_reads_keep_the_daemon_small_and_others_served
t_run test_a_listing_in_pieces_is_the_table_exactly
t_run test_root_connects_when_readers_take_every_slot_and_refusals_are_answered
t_run test_lcfibctl_says_why_when_every_slot_is_taken

t_summary

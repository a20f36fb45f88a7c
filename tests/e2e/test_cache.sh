#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of the destination cache (config cache/{enabled,size,
# mode,nr-scans,admission}, state/cache): its defaults; every answer of a
# loaded table (single lookups and streamed ones, with and without a
# table) the same with the cache on and off, and with second-miss
# admission, and repeated lookups answered from it; a
# route changed after an address was cached answered anew (invalidations
# counted); mode and size changed while a client streams lookups, every
# answer still right; bad values refused naming the leaf, the config
# unchanged; disabling frees the caches. See tests/e2e/lib.sh for the
# harness.
#
# Needs: bash, python3, gzip.

# shellcheck disable=SC2317 # functions run through t_run
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

# ----------------------------------------------------------------- helpers

CS=/lcfib:lcfib/state/cache

# cstate SOCK LEAF: a leaf of state/cache.
cstate() { value "$1" "$CS/$2"; }

# is_cached SOCK ADDRESS: whether a lookup of ADDRESS is a hit (after it, it is
# cached if it can be: for wait_until).
is_cached()
{
	local h
	h=$(cstate "$1" hits)
	cli "$1" lookup "$2" >/dev/null 2>&1
	[ "$(cstate "$1" hits)" -gt "$h" ]
}

# in_effect SOCK MODE SIZE NR-SCANS: whether state/cache shows these settings.
in_effect()
{
	[ "$(cstate "$1" mode)" = "$2" ] && [ "$(cstate "$1" size)" = "$3" ] &&
		[ "$(cstate "$1" nr-scans)" = "$4" ]
}

# admission_is SOCK VALUE: whether state/cache/admission is VALUE and a cache of it is made.
admission_is() { [ "$(cstate "$1" admission)" = "$2" ] && [ "$(cstate "$1" caches)" -gt 0 ]; }

# has_caches SOCK: whether a cache is made (for wait_until, which asks again on each try).
has_caches() { [ "$(cstate "$1" caches)" -gt 0 ]; }

# The routes: a few thousand of the full view (blackholes, both families)
# and the golden file's (every route type, multipath, metrics, throw
# routes, tables 100 and 200).
load_routes()
{
	local full
	full=$(fullview_file) || fail "cannot unpack $FULLVIEW_GZ"
	{ head -n 4000 "$full" && tail -n 1000 "$full"; } | tr -d '\r' >"$T/routes.txt"
	cli "$1" -q load "$T/routes.txt" transient >/dev/null || fail "cannot load $T/routes.txt"
	cli "$1" -q load "$E2E_SRCDIR/tests/golden/routes.txt" transient >/dev/null ||
		fail "cannot load tests/golden/routes.txt"
}

# start_loaded NAME: lcfibd NAME started, with the routes of load_routes.
start_loaded()
{
	d_start "$1" || fail "lcfibd $1 did not start"
	load_routes "$(d_sock "$1")"
}

# addrs_file N SEED: N addresses, each twice: most inside the loaded
# prefixes (first, last and random addresses), some at random (misses,
# the default routes), those of the golden routes, in a random order.
addrs_file()
{
	"$PYTHON" - "$T/routes.txt" "$1" "$2" >"$T/addrs-$2.txt" <<'EOF'
import ipaddress, random, sys
nets = [ipaddress.ip_network(l.split()[0], strict=False) for l in open(sys.argv[1]) if l.strip()]
n, rnd = int(sys.argv[2]), random.Random(int(sys.argv[3]))
out = ["10.1.2.3", "10.1.2.200", "10.1.9.9", "10.99.0.1", "10.66.1.1", "10.77.1.1",
       "10.88.1.1", "192.168.10.1", "100.64.1.1", "198.18.3.4", "198.19.255.9",
       "203.0.113.129", "203.0.113.130", "8.8.8.8", "2001:db8:1:2::5", "2001:db8:2::1",
       "2001:db8::1", "::1", "127.0.0.1"]
while len(out) < n:
    k = rnd.random()
    if k < 0.1:
        out.append(str(ipaddress.IPv4Address(rnd.getrandbits(32))))
    elif k < 0.12:
        out.append(str(ipaddress.IPv6Address((0x2 << 124) | rnd.getrandbits(124))))
    else:
        p = rnd.choice(nets)
        out.append(str(p.network_address + rnd.choice(
            [0, p.num_addresses - 1, rnd.randrange(p.num_addresses)])))
out = out * 2
rnd.shuffle(out)
print("\n".join(out))
EOF
	echo "$T/addrs-$2.txt"
}

# lookups SOCK FILE OUT [ARGS...]: streamed lookups of FILE, as JSON lines, in OUT.
lookups()
{
	local s=$1 f=$2 o=$3
	shift 3
	cli "$s" --json lookup -f "$f" "$@" >"$o" || fail "lookup -f $f $* failed: $(head -c 500 "$o")"
}

# same_answers A B WHAT: every line of A is that of B (and there are some).
same_answers()
{
	local n
	n=$(wc -l <"$1")
	[ "$n" -gt 100 ] || fail "$3: only $n answers"
	cmp -s "$1" "$2" || fail "$3: answers differ with the cache on and off:
$(diff "$1" "$2" | head -20)"
}

# ------------------------------------------------------------------ tests

test_defaults_in_state_and_config()
{
	d_start c1 || fail "lcfibd did not start"
	local s
	s=$(d_sock c1)
	expect_eq "$(cstate "$s" enabled)" false "state cache/enabled"
	expect_eq "$(cstate "$s" mode)" per-thread "state cache/mode"
	expect_eq "$(cstate "$s" size)" 65536 "state cache/size"
	expect_eq "$(cstate "$s" nr-scans)" 4 "state cache/nr-scans (per-thread's)"
	expect_eq "$(cstate "$s" admission)" every-miss "state cache/admission"
	expect_eq "$(cstate "$s" caches)" 0 "state cache/caches"
	expect_eq "$(cstate "$s" hits)" 0 "state cache/hits"
	expect_eq "$(value "$s" /lcfib:lcfib/cache/size)" 65536 "config cache/size"
	expect_eq "$(value "$s" /lcfib:lcfib/cache/enabled)" false "config cache/enabled"
	# Lookups while disabled make no cache.
	load_routes "$s"
	cli "$s" lookup 10.1.2.3 >/dev/null || fail "lookup"
	cli "$s" lookup 10.1.2.3 >/dev/null || fail "lookup"
	expect_eq "$(cstate "$s" caches)" 0 "caches after lookups while disabled"
	expect_eq "$(cstate "$s" misses)" 0 "misses after lookups while disabled"
	d_stop c1
}

test_answers_are_the_same_with_the_cache_on_and_off()
{
	start_loaded c2
	local s f a t args
	s=$(d_sock c2)
	f=$(addrs_file 6000 1)
	# The reference: the trie alone.
	lookups "$s" "$f" "$T/off.json"
	lookups "$s" "$f" "$T/off-100.json" table 100
	lookups "$s" "$f" "$T/off-main.json" table main
	cli "$s" set cache enabled true || fail "set cache enabled true"
	expect_eq "$(cstate "$s" enabled)" true "state cache/enabled"
	# The first pass makes the caches (its first turn goes to the trie),
	# the others are answered from them: every answer as the trie's.
	for i in 1 2 3; do
		lookups "$s" "$f" "$T/on.json"
		same_answers "$T/on.json" "$T/off.json" "pass $i, the kernel's rules"
		lookups "$s" "$f" "$T/on-100.json" table 100
		same_answers "$T/on-100.json" "$T/off-100.json" "pass $i, table 100"
		lookups "$s" "$f" "$T/on-main.json" table main
		same_answers "$T/on-main.json" "$T/off-main.json" "pass $i, table main"
	done
	# Caches of main (both families) and of table 100 (IPv4) at least.
	[ "$(cstate "$s" caches)" -ge 3 ] || fail "caches: $(cstate "$s" caches), expected >= 3"
	hits=$(cstate "$s" hits)
	[ "$hits" -gt 30000 ] || fail "hits: $hits after 9 passes of 12000 lookups"
	[ "$(cstate "$s" fills)" -gt 0 ] || fail "no fills"
	# Second-miss admission: new caches, the same answers.
	cli "$s" set cache admission second-miss || fail "set cache admission second-miss"
	wait_until "admission second-miss is in effect" admission_is "$s" second-miss
	for i in 1 2; do
		lookups "$s" "$f" "$T/on2.json"
		same_answers "$T/on2.json" "$T/off.json" "admission second-miss, pass $i"
	done
	[ "$(cstate "$s" first-misses)" -gt 0 ] || fail "no first misses with admission second-miss"
	cli "$s" set cache admission every-miss || fail "set cache admission every-miss"
	wait_until "admission every-miss is in effect" admission_is "$s" every-miss
	# The single lookups (the lookup RPC) too, cached by now, text and JSON.
	for a in 10.1.2.3 10.1.2.200 10.99.0.1 10.77.1.1 2001:db8:1:2::5 8.8.8.8; do
		for t in "" "table 100" "table 200"; do
			# shellcheck disable=SC2086 # $t is two words or none
			args="$a $t"
			cli "$s" set cache enabled false
			# shellcheck disable=SC2086
			off=$(cli "$s" --json lookup $args 2>&1)
			# shellcheck disable=SC2086
			offt=$(cli "$s" lookup $args 2>&1)
			cli "$s" set cache enabled true
			# shellcheck disable=SC2086
			cli "$s" lookup $args >/dev/null 2>&1
			# shellcheck disable=SC2086
			on=$(cli "$s" --json lookup $args 2>&1)
			# shellcheck disable=SC2086
			ont=$(cli "$s" lookup $args 2>&1)
			expect_eq "$on" "$off" "lookup $args (JSON) with the cache"
			expect_eq "$ont" "$offt" "lookup $args (text) with the cache"
		done
	done
	# Answered from the cache: at once here, a while after the enable under TSan.
	wait_until "the lookup RPC is answered from the cache" is_cached "$s" 10.1.2.3
	d_stop c2
}

test_a_route_changed_after_it_was_cached_is_answered_anew()
{
	start_loaded c3
	local s inv
	s=$(d_sock c3)
	cli "$s" set cache enabled true || fail "enable"
	# Each change comes when the address is answered from the cache.
	wait_until "10.1.2.77 is cached" is_cached "$s" 10.1.2.77
	expect_match "$(cli "$s" lookup 10.1.2.77)" "^10.1.2.0/24" "10.1.2.77 before the change"
	inv=$(cstate "$s" invalidations)
	# A longer prefix covering the cached address.
	cli "$s" route add 10.1.2.64/26 via 192.0.2.9 || fail "route add"
	expect_match "$(cli "$s" lookup 10.1.2.77)" "^10.1.2.64/26 via 192.0.2.9" "after route add"
	[ "$(cstate "$s" invalidations)" -gt "$inv" ] || fail "no invalidation counted"
	# Its nexthop replaced, then the route deleted: the older answer back.
	wait_until "10.1.2.77 is cached again" is_cached "$s" 10.1.2.77
	cli "$s" route replace 10.1.2.64/26 via 192.0.2.10 || fail "route replace"
	expect_match "$(cli "$s" lookup 10.1.2.77)" "^10.1.2.64/26 via 192.0.2.10" "after replace"
	wait_until "10.1.2.77 is cached again" is_cached "$s" 10.1.2.77
	cli "$s" route del 10.1.2.64/26 || fail "route del"
	expect_match "$(cli "$s" lookup 10.1.2.77)" "nexthop via 192.0.2.1 weight 1" "after del"
	# IPv6.
	wait_until "2001:db8:1:3::77 is cached" is_cached "$s" 2001:db8:1:3::77
	expect_match "$(cli "$s" lookup 2001:db8:1:3::77)" "^2001:db8:1::/48" "IPv6 before"
	cli "$s" route add 2001:db8:1:3::/64 via 2001:db8::9 || fail "route add IPv6"
	expect_match "$(cli "$s" lookup 2001:db8:1:3::77)" "^2001:db8:1:3::/64 via 2001:db8::9" \
		"IPv6 after route add"
	# A flush of the table: no route left.
	wait_until "10.1.2.77 is cached again" is_cached "$s" 10.1.2.77
	cli "$s" flush table main >/dev/null || fail "flush"
	expect_match "$(cli "$s" lookup 10.1.2.77 table main 2>&1)" "no route" "after the flush"
	inv2=$(cstate "$s" invalidations)
	[ "$inv2" -ge "$((inv + 4))" ] || fail "invalidations: $inv before, $inv2 after 5 changes"
	d_stop c3
}

test_mode_and_size_change_while_a_client_streams_lookups()
{
	start_loaded c4
	local s f pid changes=0
	s=$(d_sock c4)
	f=$(addrs_file 20000 2)
	cli "$s" set cache enabled true || fail "enable"
	lookups "$s" "$f" "$T/warm.json" # the caches are made
	# The client streams copies of the addresses until the changes are done
	# (two copies at least); what it sent is kept for the reference.
	rm -f "$T/stop"
	(
		n=0
		while [ ! -e "$T/stop" ] || [ "$n" -lt 2 ]; do
			cat "$f"
			n=$((n + 1))
		done
	) | tee "$T/sent.txt" | cli "$s" --json lookup - >"$T/on.json" &
	pid=$!
	for round in 1 2; do
		for kv in "mode common" "size 1000" "mode per-thread" "size 3" "nr-scans 64" \
			"size 65536" "nr-scans 1" "mode common"; do
			kill -0 "$pid" 2>/dev/null || fail "the client ended before the changes (round $round)"
			# shellcheck disable=SC2086
			cli "$s" set cache $kv || fail "set cache $kv"
			changes=$((changes + 1))
			sleep 0.02
		done
	done
	touch "$T/stop"
	wait "$pid" || fail "the streamed lookups failed: $(tail -c 300 "$T/on.json")"
	echo "# $changes changes while $(wc -l <"$T/sent.txt") addresses were looked up"
	# The last settings are in effect once the writer has made the caches.
	wait_until "the last settings are in effect" in_effect "$s" common 65536 1
	# A size under the floor is raised to it.
	cli "$s" set cache size 3 || fail "size 3"
	wait_until "a size of 3 is in effect as 4" in_effect "$s" common 4 1
	lookups "$s" "$f" "$T/last.json"
	[ "$(cstate "$s" evictions)" -gt 1000 ] || fail "evictions: $(cstate "$s" evictions)"
	# The reference: the trie alone.
	cli "$s" set cache enabled false || fail "disable"
	lookups "$s" "$T/sent.txt" "$T/off.json"
	same_answers "$T/on.json" "$T/off.json" "lookups while the cache is rebuilt"
	lookups "$s" "$f" "$T/off-f.json"
	same_answers "$T/last.json" "$T/off-f.json" "lookups in a cache of 4"
	d_stop c4
}

test_bad_values_are_refused_naming_the_leaf()
{
	d_start c5 || fail "lcfibd did not start"
	local s before
	s=$(d_sock c5)
	cli "$s" set cache size 1024 || fail "size 1024"
	before=$(ctl "$s" get config)
	expect_status 1 cli "$s" set cache size 0
	expect_match "$ERR" "cache/size" "the error of size 0"
	expect_status 1 cli "$s" set cache size 16777217
	expect_match "$ERR" "cache/size" "the error of size 16777217"
	expect_status 1 cli "$s" set cache nr-scans 200
	expect_match "$ERR" "cache/nr-scans" "the error of nr-scans 200"
	expect_status 1 cli "$s" set cache nr-scans 0
	expect_match "$ERR" "cache/nr-scans" "the error of nr-scans 0"
	expect_status 1 cli "$s" set cache mode bogus
	expect_match "$ERR" "cache/mode" "the error of mode bogus"
	expect_match "$ERR" "bogus" "the error of mode bogus"
	expect_status 1 cli "$s" set cache admission always
	expect_match "$ERR" "cache/admission" "the error of admission always"
	expect_eq "$(ctl "$s" get config)" "$before" "the config after the refused edits"
	expect_eq "$(cstate "$s" size)" 1024 "state cache/size after the refused edits"
	expect_eq "$(cstate "$s" mode)" per-thread "state cache/mode after the refused edits"
	d_stop c5
	# A bad value in the config file is refused at start, naming the leaf.
	mkdir -p "$T/bad"
	printf '{"lcfib:lcfib":{"cache":{"size":0}}}\n' >"$T/bad/config.json"
	expect_status 1 "$LCFIBD" -t -c "$T/bad/config.json" -y "$YANG_DIR"
	expect_match "$OUT$ERR" "cache/size" "lcfibd -t with size 0"
}

test_settings_persist_across_a_restart()
{
	d_start c6 || fail "lcfibd did not start"
	local s
	s=$(d_sock c6)
	cli "$s" set cache enabled true || fail "enable"
	cli "$s" set cache mode common || fail "mode"
	cli "$s" set cache nr-scans 8 || fail "nr-scans"
	cli "$s" set cache admission second-miss || fail "admission"
	d_stop c6
	d_start c6 || fail "lcfibd did not restart"
	expect_eq "$(cstate "$s" enabled)" true "enabled after the restart"
	expect_eq "$(cstate "$s" mode)" common "mode after the restart"
	expect_eq "$(cstate "$s" nr-scans)" 8 "nr-scans after the restart"
	expect_eq "$(cstate "$s" admission)" second-miss "admission after the restart"
	load_routes "$s"
	lookups "$s" "$(addrs_file 3000 3)" "$T/a.json"
	wait_until "a cache is made" has_caches "$s"
	# nr-scans back to the mode's default.
	cli "$s" delete cache nr-scans || fail "delete cache nr-scans"
	wait_until "nr-scans after delete is common's" in_effect "$s" common 65536 16
	d_stop c6
}

test_disabling_frees_the_caches()
{
	start_loaded c7
	local s f r0 r1 r2
	s=$(d_sock c7)
	f=$(addrs_file 3000 4)
	grep -v : "$f" >"$T/v4.txt"
	r0=$(value "$s" /lcfib:lcfib/state/memory/resident-bytes)
	# 1M elements of 64 bytes: 64 MiB for main's IPv4 cache.
	cli "$s" set cache size 1048576 || fail "size"
	cli "$s" set cache enabled true || fail "enable"
	lookups "$s" "$T/v4.txt" "$T/a.json"
	wait_until "a cache is made" has_caches "$s"
	r1=$(value "$s" /lcfib:lcfib/state/memory/resident-bytes)
	echo "# resident: $r0 before, $r1 with the cache"
	hits=$(cstate "$s" hits)
	cli "$s" set cache enabled false || fail "disable"
	expect_eq "$(cstate "$s" enabled)" false "state cache/enabled"
	expect_eq "$(cstate "$s" caches)" 0 "state cache/caches when disabled"
	# The counters keep their totals; lookups no longer count.
	lookups "$s" "$T/v4.txt" "$T/b.json"
	same_answers "$T/b.json" "$T/a.json" "answers after disabling"
	expect_eq "$(cstate "$s" hits)" "$hits" "hits after disabling"
	if e2e_sanitized ""; then
		echo "# a sanitizer's allocator keeps freed memory: RSS not checked"
	else
		[ "$((r1 - r0))" -gt $((48 << 20)) ] ||
			fail "the cache of 1M elements took $((r1 - r0)) bytes of RSS"
		# Freed after a grace period, by the writer.
		for i in $(seq 100); do
			r2=$(value "$s" /lcfib:lcfib/state/memory/resident-bytes)
			[ "$((r1 - r2))" -gt $((48 << 20)) ] && break
			sleep 0.1
		done
		echo "# resident: $r2 after disabling"
		[ "$((r1 - r2))" -gt $((48 << 20)) ] || fail "RSS $r1 -> $r2 after disabling"
	fi
	# Enabled again: new caches, made at the next lookups.
	cli "$s" set cache enabled true || fail "enable again"
	lookups "$s" "$T/v4.txt" "$T/c.json"
	same_answers "$T/c.json" "$T/a.json" "answers after enabling again"
	wait_until "a cache is made again" has_caches "$s"
	d_stop c7
}

e2e_init
have_cli || e2e_skip_all "lcfibctl is not built at $LCFIBCTL"
[ -r "$FULLVIEW_GZ" ] || e2e_skip_all "no $FULLVIEW_GZ"
t_run test_defaults_in_state_and_config
t_run test_answers_are_the_same_with_the_cache_on_and_off
t_run test_a_route_changed_after_it_was_cached_is_answered_anew
t_run test_mode_and_size_change_while_a_client_streams_lookups
t_run test_bad_values_are_refused_naming_the_leaf
t_run test_settings_persist_across_a_restart
t_run test_disabling_frees_the_caches
t_summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of the files a client names: lcfibd (root) reads a
# route file with the rights of the client that named it, never its own;
# quotes at most a cut token of a bad line; refuses what is not a regular
# file, or is larger than max-route-file-size, at once; and a load in
# progress ends when the daemon is told to exit (SIGTERM) or its client
# goes away (Ctrl-C), applying nothing. See tests/e2e/lib.sh for the
# harness.
#
# Needs: bash, python3, gzip, setpriv (util-linux) and root, to run
# clients as nobody (the access tests are skipped, saying why, without).

# shellcheck disable=SC2317 # functions run through t_run
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

# ----------------------------------------------------------------- helpers

# The test's own copies of lcfibctl, its library, the YANG module and
# ctl.py, where nobody can reach them (the checkout may be under /root).
nobody_setup()
{
	[ "$(id -u)" = 0 ] || t_skip "needs root, to run clients as nobody"
	command -v setpriv >/dev/null || t_skip "setpriv is not installed (Debian: util-linux)"
	getent group nogroup >/dev/null || t_skip "no group 'nogroup' on this host"
	NOBODY_PYTHON=$PYTHON
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$NOBODY_PYTHON" -c '' 2>/dev/null ||
		NOBODY_PYTHON=/usr/bin/python3
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$NOBODY_PYTHON" -c '' ||
		t_skip "no python3 that nobody may run"
	mkdir -p "$T/bin/yang"
	cp "$E2E_HELPERS/ctl.py" "$LCFIBCTL" "$T/bin/"
	cp "$YANG_DIR"/*.yang "$T/bin/yang/"
	cp -P "$E2E_BUILDDIR"/lib/.libs/liblcfib.so* "$T/bin/" 2>/dev/null || true
	chmod -R a+rX "$T/bin"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- test -r "$T/bin/ctl.py" ||
		t_skip "nobody cannot reach $T: make TMPDIR traversable by all"
}

# as_admin CMD...: CMD as nobody, a member of the admin group nogroup (not root).
as_admin() { setpriv --reuid=65534 --regid=65534 --groups=65534 -- "$@"; }

# nobody_cli SOCK ARGS...: lcfibctl as that admin.
nobody_cli()
{
	local s=$1
	shift
	as_admin env LD_LIBRARY_PATH="$T/bin" "$T/bin/lcfibctl" -s "$s" -y "$T/bin/yang" "$@"
}

# nobody_ctl SOCK ARGS...: the raw client (a path, no descriptor) as that admin.
nobody_ctl() { as_admin "$NOBODY_PYTHON" "$T/bin/ctl.py" "$@"; }

# A daemon whose socket nobody reaches and whose admin group nogroup is.
start_admin_daemon()
{
	d_start "$1" -G nogroup || fail "lcfibd did not start"
	ctl "$(d_sock "$1")" edit merge '{"lcfib:lcfib":{"admin-group":"nogroup"}}' >/dev/null ||
		fail "setting admin-group"
}

# no_secret TEXT WHAT: TEXT shows nothing of /etc/shadow or of /proc/1/*.
no_secret()
{
	expect_no_match "$1" 'root:|daemon:|nobody:|/sbin/|PATH=|HOME=|r-xp|rw-p' "$2"
}

# The full table, twice (tables 100 and 200), in batch syntax: 2.1 million
# routes, a load of several seconds, long enough to interrupt. Once in a
# sanitizer build, whose daemon is several times slower: as long a load.
big_file()
{
	local f=$T/big.routes t tables="100 200"
	! e2e_sanitized || tables=100
	if [ ! -s "$f" ]; then
		for t in $tables; do
			gzip -dc "$FULLVIEW_GZ" | sed "s/\r\$//; s/^/route add blackhole /; s/\$/ table $t/"
		done >"$f" || return 1
	fi
	echo "$f"
}

# load_phase SOCK: the phase of the load in progress, or nothing.
load_phase() { value "$1" /lcfib:lcfib/state/ingest/load/phase 2>/dev/null; }

is_applying() { [ "$(load_phase "$1")" = applying ]; }
no_load() { [ -z "$(load_phase "$1")" ]; }

# wait_applying SOCK: until a load applies its routes (the rest of the file is still parsed meanwhile).
wait_applying() { wait_until "the load applies" is_applying "$1"; }

# interruptible CMD... &: CMD with SIGINT at its default (a background job of
# a script starts with SIGINT ignored), as if run from a terminal. Only in
# the background: it execs, so that $! is CMD's pid.
interruptible()
{
	exec "$PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ------------------------------------------------------------------- tests

test_a_non_root_admin_cannot_read_roots_files_through_a_load()
{
	local s cfg out f f2
	nobody_setup
	[ -e /etc/shadow ] || t_skip "no /etc/shadow"
	setpriv --reuid=65534 --regid=65534 --groups=65534 -- test -r /etc/shadow &&
		t_skip "nobody may read /etc/shadow here"
	start_admin_daemon adm
	s=$(d_sock adm)
	cfg=$(ctl "$s" get config)
	f=$T/mine.routes
	echo "203.0.113.0/24" >"$f"
	chmod a+r "$f"

	# lcfibctl opens the file itself: the daemon never sees it.
	expect_status 1 nobody_cli "$s" load /etc/shadow transient true
	expect_match "$ERR" '/etc/shadow: Permission denied' "lcfibctl names the file"
	no_secret "$ERR" "lcfibctl's error"
	# A raw client names the path: the daemon opens it as that client.
	for f2 in /etc/shadow /proc/1/environ /proc/1/maps; do
		expect_status 1 nobody_ctl "$s" rpc \
			"{\"lcfib:load\":{\"path\":\"$f2\",\"skip-bad-lines\":true}}"
		expect_match "$OUT" "$f2: Permission denied" "a raw load of $f2"
		expect_match "$OUT" '"app-tag":"access-denied"' "a raw load of $f2"
		no_secret "$OUT" "the reply to a raw load of $f2"
	done
	# A descriptor of its own file, under root's file's name: loads nothing, records nothing.
	out=$(as_admin env PYTHONPATH="$T/bin" "$NOBODY_PYTHON" -c '
import json, socket, sys
from ctl import frame, answers
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
req = json.dumps({"lcfib:load": {"path": "/etc/shadow"}})
hdr = frame(3, req, flags=1)
with open(sys.argv[2], "rb") as f:
    socket.send_fds(s, [hdr], [f.fileno()])
for name, payload in answers(s):
    print(name, payload)
' "$s" "$f")
	expect_match "$out" 'not the file /etc/shadow|/etc/shadow: Permission denied' \
		"a descriptor passed under another file's name"
	# A config edit naming the file: refused likewise.
	expect_status 1 nobody_cli "$s" set route-files route-file /etc/shadow
	expect_match "$ERR" '/etc/shadow: Permission denied' "set route-files as nobody"

	expect_eq "$(ctl "$s" get config)" "$cfg" "the config"
	expect_eq "$(routes "$s")" 0 "routes"
	no_secret "$(cat "$(d_log adm)")" "the log"
	# What nobody may read, it may load, and it is recorded.
	expect_status 0 nobody_cli "$s" load "$f"
	expect_eq "$(routes "$s")" 1 "routes after a load of nobody's own file"
	expect_match "$(ctl "$s" get config)" "$f" "the config records it"
	d_stop adm
}

test_a_bad_line_is_quoted_cut_short()
{
	local s f long
	start_plain_daemon cut
	s=$(d_sock cut)
	long=secret:0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ
	f=$T/long.routes
	printf '%s\n' "$long" >"$f"
	expect_status 1 cli "$s" load "$f" transient true
	expect_match "$ERR" "got 'secret:0123456789abcdefghijkl\.\.\.'" "the token, cut"
	expect_no_match "$ERR" 'mnopq' "the rest of the token"
	expect_no_match "$(cat "$(d_log cut)")" 'mnopq' "the log"
	d_stop cut
}

start_plain_daemon() { d_start "$1" || fail "lcfibd did not start"; }

test_what_is_not_a_regular_file_is_refused_at_once()
{
	local s what want t0
	start_plain_daemon irr
	s=$(d_sock irr)
	mkfifo "$T/fifo"
	mkdir -p "$T/adir"
	for what in "$T/fifo:a FIFO" "/dev/zero:a character device" \
		"/dev/urandom:a character device" "$T/adir:a directory" \
		"/proc/version:on procfs"; do
		want=${what#*:}
		t0=$(now_ms)
		expect_status 1 timeout 20 "$LCFIBCTL" -s "$s" -y "$YANG_DIR" load "${what%%:*}" \
			transient true
		expect_match "$ERR" "${what%%:*} is $want" "a load of ${what%%:*}"
		[ $(($(now_ms) - t0)) -lt 5000 ] || fail "the refusal of ${what%%:*} took $(($(now_ms) - t0)) ms"
		# The raw protocol too: the daemon opens the path, O_NONBLOCK.
		expect_status 1 timeout 20 "$PYTHON" "$E2E_HELPERS/ctl.py" "$s" rpc \
			"{\"lcfib:load\":{\"path\":\"${what%%:*}\",\"transient\":true}}"
		expect_match "$OUT" "is $want" "a raw load of ${what%%:*}"
	done
	# The writer is free: a route edit goes through, and SIGTERM ends the daemon.
	cli "$s" route add blackhole 192.0.2.0/24 >/dev/null || fail "a route edit after the refusals"
	d_stop irr
}

test_a_file_over_max_route_file_size_is_refused()
{
	local s f
	start_plain_daemon big
	s=$(d_sock big)
	expect_eq "$(value "$s" /lcfib:lcfib/max-route-file-size)" 1073741824 "the default"
	cli "$s" set max-route-file-size 4K >/dev/null || fail "set max-route-file-size 4K"
	f=$T/5k.routes
	gzip -dc "$FULLVIEW_GZ" | head -c 5000 | head -n -1 >"$f"
	expect_status 1 cli "$s" load "$f" transient true
	expect_match "$ERR" "$f is [0-9]+ bytes, more than the limit of 4096 \(max-route-file-size\)" \
		"a load by path"
	expect_status 1 cli "$s" load - transient true <"$f"
	expect_match "$ERR" "larger than 4096 bytes \(max-route-file-size\)" "a streamed load"
	expect_eq "$(routes "$s")" 0 "routes"
	head -n 20 "$f" >"$T/small.routes"
	expect_status 0 cli "$s" load "$T/small.routes" transient true
	expect_eq "$(routes "$s")" 20 "routes of a file under the bound"
	d_stop big
}

test_sigterm_during_a_long_load_ends_the_daemon_within_a_second()
{
	local s f pid t0 dt st bound
	f=$(big_file) || fail "cannot write the big file"
	start_plain_daemon term
	s=$(d_sock term)
	cli "$s" load "$f" transient true >/dev/null 2>&1 &
	wait_applying "$s"
	pid=$(d_pid term)
	t0=$(now_ms)
	kill -TERM "$pid"
	st=$(d_wait_exit term)
	dt=$(($(now_ms) - t0))
	d_forget term
	expect_eq "$st" 0 "lcfibd's exit status"
	echo "# exited $dt ms after SIGTERM"
	# A second; under ASan or TSan frees are slower and LSan scans the heap at exit.
	bound=1000
	! grep -Eq -- '-fsanitize=' "$E2E_BUILDDIR/Makefile" 2>/dev/null || bound=5000
	[ "$dt" -lt "$bound" ] ||
		fail "lcfibd took $dt ms (more than $bound) to exit after SIGTERM in the middle of a load"
	log_has term 'big.routes.*cancelled' || fail "the log does not say the load was cancelled"
}

# A bad line at the end of a big file: the routes before it went in while
# the file was parsed; they come out again, and the load fails with the
# line's own message: nothing applied, nothing recorded.
test_a_late_bad_line_undoes_a_load()
{
	local s f=$T/late-bad.routes cfg n
	start_plain_daemon late
	s=$(d_sock late)
	cli "$s" route add blackhole 192.0.2.0/24 >/dev/null || fail "a route"
	cfg=$(ctl "$s" get config)
	{ cat "$(big_file)" && echo 'route add 10.0.0.0/8 via'; } >"$f" || fail "cannot write $f"
	n=$(wc -l <"$f")
	expect_status 1 cli "$s" load "$f"
	expect_match "$ERR" "$f:$n:[0-9]+: expected" "the bad line's message"
	expect_eq "$(routes "$s")" 1 "routes after the refused load"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the config (nothing recorded)"
	log_has late "load of $f applied nothing: $f:$n:" || fail "the log does not say why"
	d_stop late
}

# ctrl_c_cancels NAME INPUT LOAD-ARGS...: Ctrl-C (SIGINT) to lcfibctl, its
# standard input INPUT, while the daemon applies.
ctrl_c_cancels()
{
	local name=$1 input=$2 s pid cfg
	shift 2
	start_plain_daemon "$name"
	s=$(d_sock "$name")
	cli "$s" route add blackhole 192.0.2.0/24 >/dev/null || fail "a route"
	cfg=$(ctl "$s" get config)
	interruptible "$LCFIBCTL" -s "$s" -y "$YANG_DIR" load "$@" <"$input" >"$T/$name.out" 2>&1 &
	pid=$!
	wait_applying "$s"
	kill -INT "$pid"
	wait "$pid" && fail "lcfibctl was not interrupted"
	# The writer stops and rolls back: the load ends, nothing applied.
	wait_until "the cancelled load ends" no_load "$s"
	expect_eq "$(routes "$s")" 1 "routes after the cancelled load"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the config (nothing recorded)"
	log_has "$name" 'cancelled' || fail "the log does not say the load was cancelled"
	d_stop "$name"
}

test_ctrl_c_cancels_a_load_of_a_file()
{
	local f
	f=$(big_file) || fail "cannot write the big file"
	ctrl_c_cancels ctrlc /dev/null "$f"
}

test_ctrl_c_cancels_a_streamed_load()
{
	local f
	f=$(big_file) || fail "cannot write the big file"
	ctrl_c_cancels ctrlcs "$f" -
}

# ------------------------------------------------------------------- main

e2e_init
[ -r "$FULLVIEW_GZ" ] || e2e_skip_all "no full table at $FULLVIEW_GZ"

# Issue 14, item 9: a route-files edit naming a file with a bad line fails
# (lcfibctl exits 1) with the file's own error: file:line, the bad token,
# app-tag route-file-error, nothing else of the file; the running config
# and the FIB stay as they were. With skip-bad-lines the good lines load.
test_a_route_file_edit_with_a_bad_line_fails_and_changes_nothing()
{
	local s cfg out bad=$T/bad.routes two=$T/two-bad.routes
	have_cli || t_skip "lcfibctl is not built"
	d_start ef || fail "lcfibd did not start"
	s=$(d_sock ef)
	printf 'route add 10.91.0.0/16 via 192.0.2.1\n' >"$T/good.routes"
	expect_status 0 cli "$s" set route-files route-file "$T/good.routes"
	wait_until "the good file is loaded" value_is "$s" /lcfib:lcfib/state/routes/ipv4 1
	cfg=$(ctl "$s" get config)
	printf '%s\n' 'route add 10.92.0.0/16 via 192.0.2.1' \
		'route add 10.93.0.0/16 via 192.0.2.1 tokenX-bad' \
		'route add 10.94.0.0/16 via 192.0.2.1 # restOfFile' >"$bad"
	expect_status 1 cli "$s" set route-files route-file "$bad"
	expect_match "$ERR" "$bad:2:[0-9]+: .*'tokenX-bad'.*route-file-error" "the edit's error"
	expect_no_match "$ERR" '10\.92|10\.94|restOfFile' "the error quotes only the bad token"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the running config after the refused edit"
	expect_no_match "$(cat "$(d_state ef)/lcfibd.json")" "bad.routes" "the config file"
	expect_eq "$(cli "$s" routes)" "10.91.0.0/16 via 192.0.2.1 proto boot" "the FIB"
	log_has ef "load of $bad refused: $bad:2:" || fail "the log does not say why"

	# Several bad lines: how many, and the first.
	printf '%s\n' 'route add 10.95.0.0/16 via' '10.96.0.0/40' >"$two"
	expect_status 1 cli "$s" set route-files route-file "$two"
	expect_match "$ERR" "$two: 2 bad lines, nothing applied; the first: $two:1:" "two bad lines"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the running config after the second refusal"

	# Told to skip bad lines, the edit takes the file and its good lines load.
	expect_status 0 cli "$s" set route-files route-file "$bad" skip-bad-lines true
	wait_until "the good lines are loaded" value_is "$s" /lcfib:lcfib/state/routes/ipv4 3
	expect_match "$(ctl "$s" get config)" "bad.routes" "the running config"
	d_stop ef
}

# Issue 14, item 9: a static route the FIB refuses fails the edit with the
# FIB's reason, and nothing of the edit stays: not its other routes, not
# the deletes it made, not its entries in the config.
test_a_static_route_the_fib_refuses_fails_the_edit_and_changes_nothing()
{
	local s cfg fib
	have_cli || t_skip "lcfibctl is not built"
	d_start es || fail "lcfibd did not start"
	s=$(d_sock es)
	expect_status 0 cli "$s" route add 10.8.0.0/16 via 192.0.2.1
	expect_status 0 cli "$s" set static-routes route "10.13.0.0/16 via 192.0.2.1"
	cfg=$(ctl "$s" get config)
	fib=$(cli "$s" routes)
	expect_match "$fib" "10.13.0.0/16 via 192.0.2.1" "the static route"

	# A key the operator's runtime route holds.
	expect_status 1 cli "$s" set static-routes route "10.8.0.0/16 via 192.0.2.9"
	expect_match "$ERR" "static route '10.8.0.0/16 via 192.0.2.9': .*route exists.*operation-failed" \
		"the edit's error"
	# A nexthop id that does not exist.
	expect_status 1 cli "$s" set static-routes route "10.5.0.0/16 nhid 77"
	expect_match "$ERR" "nexthop id 77 does not exist" "the edit's error"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the running config after the refusals"
	expect_eq "$(cli "$s" routes)" "$fib" "the FIB after the refusals"

	# One edit: a good route, then a refused one: the good one is not kept.
	expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"static-routes":{"route":[
		{"line":"10.12.0.0/16 via 192.0.2.1"},{"line":"10.5.0.0/16 nhid 77"}]}}}'
	expect_match "$OUT" "nexthop id 77 does not exist" "the merge's error"
	# One edit deleting an entry and adding a refused one: the deleted route comes back.
	expect_status 1 ctl "$s" edit replace '{"lcfib:lcfib":{"static-routes":{"route":[
		{"line":"10.5.0.0/16 nhid 77"}]}}}'
	expect_eq "$(ctl "$s" get config)" "$cfg" "the running config after the failed edits"
	expect_eq "$(cli "$s" routes)" "$fib" "the FIB after the failed edits"

	# Deleting an entry whose route the operator deleted already still works.
	expect_status 0 cli "$s" route del 10.13.0.0/16
	expect_status 0 cli "$s" delete static-routes route "10.13.0.0/16 via 192.0.2.1"
	expect_no_match "$(ctl "$s" get config)" "10.13" "the running config"
	d_stop es
}

# Issue 14, item 9: a route file whose routes the FIB refuses when the
# writer applies them (a key another source holds) fails the edit with the
# FIB's reason, and nothing of the edit stays: not its static routes, not
# the entry. A file of the same edit loaded before the refused one stays
# loaded, not configured, and the error says so.
test_a_route_file_the_fib_refuses_fails_the_edit_and_changes_nothing()
{
	local s cfg fib held=$T/held.routes good=$T/good2.routes
	have_cli || t_skip "lcfibctl is not built"
	d_start eh || fail "lcfibd did not start"
	s=$(d_sock eh)
	expect_status 0 cli "$s" route add 10.8.0.0/16 via 192.0.2.1
	cfg=$(ctl "$s" get config)
	fib=$(cli "$s" routes)
	printf '%s\n' 'route add 10.21.0.0/16 via 192.0.2.1' 'route add 10.8.0.0/16 via 192.0.2.9' >"$held"
	expect_status 1 cli "$s" set route-files route-file "$held"
	expect_match "$ERR" "$held:2:.*route exists.*route-file-error" "the edit's error"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the running config after the refusal"
	expect_eq "$(cli "$s" routes)" "$fib" "the FIB after the refusal"
	expect_no_match "$(cat "$(d_state eh)/lcfibd.json" 2>/dev/null)" "held.routes" "the config file"

	# With a static route in the same edit: the static route goes too.
	expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"static-routes":{"route":[
		{"line":"10.14.0.0/16 via 192.0.2.1"}]},"route-files":{"route-file":[
		{"path":"'"$held"'"}]}}}'
	expect_match "$OUT" "route exists" "the merge's error"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the running config after the failed merge"
	expect_eq "$(cli "$s" routes)" "$fib" "the FIB after the failed merge"

	# Two files: the one applied before the refused one stays loaded, and the error says so.
	printf 'route add 10.22.0.0/16 via 192.0.2.1\n' >"$good"
	expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"route-files":{"route-file":[
		{"path":"'"$good"'"},{"path":"'"$held"'"}]}}}'
	expect_match "$OUT" "route exists.*loaded before it and kept loaded, not configured: $good" \
		"the error names the file kept"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the running config after the two files"
	expect_match "$(cli "$s" routes)" "10.22.0.0/16 via 192.0.2.1" "the file loaded before"

	# Once the key is free, the same edit is taken.
	expect_status 0 cli "$s" route del 10.8.0.0/16
	expect_status 0 cli "$s" set route-files route-file "$held"
	expect_match "$(cli "$s" routes)" "10.8.0.0/16 via 192.0.2.9" "the file's route"
	expect_match "$(ctl "$s" get config)" "held.routes" "the running config"
	d_stop eh
}

# An edit that changes the FIB waits for the writer behind a long load,
# and its reply waits, but the daemon does not: other clients are
# answered meanwhile. The proof is in one reply: state read while the
# edit waits shows the load still applying.
test_an_edit_waiting_for_the_writer_does_not_stall_other_clients()
{
	local s f lpid epid e2pid phase
	have_cli || t_skip "lcfibctl is not built"
	f=$(big_file) || fail "cannot write the big file"
	start_plain_daemon ew
	s=$(d_sock ew)
	cli "$s" load "$f" transient true >/dev/null 2>&1 &
	lpid=$!
	wait_applying "$s"
	cli "$s" set static-routes route "10.15.0.0/16 via 192.0.2.1" >"$T/ew.out" 2>&1 &
	epid=$!
	# Time for the daemon to take the edit (it waits behind the load then).
	sleep 0.3
	kill -0 "$epid" 2>/dev/null ||
		t_skip "the load ended before the edit reached the daemon (a fast machine): nothing to compare"
	# Still the load's: applying its routes, or (faster loads) resizing the tries after them.
	phase=$(load_phase "$s")
	expect_match "$phase" '^(applying|rebalancing)$' "the load's phase, read while the edit waits"
	expect_no_match "$(ctl "$s" get config)" "10.15.0.0" "the config while the edit waits"
	# A second client's edit waits its turn, and is applied after the first.
	cli "$s" set static-routes route "10.16.0.0/16 via 192.0.2.1" >"$T/ew2.out" 2>&1 &
	e2pid=$!
	wait "$epid" || fail "the edit failed: $(cat "$T/ew.out")"
	wait "$e2pid" || fail "the second edit failed: $(cat "$T/ew2.out")"
	expect_match "$(ctl "$s" get config)" "10.16.0.0/16 via 192.0.2.1" "the second edit"
	wait "$lpid" || fail "the load failed"
	expect_match "$(ctl "$s" get config)" "10.15.0.0/16 via 192.0.2.1" "the config after the edit"
	expect_match "$(cli "$s" route get 10.15.1.1)" "10.15.0.0/16 via 192.0.2.1" "the static route"
	d_stop ew
}

t_run test_a_non_root_admin_cannot_read_roots_files_through_a_load
t_run test_a_bad_line_is_quoted_cut_short
t_run test_what_is_not_a_regular_file_is_refused_at_once
t_run test_a_file_over_max_route_file_size_is_refused
t_run test_sigterm_during_a_long_load_ends_the_daemon_within_a_second
t_run test_a_late_bad_line_undoes_a_load
t_run test_ctrl_c_cancels_a_load_of_a_file
t_run test_ctrl_c_cancels_a_streamed_load
t_run test_a_route_file_edit_with_a_bad_line_fails_and_changes_nothing
t_run test_a_static_route_the_fib_refuses_fails_the_edit_and_changes_nothing
t_run test_a_route_file_the_fib_refuses_fails_the_edit_and_changes_nothing
t_run test_an_edit_waiting_for_the_writer_does_not_stall_other_clients
t_summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What lcfibd(8), README.md and docs/DAEMON.md promise about the daemon
# itself (issue 14, items 3-10): the reclamation bound through flushes
# (max-object in state), exit status 2 on usage errors, `lcfibd -t` opening
# no socket, one default socket rule for lcfibd and lcfibctl (none without
# XDG_RUNTIME_DIR), every app-tag and file name DAEMON.md lists, the log
# naming how the kernel feed's receive buffer was set, a route-file edit
# refused with the reason, the pid file locked, a given socket directory
# not made. See tests/e2e/lib.sh for the harness.
#
# Needs: bash, python3; root, setpriv and unshare (util-linux) for the
# tests as nobody and in a network namespace, strace for the -t test: those
# are skipped, saying why, without them.

# shellcheck disable=SC2317 # functions run through t_run and t_case
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

log_has() { grep -Eq -- "$2" "$(d_log "$1")"; }

# state_json SOCK: the daemon's state as JSON.
state_json() { ctl "$1" get state | sed '1s/^reply //'; }

# reclaim_check SOCK SYNC-MEM WHAT: peak-pending-bytes <= sync-mem + max-object.
reclaim_check()
{
	local peak max pending
	peak=$(value "$1" /lcfib:lcfib/state/reclamation/peak-pending-bytes)
	max=$(value "$1" /lcfib:lcfib/state/reclamation/max-object)
	pending=$(value "$1" /lcfib:lcfib/state/reclamation/pending-bytes)
	echo "# sync-mem $2 after $3: peak-pending $peak, max-object $max, pending $pending"
	[ -n "$max" ] || fail "no reclamation/max-object in state"
	[ "$max" -gt 0 ] || fail "max-object is 0 after $3"
	[ "$peak" -le $(($2 + max)) ] ||
		fail "after $3: peak-pending-bytes $peak > sync-mem $2 + max-object $max"
}

# The widest internal node of any table, in bytes (lib/trie-tmpl.h tnode_size()).
widest_node()
{
	state_json "$1" | "$PYTHON" -c '
import json, sys
st = json.load(sys.stdin)["lcfib:lcfib"]["state"]
bits = max([int(b["bits"]) for t in st.get("table", []) for b in t.get("nodes-by-bits", [])] or [0])
print((24 + (9 << bits) + 7) & ~7 if bits else 0)'
}

# Item 3: the bound pending <= sync-mem + the largest retired object holds
# through flushes of each family and of all tables (a flush resizes the
# widest node prefix after prefix); max-object is in state and is at least
# the widest node the full table made.
test_reclamation_bound_holds_through_flushes_at_64k_and_512k()
{
	local full s sm widest
	# Under TSan two full loads and three flushes take seven minutes of
	# CI's thirty, for a bound that is arithmetic, not a race: the normal
	# and ASan builds check it here, and TSan sees the reclaimer's threads
	# in tests/test_reclaim and tests/test_concurrency.
	! e2e_sanitized thread ||
		t_skip "ThreadSanitizer build: the bound is checked by the normal and ASan builds"
	full=$(fullview_file) || fail "cannot unpack $FULLVIEW_GZ"
	for sm in 65536 524288; do
		d_start "rc$sm" || fail "lcfibd did not start"
		s=$(d_sock "rc$sm")
		ctl "$s" edit merge "{\"lcfib:lcfib\":{\"sync-mem\":$sm}}" >/dev/null ||
			fail "set sync-mem $sm"
		ctl "$s" rpc "{\"lcfib:load\":{\"path\":\"$full\",\"transient\":true}}" >/dev/null ||
			fail "load of the full table"
		widest=$(widest_node "$s")
		[ "$widest" -gt 2000000 ] || fail "the full table's widest node is only $widest bytes"
		reclaim_check "$s" "$sm" "the load"
		ctl "$s" rpc '{"lcfib:flush":{"family":"ipv4"}}' >/dev/null || fail "flush family ipv4"
		reclaim_check "$s" "$sm" "flush family ipv4"
		ctl "$s" rpc '{"lcfib:flush":{"family":"ipv6"}}' >/dev/null || fail "flush family ipv6"
		reclaim_check "$s" "$sm" "flush family ipv6"
		expect_eq "$(value "$s" /lcfib:lcfib/state/routes/ipv4)$(value "$s" /lcfib:lcfib/state/routes/ipv6)" \
			00 "routes after both flushes"
		ctl "$s" rpc "{\"lcfib:load\":{\"path\":\"$full\",\"transient\":true}}" >/dev/null ||
			fail "second load of the full table"
		ctl "$s" rpc '{"lcfib:flush":{"table":"all"}}' >/dev/null || fail "flush table all"
		reclaim_check "$s" "$sm" "flush table all"
		# Everything was retired: the widest node too.
		[ "$(value "$s" /lcfib:lcfib/state/reclamation/max-object)" -ge "$widest" ] ||
			fail "max-object is below the widest node the table had ($widest bytes)"
		d_stop "rc$sm"
	done
}

# Item 4: a bad option or argument exits with 2, and lcfibd(8) says so.
test_usage_errors_exit_2_as_the_man_page_says()
{
	local man
	expect_status 2 "$LCFIBD" --bogus
	expect_status 2 "$LCFIBD" -d bogus -t -y "$YANG_DIR" -c "$T/none.json"
	expect_status 2 "$LCFIBD" -t -y "$YANG_DIR" -c "$T/none.json" extra-word
	man=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$E2E_SRCDIR/docs/lcfibd.8")
	expect_match "$(echo "$man" | sed -n '/^\.B 2$/,/^\.TP/p')" "usage error: an unknown option" \
		"lcfibd(8) EXIT STATUS 2"
	expect_no_match "$(echo "$man" | sed -n '/^\.B 1$/,/^\.TP/p')" "bad option" \
		"lcfibd(8) EXIT STATUS 1"
}

# Item 5: `lcfibd -t` on the config of a running daemon with the FPM feed
# (and the kernel feed) on: valid, and no network socket opened.
test_check_config_opens_no_socket()
{
	local port st
	command -v strace >/dev/null || t_skip "strace is not installed"
	port=$((20000 + RANDOM % 20000))
	mkdir -p "$T/chk"
	printf '{"lcfib:lcfib":{"feeds":{"fpm":{"enabled":true,"address":"127.0.0.1","port":%d}}}}\n' \
		"$port" >"$T/chk/run.json"
	printf '{"lcfib:lcfib":{"feeds":{"kernel":{"enabled":true},"fpm":{"enabled":true,"address":"127.0.0.1","port":%d}}}}\n' \
		"$port" >"$T/chk/check.json"
	d_start chk -c "$T/chk/run.json" || fail "lcfibd with the FPM feed did not start"
	st=0
	# LeakSanitizer cannot run under ptrace (an ASan build): off for this run.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -o "$T/chk/trace" -e trace=socket,bind "$LCFIBD" -t -c "$T/chk/check.json" \
		-S "$T/chk" -y "$YANG_DIR" >"$T/chk/out" 2>&1 || st=$?
	cat "$T/chk/out"
	expect_eq "$st" 0 "lcfibd -t's status"
	expect_match "$(cat "$T/chk/out")" "check.json: valid" "lcfibd -t's output"
	if grep -E 'socket\(AF_(INET|INET6|NETLINK)|bind\(' "$T/chk/trace"; then
		fail "lcfibd -t opened or bound a network socket (above)"
	fi
	d_answers chk || fail "the running daemon stopped answering"
}

# Item 6: as nobody without XDG_RUNTIME_DIR there is no default socket:
# lcfibd and lcfibctl both refuse, saying to give -s; with XDG_RUNTIME_DIR
# both find the same one.
test_no_xdg_runtime_dir_both_refuse_with_advice_as_nobody()
{
	local st out home=$T/nobody-home xdg=$T/nobody-xdg i
	[ "$(id -u)" = 0 ] || t_skip "needs root, to run as nobody"
	command -v setpriv >/dev/null || t_skip "setpriv is not installed (Debian: util-linux)"
	have_cli || t_skip "lcfibctl is not built"
	e2e_programs_for_nobody || fail "cannot copy lcfibd for nobody"
	cp "$LCFIBCTL" "$T/bin/lcfibctl" && chmod a+rx "$T/bin/lcfibctl" || fail "copy lcfibctl"
	mkdir -p "$home" "$xdg" && chown 65534:65534 "$home" "$xdg" && chmod 0700 "$xdg"
	local as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups -- env -u XDG_RUNTIME_DIR
		-u LCFIB_SOCKET HOME="$home")
	st=0
	out=$(timeout 10 "${as_nobody[@]}" "$LCFIBD" -f -y "$YANG_DIR" 2>&1) || st=$?
	echo "lcfibd: $out"
	expect_eq "$st" 1 "lcfibd's status as nobody without XDG_RUNTIME_DIR"
	expect_match "$out" "XDG_RUNTIME_DIR is unset.*give -s PATH and -p FILE" "lcfibd's message"
	st=0
	out=$("${as_nobody[@]}" "$T/bin/lcfibctl" -y "$YANG_DIR" show state 2>&1) || st=$?
	echo "lcfibctl: $out"
	expect_eq "$st" 3 "lcfibctl's status as nobody without XDG_RUNTIME_DIR"
	expect_match "$out" "XDG_RUNTIME_DIR is unset.*give -s PATH" "lcfibctl's message"
	# With XDG_RUNTIME_DIR: the same path on both sides.
	mkdir -p "$T/xdgd"
	(
		setpriv --reuid=65534 --regid=65534 --clear-groups -- env XDG_RUNTIME_DIR="$xdg" \
			HOME="$home" "$LCFIBD" -f -y "$YANG_DIR" 2>"$T/xdgd/log" </dev/null &
		echo $! >"$T/xdgd/daemon.pid"
		st=0
		wait $! || st=$?
		echo "$st" >"$T/xdgd/exit-status.tmp"
		mv "$T/xdgd/exit-status.tmp" "$T/xdgd/exit-status"
	) &
	E2E_MY_DAEMONS+=(xdgd)
	for ((i = 0; i < 100; i++)); do
		[ -S "$xdg/lcfib/lcfibd.sock" ] && break
		sleep 0.1
	done
	[ -S "$xdg/lcfib/lcfibd.sock" ] || { cat "$T/xdgd/log"; fail "no socket in \$XDG_RUNTIME_DIR/lcfib"; }
	expect_status 0 setpriv --reuid=65534 --regid=65534 --clear-groups -- env -u LCFIB_SOCKET \
		XDG_RUNTIME_DIR="$xdg" "$T/bin/lcfibctl" -y "$YANG_DIR" show state routes
	kill -TERM "$(cat "$T/xdgd/daemon.pid")"
	expect_eq "$(d_wait_exit xdgd)" 0 "lcfibd's exit status as nobody"
}

# Item 8: every app-tag the daemon's code returns is listed in DAEMON.md;
# `in-use` is what a taken FPM port gives.
test_every_app_tag_is_documented()
{
	local tags tag doc port s out
	doc=$(sed -n '/App-tags:/,/^$/p' "$E2E_SRCDIR/docs/DAEMON.md" | tr '\n' ' ')
	[ -n "$doc" ] || fail "no 'App-tags:' paragraph in docs/DAEMON.md"
	tags=$( (sed -n 's/^#define CTL_TAG_[A-Z_]* *"\([a-z-]*\)".*/\1/p' "$E2E_SRCDIR/lib/ctl.h"
		grep -ho 'lcfibd_err_set([^,]*, *"[a-z-]*"' "$E2E_SRCDIR"/daemon/*.c |
			sed 's/.*"\([a-z-]*\)"/\1/') | sort -u)
	[ "$(echo "$tags" | wc -l)" -ge 8 ] || fail "found only these app-tags in the code: $tags"
	for tag in $tags; do
		[[ $doc == *"\`$tag\`"* ]] || fail "app-tag $tag is returned but not listed in DAEMON.md"
	done
	# in-use, for real: a port someone else listens on.
	port=$((20000 + RANDOM % 20000))
	"$PYTHON" -c "
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(1); sys.stdout.write('ok\n'); sys.stdout.flush(); time.sleep(30)" \
		>"$T/holder.out" &
	for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$T/holder.out" ] && break; sleep 0.1; done
	d_start tags || fail "lcfibd did not start"
	s=$(d_sock tags)
	out=$(ctl "$s" edit merge "{\"lcfib:lcfib\":{\"feeds\":{\"fpm\":{\"enabled\":true,\"address\":\"127.0.0.1\",\"port\":$port}}}}" 2>&1)
	kill %1 2>/dev/null
	expect_match "$out" '"app-tag":"in-use"' "the edit on a taken port"
}

# Item 8: the file names DAEMON.md gives exist.
test_daemon_md_names_files_that_exist()
{
	local p bad=
	for p in $(grep -o '`\(daemon\|lib\|cli\|tests\|docs\|yang\|tools\|dist\)/[A-Za-z0-9_.*/-]*`' \
		"$E2E_SRCDIR/docs/DAEMON.md" | tr -d '`' | sort -u); do
		# shellcheck disable=SC2086 # a glob (feed*.c) is meant
		ls -d "$E2E_SRCDIR"/$p >/dev/null 2>&1 || bad="$bad $p"
	done
	[ -z "$bad" ] || fail "docs/DAEMON.md names files that do not exist:$bad"
}

# Item 8: the log says which option set the kernel feed's receive buffer.
test_the_log_names_how_the_receive_buffer_was_set()
{
	[ "$(id -u)" = 0 ] || t_skip "needs root, for a network namespace"
	command -v unshare >/dev/null || t_skip "unshare is not installed (Debian: util-linux)"
	unshare -n true 2>/dev/null || t_skip "cannot make a network namespace here"
	mkdir -p "$T/kb"
	echo '{"lcfib:lcfib":{"feeds":{"kernel":{"enabled":true}}}}' >"$T/kb/c.json"
	D_WRAP="unshare -n" d_start kb -c "$T/kb/c.json" || fail "lcfibd with the kernel feed"
	for _ in $(seq 50); do log_has kb "receive buffer" && break; sleep 0.1; done
	grep "receive buffer" "$(d_log kb)"
	log_has kb "kernel feed: receive buffer [0-9]+ bytes by SO_RCVBUFFORCE$" ||
		fail "the log does not say SO_RCVBUFFORCE set the receive buffer"
}

# Item 9: a route-file entry whose file cannot be read fails the edit, with
# the reason; the entry is not in the config. A good one still loads.
test_a_route_file_edit_that_cannot_apply_fails_with_the_reason()
{
	local s st out
	have_cli || t_skip "lcfibctl is not built"
	d_start rf || fail "lcfibd did not start"
	s=$(d_sock rf)
	st=0
	out=$(cli "$s" set route-files route-file /nonexistent/x.routes 2>&1) || st=$?
	echo "$out"
	expect_eq "$st" 1 "lcfibctl's status for a missing route file"
	expect_match "$out" "/nonexistent/x.routes: No such file or directory.*route-file-error" "the error"
	expect_no_match "$(ctl "$s" get config)" "nonexistent" "the running config"
	st=0
	out=$(cli "$s" set route-files route-file "$T" 2>&1) || st=$?
	expect_eq "$st" 1 "lcfibctl's status for a directory"
	expect_match "$out" "is a directory: only regular files are read as route files.*route-file-error" "the error for a directory"
	printf 'route add 10.91.0.0/16 via 192.0.2.1\n' >"$T/good.routes"
	expect_status 0 cli "$s" set route-files route-file "$T/good.routes"
	for _ in $(seq 50); do
		[ "$(value "$s" /lcfib:lcfib/state/routes/ipv4)" = 1 ] && break
		sleep 0.1
	done
	expect_eq "$(value "$s" /lcfib:lcfib/state/routes/ipv4)" 1 "routes of the good file"
}

# Item 10: a second lcfibd given a running daemon's pid file refuses,
# naming its pid, and leaves the file alone.
test_a_second_daemon_on_the_pid_file_refuses()
{
	local pidf st first
	d_start pa || fail "lcfibd did not start"
	pidf=$(d_dir pa)/pid
	first=$(cat "$pidf")
	expect_eq "$first" "$(d_pid pa)" "the pid file"
	mkdir -p "$T/pb"
	st=0
	timeout -k 2 10 "$LCFIBD" -f -s "$T/pb/sock" -S "$T/pb" -p "$pidf" -y "$YANG_DIR" \
		>"$T/pb/log" 2>&1 || st=$?
	cat "$T/pb/log"
	expect_eq "$st" 1 "the second lcfibd's status"
	expect_match "$(cat "$T/pb/log")" "locked by a running lcfibd \\(pid $first\\)" "its error"
	expect_eq "$(cat "$pidf" 2>/dev/null)" "$first" "the pid file after the second one"
	[ ! -e "$T/pb/sock" ] || fail "the second lcfibd made a socket"
	d_answers pa || fail "the first daemon stopped answering"
	d_stop pa
	[ ! -e "$pidf" ] || fail "the pid file is still there after the daemon's exit"
}

# Item 10: -s (and -p, -c) in a directory that does not exist is refused;
# no directory is made.
test_a_socket_in_a_missing_directory_is_refused()
{
	local st
	mkdir -p "$T/ms"
	st=0
	timeout -k 2 10 "$LCFIBD" -f -s "$T/ms/no/such/sock" -S "$T/ms" -p "$T/ms/pid" \
		-y "$YANG_DIR" >"$T/ms/log" 2>&1 || st=$?
	cat "$T/ms/log"
	expect_eq "$st" 1 "lcfibd's status"
	expect_match "$(cat "$T/ms/log")" "-s $T/ms/no/such/sock: the directory $T/ms/no/such: No such file" \
		"its error"
	[ ! -e "$T/ms/no" ] || fail "lcfibd made $T/ms/no"
	st=0
	timeout -k 2 10 "$LCFIBD" -f -s "$T/ms/sock" -S "$T/ms" -p "$T/ms/nodir/pid" \
		-y "$YANG_DIR" >"$T/ms/log2" 2>&1 || st=$?
	expect_eq "$st" 1 "lcfibd's status with -p in a missing directory"
	[ ! -e "$T/ms/nodir" ] || fail "lcfibd made $T/ms/nodir"
}

e2e_init
t_run test_reclamation_bound_holds_through_flushes_at_64k_and_512k
t_run test_usage_errors_exit_2_as_the_man_page_says
t_run test_check_config_opens_no_socket
t_run test_no_xdg_runtime_dir_both_refuse_with_advice_as_nobody
t_run test_every_app_tag_is_documented
t_run test_daemon_md_names_files_that_exist
t_run test_the_log_names_how_the_receive_buffer_was_set
t_run test_a_route_file_edit_that_cannot_apply_fails_with_the_reason
t_run test_a_second_daemon_on_the_pid_file_refuses
t_run test_a_socket_in_a_missing_directory_is_refused
t_summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# lcfibd started the way users start it: without -f, so it forks into the
# background (as the systemd unit's Type=forking start does), with a pid
# file. The other end-to-end tests run it with -f; these check what only
# the backgrounded daemon does: the parent returns once the child serves
# (with the child's start-up status and errors), the FIB's reclamation
# thread runs in the child, SIGTERM ends it within a second and removes
# its pid file, SIGHUP reloads. See tests/e2e/lib.sh for the harness.
#
# Needs: bash, python3, gzip, timeout (coreutils).

# shellcheck disable=SC2317 # functions run through t_run and t_case
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

# bg_stop NAME: SIGTERM; the daemon must be gone within a second (ten in a
# sanitizer build: TSan's daemon freed the full table in 0.5 s on a loaded
# machine, and once took over 1 s in CI beside the other tests), its pid
# file and socket removed, and its log must say it exited.
bg_stop()
{
	local name=$1 dir bound t0
	dir=$(d_dir "$name")
	bound=$(latency_bound 1)
	t0=$(date +%s%N)
	kill -TERM "$(d_pid "$name")" || fail "lcfibd $name is not running"
	d_gone "$name" $((bound * 10)) || {
		sed 's/^/  | /' "$(d_log "$name")"
		fail "lcfibd $name still runs $bound s after SIGTERM (log above; killed by the harness)"
	}
	echo "# $name: gone $((($(date +%s%N) - t0) / 1000000)) ms after SIGTERM"
	[ ! -e "$dir/pid" ] || fail "the pid file $dir/pid is left after SIGTERM"
	[ ! -e "$dir/sock" ] || fail "the socket $dir/sock is left after SIGTERM"
	log_has "$name" "Terminated: exiting" || fail "no 'exiting' in the log"
}

test_background_start_returns_once_serving_and_sigterm_ends_it_within_a_second()
{
	local s pid sid
	d_start_bg svc || {
		sed 's/^/  | /' "$(d_log svc)"
		fail "the backgrounded start exited with status $D_BG_STATUS"
	}
	s=$(d_sock svc)
	pid=$(cat "$(d_dir svc)/pid")
	# The start returned: the socket answers at once, no retry.
	expect_eq "$(value "$s" /lcfib:lcfib/state/daemon/pid)" "$pid" "the pid file names the daemon"
	# Detached: a session of its own, which it does not lead (it cannot get a terminal).
	sid=$(awk '{ print $6 }' "/proc/$pid/stat")
	[ "$sid" != "$(awk '{ print $6 }' /proc/self/stat)" ] || fail "the daemon is in the caller's session"
	[ "$sid" != "$pid" ] || fail "the daemon leads its session"
	expect_match "$(ls "/proc/$pid/task" | wc -l)" '^[2-9]' "threads of the daemon (loop, writer, reclamation)"
	bg_stop svc
}

test_background_full_load_reclaims_in_the_background_and_exits_within_a_second()
{
	local s full batches i
	full=$(fullview_file) || fail "cannot unpack $FULLVIEW_GZ"
	d_start_bg full || fail "the backgrounded start exited with status $D_BG_STATUS"
	s=$(d_sock full)
	expect_status 0 "$PYTHON" "$E2E_HELPERS/ctl.py" "$s" rpc \
		"{\"lcfib:load\":{\"path\":\"$full\",\"transient\":true}}"
	expect_eq "$(value "$s" /lcfib:lcfib/state/routes/ipv4)" 901899 "IPv4 routes"
	expect_eq "$(value "$s" /lcfib:lcfib/state/routes/ipv6)" 160147 "IPv6 routes"
	# The load retired old trie nodes: the reclamation thread frees them in
	# batches (a few seconds at most; 30 s bounds a daemon without one).
	for ((i = 0; i < 300; i++)); do
		batches=$(value "$s" /lcfib:lcfib/state/reclamation/background-batches)
		[ "$batches" -gt 0 ] && break
		sleep 0.1
	done
	echo "# background-batches $batches"
	[ "$batches" -gt 0 ] || fail "background-batches $batches 30 s after a full load"
	bg_stop full
}

test_background_sighup_reloads_the_config_and_sigterm_still_ends_it()
{
	local s f
	d_start_bg hup || fail "the backgrounded start exited with status $D_BG_STATUS"
	s=$(d_sock hup)
	f=$(d_state hup)/lcfibd.json
	expect_eq "$(value "$s" /lcfib:lcfib/state/reclamation/sync-mem)" 524288 "default sync-mem"
	printf '{\n  "lcfib:lcfib": {\n    "sync-mem": 1048576\n  }\n}\n' >"$f"
	kill -HUP "$(d_pid hup)"
	wait_until "lcfibd logs the reload" log_has hup "config reloaded from $f"
	expect_eq "$(value "$s" /lcfib:lcfib/state/reclamation/sync-mem)" 1048576 \
		"sync-mem in state after SIGHUP"
	bg_stop hup
}

# Start-up errors reach the caller: the parent exits with status 1 and the
# message on its stderr, whether the error is found before the fork (the
# config) or after it (another daemon serves the socket).
test_background_start_failures_give_status_1_and_the_error_on_stderr()
{
	local dir s st p
	d_start_bg first || fail "the backgrounded start exited with status $D_BG_STATUS"
	s=$(d_sock first)
	dir=$(d_dir second)
	mkdir -p "$dir/state"
	st=0
	timeout -k 5 60 "$LCFIBD" -s "$s" -S "$dir/state" -p "$dir/pid" -y "$YANG_DIR" \
		</dev/null >"$dir/out" 2>"$dir/err" || st=$?
	# A daemon that failed but cannot exit (the bug this file tests) must not outlive the test.
	for p in $(pgrep -f -- "-S $dir/state"); do kill -KILL "$p"; done
	expect_eq "$st" 1 "the exit status of a start on a socket in use"
	expect_match "$(cat "$dir/err")" "another lcfibd is listening on $s" "its stderr"
	[ ! -e "$dir/pid" ] || fail "a pid file left by the failed start"
	echo '{"lcfib:lcfib":{"sync-mem":1}}' >"$dir/state/lcfibd.json"
	st=0
	timeout -k 5 60 "$LCFIBD" -s "$dir/sock" -S "$dir/state" -p "$dir/pid" -y "$YANG_DIR" \
		</dev/null >"$dir/out" 2>"$dir/err" || st=$?
	expect_eq "$st" 1 "the exit status of a start with an invalid config"
	expect_match "$(cat "$dir/err")" "config .*lcfibd.json.*sync-mem" "its stderr"
	expect_eq "$(value "$s" /lcfib:lcfib/state/daemon/pid)" "$(d_pid first)" "the first daemon"
	bg_stop first
}

# ------------------------------------------------------------ who may edit

# A member of the admin group is one by its process's groups (SO_PEERGROUPS),
# not by /etc/group: the same user with its groups dropped only reads. The
# group exists only in lcfibd's mount namespace, over a copy of /etc/group.
test_admin_rights_come_from_the_callers_groups_not_the_group_database()
{
	local s py gid=64999 st
	[ "$(id -u)" = 0 ] || t_skip "needs root, for a mount namespace and a client as nobody"
	command -v setpriv >/dev/null || t_skip "setpriv is not installed (Debian: util-linux)"
	command -v unshare >/dev/null || t_skip "unshare is not installed (Debian: util-linux)"
	getent group nogroup >/dev/null || t_skip "no group 'nogroup' on this host"
	mkdir -p "$T/bin"
	cp "$E2E_HELPERS/ctl.py" "$T/bin/"
	chmod -R a+rX "$T/bin"
	for py in "$PYTHON" /usr/bin/python3; do
		setpriv --reuid=65534 --regid=65534 --clear-groups -- "$py" -c "open('$T/bin/ctl.py')" \
			2>/dev/null && break
		py=
	done
	[ -n "$py" ] || t_skip "nobody cannot run python3 on $T/bin/ctl.py (TMPDIR not traversable?)"
	{
		cat /etc/group
		echo "lcfibadm:x:$gid:nobody"
	} >"$T/group"
	printf '#!/bin/sh\nmount --bind "%s" /etc/group && exec "$@"\n' "$T/group" >"$T/bin/with-group"
	chmod +x "$T/bin/with-group"
	D_WRAP="unshare -m --propagation private $T/bin/with-group" d_start adm -G nogroup ||
		fail "lcfibd did not start in its namespace"
	s=$(d_sock adm)
	expect_status 0 ctl "$s" edit merge '{"lcfib:lcfib":{"admin-group":"lcfibadm"}}'
	# nobody with lcfibadm among its process's groups: may edit.
	expect_status 0 setpriv --reuid=65534 --regid=65534 --groups="$gid" -- \
		"$py" "$T/bin/ctl.py" "$s" rpc '{"lcfib:route-add":{"prefix":"192.0.2.0/24"}}'
	# nobody, listed in lcfibadm, whose process dropped its groups: reads only.
	st=0
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$py" "$T/bin/ctl.py" "$s" rpc \
		'{"lcfib:route-add":{"prefix":"198.51.100.0/24"}}' >"$T/.out" 2>&1 || st=$?
	[ "$st" != 0 ] || fail "a member that dropped its groups added a route: $(cat "$T/.out")"
	expect_match "$(cat "$T/.out")" '"app-tag":"access-denied"' "the refusal"
	expect_eq "$(value "$s" /lcfib:lcfib/state/control/denied)" 1 "state control/denied"
	expect_eq "$(value "$s" /lcfib:lcfib/state/routes/ipv4)" 1 "IPv4 routes"
	d_stop adm
}

e2e_init
t_run test_background_start_returns_once_serving_and_sigterm_ends_it_within_a_second
t_run test_background_full_load_reclaims_in_the_background_and_exits_within_a_second
t_run test_background_sighup_reloads_the_config_and_sigterm_still_ends_it
t_run test_background_start_failures_give_status_1_and_the_error_on_stderr
t_run test_admin_rights_come_from_the_callers_groups_not_the_group_database
t_summary

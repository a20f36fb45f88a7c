# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The harness of lcfib's end-to-end tests, sourced by tests/e2e/test_*.sh.
#
#   e2e_init                 the temp dir $T, the paths below, cleanup at exit
#   d_start NAME [ARGS...]   starts lcfibd NAME (files in $T/NAME), waits until
#                            its socket answers; fails with its log if it dies
#   d_stop NAME              SIGTERM, then checks it exited with status 0
#   d_start_bg NAME [ARGS...] starts lcfibd NAME as users and systemd start
#                            it: backgrounded (no -f), with a pid file
#   d_gone NAME [TENTHS]     whether it has exited (waits up to TENTHS x 0.1 s)
#   d_sock NAME, d_log NAME, d_state NAME
#   t_run TEST [ARGS...]     runs the function TEST in a subshell, records
#                            pass, fail or skip; t_case NAME CMD... names it
#   t_summary                cmocka-style summary lines; exits 0 when all
#                            passed, 77 when some were skipped, else 1
#
# Inside a test: fail MSG (ends the test), t_skip REASON, expect_eq,
# expect_match, expect_status. A test's daemons are killed when it ends.
#
# Environment: LCFIB_SRCDIR, LCFIB_BUILDDIR (make check sets them; by default
# this file's checkout, built in-tree), LCFIB_DATA (tests/data), PYTHON,
# E2E_ONLY (a regex: run only the tests whose names match), E2E_KEEP=1 (keep
# the temp dir), E2E_SEED (the seed of the random tests).

set -u
set -o pipefail

E2E_SRCDIR=${LCFIB_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
E2E_BUILDDIR=${LCFIB_BUILDDIR:-$E2E_SRCDIR}
E2E_HELPERS=$E2E_SRCDIR/tests/e2e
LCFIB_DATA=${LCFIB_DATA:-$E2E_SRCDIR/tests/data}
LCFIBD=$E2E_BUILDDIR/daemon/lcfibd
LCFIBCTL=$E2E_BUILDDIR/cli/lcfibctl
YANG_DIR=$E2E_SRCDIR/yang
FULLVIEW_GZ=$LCFIB_DATA/fullview-2024.txt.gz
# shellcheck disable=SC2034 # for the tests that source this
FULLVIEW_ROUTES=1062046 # 901,899 IPv4 and 160,147 IPv6 prefixes

E2E_N=0
E2E_FAILED=()
E2E_SKIPPED=()
E2E_MY_DAEMONS=() # daemons started by this shell (the main one, or a test's subshell)
T=

# A python3 that any user can run (pyenv shims under /root are not).
e2e_find_python()
{
	local p

	for p in ${PYTHON:-} /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
		if [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 7))' 2>/dev/null; then
			PYTHON=$p
			return 0
		fi
	done
	return 1
}

# The whole script cannot run: automake's SKIP, with the reason.
# e2e_sanitized [KIND]: whether this build has a sanitizer (KIND: thread or
# address), read off its Makefile's SAN_CFLAGS.
e2e_sanitized()
{
	grep -Eq -- "^SAN_CFLAGS = .*-fsanitize=${1:-}" "$E2E_BUILDDIR/Makefile" 2>/dev/null
}

# latency_bound SECONDS: the bound for this build; ten times it in a
# sanitizer build, whose daemon runs several times slower.
latency_bound()
{
	if e2e_sanitized; then
		awk -v s="$1" 'BEGIN { print s * 10 }'
	else
		echo "$1"
	fi
}

# scaled N [MIN]: N times LCFIB_STRESS (the ThreadSanitizer build sets 0.05), at least MIN.
scaled()
{
	"$PYTHON" -c '
import sys
s = float(sys.argv[3] or 1)
assert s > 0, "LCFIB_STRESS must be a positive number"
print(max(int(sys.argv[2]), int(int(sys.argv[1]) * s)))' "$1" "${2:-1}" "${LCFIB_STRESS:-}" ||
		fail "LCFIB_STRESS='${LCFIB_STRESS:-}' is not a positive number"
}

# below A B: whether the number A is below B.
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

e2e_skip_all()
{
	echo "SKIP: $*"
	exit 77
}

e2e_init()
{
	e2e_find_python || e2e_skip_all "python3 (3.7 or later) is needed by the end-to-end tests"
	[ -x "$LCFIBD" ] || e2e_skip_all "no lcfibd at $LCFIBD: build it first (make)"
	[ -r "$YANG_DIR/lcfib.yang" ] || e2e_skip_all "no lcfib.yang in $YANG_DIR"
	# No __pycache__ in the source tree (it may be read-only: make distcheck).
	export PYTHON LCFIBD LCFIBCTL YANG_DIR LCFIB_DATA E2E_HELPERS PYTHONDONTWRITEBYTECODE=1
	T=$(mktemp -d "${TMPDIR:-/tmp}/lcfib-e2e.XXXXXX") || exit 1
	# Traversable by everyone: the non-admin test runs a client as nobody.
	chmod 0755 "$T"
	trap e2e_cleanup EXIT
	echo "# temp dir $T; srcdir $E2E_SRCDIR; builddir $E2E_BUILDDIR; python $PYTHON"
}

e2e_cleanup()
{
	d_kill_mine
	if [ ${#E2E_FAILED[@]} -eq 0 ] && [ "${E2E_KEEP:-0}" != 1 ]; then
		rm -rf "$T"
	else
		echo "# kept $T"
	fi
}

# ------------------------------------------------------------ assertions

fail()
{
	echo "FAIL: $*"
	exit 1
}

t_skip()
{
	echo "SKIP: $*"
	exit 77
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq()
{
	[ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

# expect_match TEXT EXTENDED-REGEX WHAT (a here-string, not a pipe: grep -q
# stops at the first match, and under pipefail the writer's SIGPIPE would
# fail the match)
expect_match()
{
	grep -Eq -- "$2" <<<"$1" || fail "$3: '$2' not found in:
$1"
}

# expect_no_match TEXT EXTENDED-REGEX WHAT
expect_no_match()
{
	! grep -Eq -- "$2" <<<"$1" || fail "$3: '$2' unexpectedly found in:
$1"
}

# expect_status STATUS CMD...: runs CMD, its stdout in $OUT, stderr in $ERR.
OUT='' ERR=''
expect_status()
{
	local want=$1 st=0
	shift
	"$@" >"$T/.out" 2>"$T/.err" || st=$?
	OUT=$(cat "$T/.out")
	ERR=$(cat "$T/.err")
	[ "$st" = "$want" ] || fail "$(printf '%q ' "$@"): exit status $st, expected $want
stdout: $OUT
stderr: $ERR"
}

# --------------------------------------------------------------- daemons

d_dir() { echo "$T/$1"; }
d_sock() { echo "$T/$1/sock"; }
d_state() { echo "$T/$1/state"; }
d_log() { echo "$T/$1/log"; }
d_pid() { cat "$T/$1/daemon.pid"; }

# Whether lcfibd NAME answers a get on its socket.
d_answers()
{
	"$PYTHON" "$E2E_HELPERS/ctl.py" "$(d_sock "$1")" get state /lcfib:lcfib/state/daemon/pid \
		>/dev/null 2>&1
}

# d_start NAME [ARGS...]: lcfibd in the foreground, its files in $T/NAME.
# $D_WRAP (e.g. "valgrind ...") goes before the program. A runner subshell
# waits for it and writes its exit status to $T/NAME/exit-status, so that any
# shell (a test's subshell too) can stop it and check how it exited.
d_start()
{
	local name=$1 dir i
	shift
	dir=$(d_dir "$name")
	mkdir -p "$dir"
	chmod 0755 "$dir"
	rm -f "$dir/daemon.pid" "$dir/exit-status"
	(
		# shellcheck disable=SC2086
		${D_WRAP:-} "$LCFIBD" -f -s "$dir/sock" -S "$dir/state" -p "$dir/pid" \
			-y "$YANG_DIR" -d info "$@" 2>>"$dir/log" </dev/null &
		echo $! >"$dir/daemon.pid.tmp"
		mv "$dir/daemon.pid.tmp" "$dir/daemon.pid"
		st=0
		wait $! || st=$?
		# Whole or not at all: d_wait_exit reads it as soon as it exists.
		echo "$st" >"$dir/exit-status.tmp"
		mv "$dir/exit-status.tmp" "$dir/exit-status"
	) 2>>"$dir/log" &
	E2E_MY_DAEMONS+=("$name")
	# Wait until it serves, or dies; the bound only keeps a hung start from hanging make check.
	for ((i = 0; i < 1200; i++)); do
		if [ -e "$dir/exit-status" ]; then
			echo "lcfibd $name died at start-up with status $(cat "$dir/exit-status"); its log:"
			sed 's/^/  | /' "$dir/log"
			return 1
		fi
		[ -e "$dir/daemon.pid" ] && d_answers "$name" && return 0
		sleep 0.1
	done
	echo "lcfibd $name did not answer on $dir/sock in 120 s; its log:"
	sed 's/^/  | /' "$dir/log"
	return 1
}

# d_wait_exit NAME: waits for lcfibd NAME to exit, prints its exit status
# (128 + N: killed by signal N; "hung": killed by this after 120 s).
d_wait_exit()
{
	local dir i
	dir=$(d_dir "$1")
	for ((i = 0; i < 1200; i++)); do
		[ -e "$dir/exit-status" ] && break
		sleep 0.1
	done
	if [ ! -e "$dir/exit-status" ]; then
		kill -KILL "$(d_pid "$1")" 2>/dev/null
		echo hung
		return
	fi
	cat "$dir/exit-status"
}

d_forget()
{
	local i
	for i in "${!E2E_MY_DAEMONS[@]}"; do
		[ "${E2E_MY_DAEMONS[$i]}" != "$1" ] || unset "E2E_MY_DAEMONS[$i]"
	done
}

# d_stop NAME: SIGTERM; fails unless lcfibd exits with status 0.
d_stop()
{
	local name=$1 st
	kill -TERM "$(d_pid "$name")" 2>/dev/null || fail "lcfibd $name is not running"
	st=$(d_wait_exit "$name")
	d_forget "$name"
	[ "$st" = 0 ] || {
		sed 's/^/  | /' "$(d_log "$name")"
		fail "lcfibd $name exited with status $st after SIGTERM (log above)"
	}
}

# d_start_bg NAME [ARGS...]: lcfibd NAME started the way users and systemd's
# Type=forking unit start it: no -f, so it forks into the background, and
# the command returns once the daemon serves (or failed). Its pid file is
# $T/NAME/pid (-p); --stderr keeps its log in $T/NAME/log. The start's exit
# status is in $D_BG_STATUS; timeout(1) keeps a start that never returns
# from hanging make check. Stopped with d_stop_bg, killed by d_kill_mine.
D_BG_STATUS=
d_start_bg()
{
	local name=$1 dir
	shift
	dir=$(d_dir "$name")
	mkdir -p "$dir"
	chmod 0755 "$dir"
	rm -f "$dir/daemon.pid" "$dir/exit-status" "$dir/pid"
	touch "$dir/bg"
	E2E_MY_DAEMONS+=("$name")
	D_BG_STATUS=0
	timeout -k 5 120 "$LCFIBD" -s "$dir/sock" -S "$dir/state" -p "$dir/pid" -y "$YANG_DIR" \
		-d info --stderr "$@" 2>>"$dir/log" </dev/null || D_BG_STATUS=$?
	[ -s "$dir/pid" ] && cp "$dir/pid" "$dir/daemon.pid"
	[ "$D_BG_STATUS" = 0 ]
}

# d_gone NAME [TENTHS]: whether lcfibd NAME (its pid in $T/NAME/daemon.pid)
# has exited, waiting up to TENTHS tenths of a second (default 0). Not our
# child: a zombie (no reaper in a container) counts as exited.
d_gone()
{
	local pid i st
	pid=$(d_pid "$1") || return 0
	for ((i = 0; ; i++)); do
		st=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) || st=
		[ -z "$st" ] || [ "$st" = Z ] && return 0
		[ "$i" -lt "${2:-0}" ] || return 1
		sleep 0.1
	done
}

# Kills the daemons this shell started and did not stop.
d_kill_mine()
{
	local name
	for name in "${E2E_MY_DAEMONS[@]}"; do
		if [ -e "$T/$name/bg" ]; then
			d_gone "$name" || kill -KILL "$(d_pid "$name")" 2>/dev/null
			continue
		fi
		if [ ! -e "$T/$name/daemon.pid" ] || [ -e "$T/$name/exit-status" ]; then
			continue
		fi
		kill -KILL "$(cat "$T/$name/daemon.pid")" 2>/dev/null
		d_wait_exit "$name" >/dev/null
	done
	E2E_MY_DAEMONS=()
}

# e2e_programs_for_nobody: copies lcfibd and the YANG module to $T/bin,
# which every user can reach, and points LCFIBD and YANG_DIR there (for the
# calling test's subshell): a checkout under a 0700 directory (root's home,
# a mktemp -d folder) is out of reach of a daemon run as nobody. lcfibd
# links liblcfib in (no liblcfib.so from the build tree), so the copy runs.
e2e_programs_for_nobody()
{
	mkdir -p "$T/bin/yang" &&
		cp "$LCFIBD" "$T/bin/lcfibd" && cp "$YANG_DIR"/*.yang "$T/bin/yang/" &&
		chmod -R a+rX "$T/bin" || return 1
	LCFIBD=$T/bin/lcfibd
	YANG_DIR=$T/bin/yang
}

# ----------------------------------------------------------- clients

# ctl SOCK ARGS...: the raw client (tests/e2e/ctl.py).
ctl() { "$PYTHON" "$E2E_HELPERS/ctl.py" "$@"; }

# value SOCK XPATH: the value of one leaf (config or state), or nothing.
value() { "$PYTHON" "$E2E_HELPERS/ctl.py" "$1" value "$2"; }

# value_is SOCK PATH WANT: whether the leaf at PATH reads WANT now (for
# wait_until, which must ask again on each try).
value_is() { [ "$(value "$1" "$2")" = "$3" ]; }

# wait_until WHAT CMD...: retries CMD until it succeeds. The bound (120 s)
# only keeps a broken daemon from hanging the run; nothing asserts a time.
wait_until()
{
	local what=$1 i
	shift
	for ((i = 0; i < 1200; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "gave up waiting (120 s) until $what"
}

# netns_ready PID: whether process PID has a network namespace of its own.
# `unshare -n CMD &` unshares after the fork: until then, nsenter -t PID -n
# enters ours (a busy machine took over 0.1 s, and lo was set up here).
netns_ready() { [ "$(readlink "/proc/$1/ns/net")" != "$(readlink /proc/self/ns/net)" ]; }

# log_has NAME REGEX: whether lcfibd NAME's log has a line matching REGEX.
log_has() { grep -Eq -- "$2" "$(d_log "$1")"; }

# routes SOCK: IPv4 + IPv6 routes over all tables.
routes()
{
	local v4 v6
	v4=$(value "$1" /lcfib:lcfib/state/routes/ipv4) || return 1
	v6=$(value "$1" /lcfib:lcfib/state/routes/ipv6) || return 1
	echo $((v4 + v6))
}

# Whether lcfibctl is built (the CLI is newer than some of these tests).
have_cli() { [ -x "$LCFIBCTL" ] && "$LCFIBCTL" --help >/dev/null 2>&1; }

# cli SOCK ARGS...: lcfibctl on SOCK.
cli() {
	local s=$1
	shift
	"$LCFIBCTL" -s "$s" -y "$YANG_DIR" "$@"
}

# The full table as a plain route file (one blackhole per line, CRLF).
fullview_file()
{
	[ -s "$T/fullview.txt" ] || gzip -dc "$FULLVIEW_GZ" >"$T/fullview.txt" || return 1
	echo "$T/fullview.txt"
}

# ------------------------------------------------------------ running

# t_case NAME CMD [ARGS...]: runs CMD as the test called NAME, in a
# subshell (the daemons it starts die with it); records pass, fail or skip.
t_case()
{
	local name=$1 st=0 t0 ms
	shift
	if [ -n "${E2E_ONLY:-}" ] && ! [[ $name =~ $E2E_ONLY ]]; then
		return 0
	fi
	E2E_N=$((E2E_N + 1))
	echo "[ RUN      ] $name"
	t0=${EPOCHREALTIME/./}
	(
		E2E_MY_DAEMONS=()
		trap d_kill_mine EXIT
		"$@"
	) || st=$?
	ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
	case $st in
	0) echo "[       OK ] $name ($ms ms)" ;;
	77)
		echo "[  SKIPPED ] $name ($ms ms)"
		E2E_SKIPPED+=("$name")
		;;
	*)
		echo "[  FAILED  ] $name ($ms ms)"
		E2E_FAILED+=("$name")
		;;
	esac
}

# t_run TEST [ARGS...]: runs the function TEST as the test of that name.
t_run() { t_case "$1" "$@"; }

t_summary()
{
	local n
	echo "[==========] $E2E_N test(s) run."
	echo "[  PASSED  ] $((E2E_N - ${#E2E_FAILED[@]} - ${#E2E_SKIPPED[@]})) test(s)."
	if [ ${#E2E_SKIPPED[@]} -gt 0 ]; then
		echo "[  SKIPPED ] ${#E2E_SKIPPED[@]} test(s), listed below:"
		for n in "${E2E_SKIPPED[@]}"; do echo "[  SKIPPED ] $n"; done
	fi
	if [ ${#E2E_FAILED[@]} -gt 0 ]; then
		echo "[  FAILED  ] ${#E2E_FAILED[@]} test(s), listed below:"
		for n in "${E2E_FAILED[@]}"; do echo "[  FAILED  ] $n"; done
		exit 1
	fi
	[ ${#E2E_SKIPPED[@]} -eq 0 ] || exit 77
	exit 0
}

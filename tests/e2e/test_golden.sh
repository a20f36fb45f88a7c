#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Golden-file tests of lcfibctl's output: a fixed list of commands against
# lcfibd loaded with tests/golden/routes.txt; each command's stdout, stderr
# and exit status must equal tests/golden/NAME.out. Only outputs that do not
# depend on time, pids or memory are here.
#
# With GOLDEN_UPDATE=1 (`make golden-update`) the outputs are written to
# tests/golden/ instead: review the diff before committing it.
#
# The .out format: "$ lcfibctl ARGS", stdout, "--- stderr" and stderr when
# there is any, then "--- exit N". The source and temp directories read
# @SRCDIR@ and @TMP@.

# shellcheck disable=SC2317 # functions run through t_run and t_case
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

GOLDEN_DIR=$E2E_SRCDIR/tests/golden
SRCDIR_REAL=$(cd "$E2E_SRCDIR" && pwd -P)
SOCK=

# The output of `lcfibctl ARGS...`, in the .out format.
golden_output()
{
	local st=0
	printf '$ lcfibctl %s\n' "$*"
	cli "$SOCK" "$@" >"$T/golden.stdout" 2>"$T/golden.stderr" </dev/null || st=$?
	cat "$T/golden.stdout"
	if [ -s "$T/golden.stderr" ]; then
		echo "--- stderr"
		cat "$T/golden.stderr"
	fi
	echo "--- exit $st"
}

# golden NAME ARGS...: compares the output of `lcfibctl ARGS...` to NAME.out.
golden()
{
	local name=$1 want got
	shift
	want=$GOLDEN_DIR/$name.out
	got=$T/$name.out
	# lcfibctl names files by their real path: in make distcheck the source
	# folder is given as .../_build/sub/../.. .
	golden_output "$@" | sed -e "s|$E2E_SRCDIR|@SRCDIR@|g" \
		-e "s|$SRCDIR_REAL|@SRCDIR@|g" -e "s|$T|@TMP@|g" >"$got"
	if [ "${GOLDEN_UPDATE:-0}" = 1 ]; then
		cmp -s "$got" "$want" 2>/dev/null && return 0
		cp "$got" "$want"
		echo "updated $want"
		return 0
	fi
	[ -e "$want" ] || fail "no $want: run 'make golden-update', then review and add it"
	diff -u "$want" "$got" ||
		fail "lcfibctl $* differs from $want (a change meant? 'make golden-update')"
}

# g NAME ARGS...: one golden test, named for its file.
g() { t_case "test_golden_${1//-/_}" golden "$@"; }

e2e_init
have_cli || e2e_skip_all "lcfibctl is not built at $LCFIBCTL"
export LC_ALL=C COLUMNS=80
d_start golden || e2e_skip_all "lcfibd did not start (log above)"
SOCK=$(d_sock golden)
cli "$SOCK" -q load "$GOLDEN_DIR/routes.txt" transient >/dev/null || {
	echo "cannot load $GOLDEN_DIR/routes.txt"
	exit 1
}

# Routes and lookups, both families, several tables.
g show-routes show routes
g show-routes-table-100 show routes table 100
g show-routes-table-200 show routes table 200
g show-routes-within-a-prefix show routes 10.1.0.0/16
g show-routes-of-an-empty-table show routes table 42
g routes-over-the-limit-say-so routes table 200 family ipv4 limit 2
g routes-of-a-protocol routes protocol 4
g routes-through-a-device routes interface lo
g routes-of-a-type routes type blackhole
g routes-of-a-protocol-within-a-prefix routes 10.0.0.0/8 protocol 186
g show-routes-summary show routes summary
g show-routes-summary-of-table-100 show routes summary table 100
g json-show-routes-summary-ipv6 --json show routes summary family ipv6
g route-show-is-routes route show proto static
g route-show-dev-and-type route show dev lo type unicast
g route-show-within-a-prefix route show 10.1.0.0/16
g route-list-table-100 route list table 100
g route-get-is-lookup route get 10.1.2.3
g route-get-fibmatch-in-table-100 route get fibmatch 203.0.113.130 table 100
g route-get-miss route get 8.8.8.8
g json-routes-over-the-limit-say-so --json routes table 200 family ipv4 limit 2
g lookup-multipath lookup 10.1.2.3
g lookup-longest-prefix-wins lookup 10.1.2.200
g lookup-lowest-metric-wins lookup 10.1.9.9
g lookup-throw-route lookup 10.99.0.1
g lookup-throw-route-table-main lookup 10.99.0.1 table main
g lookup-miss lookup 8.8.8.8
g lookup-default-route-of-table-100 lookup 8.8.8.8 table 100
g lookup-host-route-of-table-100 lookup 203.0.113.129 table 100
g lookup-ipv6-via-link-local lookup 2001:db8:1:2::5
g lookup-ipv6-shorter-prefix lookup 2001:db8:2::1
g lookup-ipv6-miss-in-table-200 lookup 2001:db8:1:2::5 table 200
g show-trie show trie
g show-state-routes show state routes
g show-state-cache-disabled show state cache
g show-feeds show feeds

# Configuration.
t_case test_golden_setup_sync_mem_1M cli "$SOCK" set sync-mem 1M
t_case test_golden_setup_log_level_info cli "$SOCK" set log-level info
g show-config show config
g json-show-config --json show config

# Bad input: the message the user sees, and the exit status.
g error-set-sync-mem-1K set sync-mem 1K
g error-set-unknown-leaf set sink-mem 1
g error-lookup-bad-address lookup 300.1.1.1
g error-lookup-table-0 lookup 10.1.2.3 table 0
g error-route-add-of-an-existing-route route add 10.1.0.0/16 via 192.0.2.2 metric 10
g error-unknown-command frob
g error-show-unknown-state show state nope
g error-load-with-bad-lines load "$GOLDEN_DIR/bad-routes.txt"
g load-skipping-bad-lines-lists-them -q load "$GOLDEN_DIR/bad-routes.txt" skip-bad-lines transient
g show-routes-of-the-good-lines show routes table 300
g flush-table-300 flush table 300

# Route edits in iproute2 syntax.
g route-add route add 10.250.0.0/16 via 192.0.2.1 table 250 metric 3
g route-append route append 10.250.0.0/16 via 192.0.2.2 table 250 metric 3
g show-routes-after-route-add show routes table 250
g route-del route del 10.250.0.0/16 via 192.0.2.1 table 250 metric 3
g show-routes-after-route-del show routes table 250

# --json for scripts.
g json-lookup-multipath --json lookup 10.1.2.3
g json-lookup-miss --json lookup 8.8.8.8
g json-show-routes-table-200 --json show routes table 200
g json-show-state-routes --json show state routes
g json-error-set-sync-mem-1K --json set sync-mem 1K
g json-flush-empty-table --json flush table 300

# Commands, help and completion come from the YANG module: what they say.
g help help
g help-lookup help lookup
g help-route-add help route-add
g help-set-feeds help set feeds
g help-set-cache help set cache
g help-show help show
g error-help-of-an-unknown-command help bogus
g complete-commands __complete ""
g complete-set-feeds __complete set feeds ""
g complete-log-levels __complete set log-level ""
g complete-cache-modes __complete set cache mode ""
g complete-lookup-keywords __complete lookup 1.2.3.4 ""
g complete-nexthop-keywords __complete route-add 10.0.0.0/8 nexthop ""
g complete-show-trie-family __complete show trie main ""
g complete-route-protocols __complete route add 10.0.0.0/8 proto ""
g complete-route-add-types-before-the-prefix __complete route add ""
g complete-route-add-attributes-after-the-prefix __complete route add blackhole 10.0.0.0/8 ""

# Usage errors (exit 2) and values libyang refuses (exit 1), before anything is sent.
g error-set-without-a-path set
g error-set-sync-mem-not-a-number set sync-mem abc
g error-set-sync-mem-too-large set sync-mem 100G
g error-set-log-level-unknown set log-level loud
g error-set-route-file-relative set route-files route-file x.txt
g error-set-fpm-port-without-a-value set feeds fpm port
g error-set-fpm-port-0 set feeds fpm port 0
g error-set-cache-size-0 set cache size 0
g error-set-cache-nr-scans-200 set cache nr-scans 200
g error-set-cache-mode-bogus set cache mode bogus
g error-set-fpm-allowed-user-unknown set feeds fpm allowed-user no-such-user-lcfib
g error-lookup-without-an-address lookup
g error-lookup-short-address lookup 1.2.3
g error-lookup-misspelt-keyword lookup 1.2.3.4 tabel 5
g error-lookup-repeated-keyword lookup 1.2.3.4 table 5 table 6
g error-route-add-prefix-too-long route add 10.0.0.0/33
g error-route-change-is-refused route change 10.9.0.0/16 via 192.0.2.1
g error-route-unknown-verb route frob
g error-show-state-table-bad-key show state table abc

# Config edits that the module allows, and deleting them again.
g set-fpm-port set feeds fpm port 2621
g set-kernel-table-by-number set feeds kernel table 100
g set-kernel-table-by-name set feeds kernel table main
g show-config-feeds show config feeds
g delete-kernel-table delete feeds kernel table 100
g error-delete-a-missing-route-file delete route-files route-file /nonexistent
: >"$T/golden-empty.routes"
g set-a-route-file set route-files route-file "$T/golden-empty.routes"
g complete-delete-route-file-offers-the-configured-ones __complete delete route-files route-file ""
g delete-the-route-file delete route-files route-file "$T/golden-empty.routes"
g complete-delete-route-file-with-none-configured __complete delete route-files route-file ""
g error-fpm-address-not-an-address set feeds fpm address not-an-address
g json-show-config-sync-mem --json show config sync-mem

# The generic RPC commands: keywords are the RPC's input leaves.
g route-add-rpc-multipath route-add 10.8.0.0/16 nexthop gateway 192.0.2.1 weight 3 nexthop gateway 192.0.2.2 interface eth1
g routes-rpc-after-route-add routes 10.8.0.0/16
g route-prepend route prepend 10.8.0.0/16 via 192.0.2.7
g routes-rpc-after-route-prepend routes 10.8.0.0/16
g route-delete-rpc route-delete 10.8.0.0/16
g routes-rpc-after-route-delete routes 10.8.0.0/16
g error-route-del-of-a-missing-route route del 10.8.0.0/16 via 192.0.2.77
g json-error-route-del-of-a-missing-route --json route del 10.8.0.0/16 via 192.0.2.77

# What `route show` prints, route files read back: every protocol (but 0,
# which it does not print, and which then reads back as boot) and scope
# number, in the table named "default" (253). A name the CLI prints and the
# parser refuses (as "mrouted" for 17 was) fails the load.
test_golden_route_show_reads_back_as_the_same_routes()
{
	local f=$T/names.routes i
	for i in $(seq 1 255); do
		echo "route add 10.77.$i.0/24 via 192.0.2.1 table 253 proto $i scope $(((i * 7) % 256))"
	done >"$f"
	cli "$SOCK" -q load "$f" transient || fail "cannot load $f"
	cli "$SOCK" route show table 253 >"$T/names.show" || fail "route show table 253"
	expect_eq "$(wc -l <"$T/names.show")" 255 "routes shown"
	sed 's/^/route add /' "$T/names.show" >"$T/names.again"
	cli "$SOCK" -q flush table 253 >/dev/null || fail "flush table 253"
	cli "$SOCK" -q load "$T/names.again" transient || fail "route show's output does not load back"
	cli "$SOCK" route show table 253 >"$T/names.show2" || fail "route show table 253 again"
	diff -u "$T/names.show" "$T/names.show2" || fail "the routes read back differ"
	cli "$SOCK" -q flush table 253 >/dev/null
}
t_case test_golden_route_show_reads_back_as_the_same_routes \
	test_golden_route_show_reads_back_as_the_same_routes

# The bash completion script (dist/) over `lcfibctl __complete`.
# bash_complete LINE: COMPREPLY for LINE (completing its last word), one a line.
bash_complete()
{
	local line=$1
	# shellcheck disable=SC1091
	LCFIB_SOCKET=$SOCK LCFIB_YANG_DIR=$YANG_DIR bash -c '
		. "$1/dist/lcfibctl.bash-completion"
		compopt() { :; }
		COMP_LINE=$2
		read -ra COMP_WORDS <<<"$2"
		[[ $2 == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_WORDS[0]=$3
		_lcfibctl
		printf "%s\n" "${COMPREPLY[@]}"' bash "$E2E_SRCDIR" "$line" "$LCFIBCTL"
}

test_golden_bash_completion()
{
	expect_eq "$(bash_complete "lcfibctl --qu")" --quiet "--quiet completed"
	expect_eq "$(bash_complete "lcfibctl route add 10.0.0.0/8 bl")" "" \
		"no route type after the prefix"
	expect_eq "$(bash_complete "lcfibctl route add bl")" blackhole "a type before the prefix"
	cli "$SOCK" set route-files route-file "$T/golden-empty.routes" || fail "set route-file"
	expect_eq "$(cd "$T" && bash_complete "lcfibctl delete route-files route-file ")" \
		"$T/golden-empty.routes" "the configured route file, not the directory's files"
	cli "$SOCK" delete route-files route-file "$T/golden-empty.routes" || fail "delete"
}
t_case test_golden_bash_completion test_golden_bash_completion

t_case test_golden_daemon_exits_cleanly d_stop golden
t_summary

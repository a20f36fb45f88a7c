#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# lcfibd's reports are honest: a load that applied but could not be
# recorded in the config (a full disk) says so in its reply, in lcfibctl's
# exit status and in state; the skipped lines are counted alike in the
# reply, the log and state; errors found while applying name the prefix's
# FILE:LINE:COLUMN; temp files of a config write cut short are removed at
# start; sizes typed with blanks around them are taken. See
# tests/e2e/lib.sh for the harness.
#
# Needs: bash, python3; unshare and mount (util-linux) and root for the
# full-disk test, which is skipped, saying why, without them.

# shellcheck disable=SC2317 # functions run through t_run and t_case
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

log_has() { grep -Eq -- "$2" "$(d_log "$1")"; }

# A state directory on a full tmpfs: lcfibd runs in a mount namespace of
# its own where $T/NAME/state is a 256 KiB tmpfs filled to the last block.
# Route files elsewhere read as usual; the config cannot be written.
test_a_load_that_cannot_be_recorded_on_a_full_disk_says_so()
{
	local s dir st
	[ "$(id -u)" = 0 ] || t_skip "needs root, for a mount namespace and a tmpfs"
	command -v unshare >/dev/null || t_skip "unshare is not installed (Debian: util-linux)"
	have_cli || t_skip "lcfibctl is not built"
	dir=$(d_dir full)
	mkdir -p "$dir/state" "$T/bin"
	cat >"$T/bin/on-full-tmpfs" <<'EOF'
#!/bin/sh
# on-full-tmpfs DIR CMD...: DIR becomes a full 256 KiB tmpfs, then CMD runs.
dir=$1
shift
mount -t tmpfs -o size=256k,mode=0750 lcfib-full "$dir" || exit 1
dd if=/dev/zero of="$dir/fill" bs=4k 2>/dev/null
exec "$@"
EOF
	chmod +x "$T/bin/on-full-tmpfs"
	unshare -m --propagation private true 2>/dev/null || t_skip "cannot make a mount namespace here"
	D_WRAP="unshare -m --propagation private $T/bin/on-full-tmpfs $dir/state" d_start full ||
		fail "lcfibd did not start on a full tmpfs"
	s=$(d_sock full)
	printf 'route add 192.0.2.0/24 dev lo\nroute add 198.51.100.0/24 dev lo\n' >"$T/two.routes"
	st=0
	cli "$s" load "$T/two.routes" >"$T/.out" 2>"$T/.err" || st=$?
	cat "$T/.out" "$T/.err"
	expect_eq "$st" 4 "lcfibctl's exit status (applied, not recorded)"
	expect_match "$(cat "$T/.out")" "not-recorded .*No space left on device" "the reply"
	expect_match "$(cat "$T/.err")" "routes are applied, but .* a restart will not load it" \
		"lcfibctl's message"
	expect_eq "$(value "$s" /lcfib:lcfib/state/routes/ipv4)" 2 "IPv4 routes (applied)"
	expect_eq "$(value "$s" /lcfib:lcfib/state/ingest/loads-not-recorded)" 1 \
		"state ingest/loads-not-recorded"
	expect_no_match "$(ctl "$s" get config)" "two.routes" "the running config"
	log_has full "two.routes loaded, but not recorded in the config" || fail "no 'not recorded' in the log"
	# The raw reply carries it too.
	expect_status 0 ctl "$s" rpc "{\"lcfib:load\":{\"path\":\"$T/two.routes\",\"skip-bad-lines\":true}}"
	expect_match "$OUT" '"not-recorded":"cannot save the config' "the raw reply"
	expect_eq "$(value "$s" /lcfib:lcfib/state/ingest/loads-not-recorded)" 2 \
		"loads-not-recorded after a second load"
	# A transient load is not to be recorded: nothing to report.
	expect_status 0 cli "$s" load "$T/two.routes" transient skip-bad-lines
	expect_no_match "$OUT$ERR" "not-recorded|not load it" "a transient load"
	d_stop full
}

# Lines that do not parse and lines that do not apply are both skipped lines.
test_skipped_lines_are_counted_alike_in_the_reply_the_log_and_state()
{
	local s
	d_start skip || fail "lcfibd did not start"
	s=$(d_sock skip)
	printf '%s\n' "route add 10.1.0.0/16 dev lo" "route add 10.2.0.0/33 dev lo" \
		"route add 10.1.0.0/16 dev lo" "route add 10.3.0.0/16 via nowhere" \
		"route add 10.4.0.0/16 dev lo" >"$T/mixed.txt"
	expect_status 0 ctl "$s" rpc \
		"{\"lcfib:load\":{\"path\":\"$T/mixed.txt\",\"skip-bad-lines\":true,\"transient\":true}}"
	expect_match "$OUT" '"skipped":"3"' "the reply (2 lines that do not parse, 1 that does not apply)"
	expect_match "$OUT" '"applied":"2"' "the reply's applied"
	expect_eq "$(value "$s" /lcfib:lcfib/state/ingest/last-load/skipped)" 3 "state last-load/skipped"
	expect_eq "$(value "$s" /lcfib:lcfib/state/ingest/updates-rejected)" 3 "state updates-rejected"
	log_has skip "loaded $T/mixed.txt: 2 routes .* 3 bad lines skipped" ||
		fail "the log's count: $(grep 'loaded ' "$(d_log skip)")"
	d_stop skip
}

# An error found while applying (the route exists) names the prefix's column.
test_errors_found_while_applying_give_file_line_and_column()
{
	local s
	d_start dups || fail "lcfibd did not start"
	s=$(d_sock dups)
	printf '%s\n' "route add 10.1.0.0/16 dev lo" "route add   10.1.0.0/16 dev lo" >"$T/dups.txt"
	printf '%s\n' "10.9.0.0/16" "  10.9.0.0/16" >"$T/dups-plain.txt"
	expect_status 1 ctl "$s" rpc "{\"lcfib:load\":{\"path\":\"$T/dups.txt\",\"transient\":true}}"
	expect_match "$OUT" "$T/dups.txt:2:13: 10.1.0.0/16 table 254 metric 0: route exists" \
		"the error of a batch file"
	expect_status 0 ctl "$s" rpc \
		"{\"lcfib:load\":{\"path\":\"$T/dups-plain.txt\",\"transient\":true,\"skip-bad-lines\":true}}"
	expect_match "$OUT" '"line":"2","column":3,"message":"[^"]*dups-plain.txt:2:3: 10.9.0.0/16 table 254 metric 0: route exists"' \
		"the bad line of a plain file"
	d_stop dups
}

# A daemon killed while writing its config leaves CONFIG.tmp.PID: the next
# start removes it (its writer is gone), and only it.
test_stale_config_temp_files_are_removed_at_start()
{
	local st dead=4194303
	st=$(d_state tmp)
	mkdir -p "$st"
	while kill -0 "$dead" 2>/dev/null; do dead=$((dead - 1)); done
	echo '{"lcfib:lcfib":{' >"$st/lcfibd.json.tmp.$dead"
	echo '{}' >"$st/lcfibd.json.tmp.$$"    # a writer that still runs: this shell
	echo '{}' >"$st/lcfibd.json.tmp.notapid" # not a name lcfibd makes
	d_start tmp || fail "lcfibd did not start"
	[ ! -e "$st/lcfibd.json.tmp.$dead" ] || fail "lcfibd.json.tmp.$dead (pid $dead is gone) is still there"
	[ -e "$st/lcfibd.json.tmp.$$" ] || fail "lcfibd.json.tmp.$$ removed while pid $$ runs"
	[ -e "$st/lcfibd.json.tmp.notapid" ] || fail "lcfibd.json.tmp.notapid removed"
	log_has tmp "removed $st/lcfibd.json.tmp.$dead, left by a daemon that died" ||
		fail "the removal is not logged"
	d_stop tmp
}

# A load says where its time went: the parse (on its own thread), the
# apply's wait for it, and the end of bulk mode (over 4096 routes); each is
# part of the whole duration. A file with skip-bad-lines is read first.
test_a_load_says_where_its_time_went()
{
	local s l dur parse waited reb i j
	d_start phases || fail "lcfibd did not start"
	s=$(d_sock phases)
	for i in $(seq 0 19); do
		for j in $(seq 0 255); do echo "route add blackhole 10.$i.$j.0/24"; done
	done >"$T/5120.routes"
	expect_status 0 ctl "$s" rpc \
		"{\"lcfib:load\":{\"path\":\"$T/5120.routes\",\"transient\":true}}"
	l=/lcfib:lcfib/state/ingest/last-load
	dur=$(value "$s" "$l"/duration)
	parse=$(value "$s" "$l"/parse-duration)
	waited=$(value "$s" "$l"/apply-waited)
	reb=$(value "$s" "$l"/rebalance-duration)
	echo "duration $dur parse $parse waited $waited rebalance $reb (us)"
	expect_eq "$(value "$s" "$l"/routes)" 5120 "routes loaded"
	if [ "$parse" -eq 0 ] || [ "$parse" -gt "$dur" ]; then
		fail "parse-duration $parse not in (0, $dur]"
	fi
	[ "$waited" -le "$dur" ] || fail "apply-waited $waited over the duration $dur"
	if [ "$reb" -eq 0 ] || [ "$reb" -gt "$dur" ]; then
		fail "rebalance-duration $reb not in (0, $dur]"
	fi
	# Read first with skip-bad-lines; a small load has no bulk mode to end.
	for j in $(seq 0 255); do echo "route add blackhole 10.99.$j.0/24"; done >"$T/256.routes"
	expect_status 0 ctl "$s" rpc \
		"{\"lcfib:load\":{\"path\":\"$T/256.routes\",\"skip-bad-lines\":true,\"transient\":true}}"
	expect_eq "$(value "$s" "$l"/routes)" 256 "routes of the second load"
	[ "$(value "$s" "$l"/parse-duration)" -gt 0 ] || fail "no parse-duration for a file read first"
	expect_eq "$(value "$s" "$l"/apply-waited)" 0 "apply-waited of a file read first"
	expect_eq "$(value "$s" "$l"/rebalance-duration)" 0 "rebalance-duration of 256 routes"
	d_stop phases
}

test_a_size_typed_with_blanks_around_it_is_taken()
{
	local s
	have_cli || t_skip "lcfibctl is not built"
	d_start size || fail "lcfibd did not start"
	s=$(d_sock size)
	expect_status 0 cli "$s" set sync-mem "  16M"
	expect_eq "$(value "$s" /lcfib:lcfib/sync-mem)" 16777216 "sync-mem after '  16M'"
	expect_status 0 cli "$s" set sync-mem " 1M "
	expect_eq "$(value "$s" /lcfib:lcfib/sync-mem)" 1048576 "sync-mem after ' 1M '"
	# Not a size: libyang's error, about what was typed.
	expect_status 1 cli "$s" set sync-mem "16 M"
	expect_match "$ERR" 'Invalid .*16 M' "the error of '16 M'"
	d_stop size
}

e2e_init
t_run test_a_load_that_cannot_be_recorded_on_a_full_disk_says_so
t_run test_skipped_lines_are_counted_alike_in_the_reply_the_log_and_state
t_run test_errors_found_while_applying_give_file_line_and_column
t_run test_stale_config_temp_files_are_removed_at_start
t_run test_a_size_typed_with_blanks_around_it_is_taken
t_run test_a_load_says_where_its_time_went
t_summary

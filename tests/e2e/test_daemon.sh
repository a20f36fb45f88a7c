#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of lcfibd: the daemon as built, its control socket, its
# files and signals, driven through lcfibctl where a user would use it and
# through tests/e2e/ctl.py (the raw protocol) where the test needs bytes
# that lcfibctl would never send. See tests/e2e/lib.sh for the harness and
# its environment (E2E_ONLY=REGEX runs some tests; E2E_SEED fixes the seed).
#
# Needs: bash, python3, gzip; yanglint (libyang2-tools), valgrind and setpriv
# (util-linux) for three of the tests, which are skipped, saying why,
# without them.

# shellcheck disable=SC2317 # functions run through t_run and t_case
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

# ----------------------------------------------------------------- helpers

# table_routes SOCK ID FAMILY: the routes of one table (0 when it has none).
table_routes()
{
	value "$1" "/lcfib:lcfib/state/table[id='$2'][family='$3']/routes" || echo 0
}

# A seed for the random tests: E2E_SEED, or a new one printed by the test.
seed() { echo "${E2E_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"; }

# lookup SOCK ADDRESS [TABLE]: the lookup RPC's reply (JSON).
lookup()
{
	local t=${3:-main}
	[[ $t =~ ^[0-9]+$ ]] || t="\"$t\""
	ctl "$1" rpc "{\"lcfib:lookup\":{\"address\":\"$2\",\"table\":$t}}"
}

# load_file SOCK FILE [skip-bad-lines] [transient]: a load through lcfibctl
# when it is built, else through the socket. Output in $OUT/$ERR, status in $ST.
ST=
load_file()
{
	local sock=$1 file=$2
	shift 2
	ST=0
	if have_cli; then
		cli "$sock" load "$file" "$@" >"$T/.out" 2>"$T/.err" || ST=$?
	else
		local json="\"path\":\"$file\"" o
		for o in "$@"; do json+=",\"$o\":true"; done
		ctl "$sock" rpc "{\"lcfib:load\":{$json}}" >"$T/.out" 2>"$T/.err" || ST=$?
	fi
	OUT=$(cat "$T/.out")
	ERR=$(cat "$T/.err")
}

# set_sync_mem SOCK VALUE-AS-TYPED: lcfibctl `set sync-mem`, else the socket
# (where VALUE must be in bytes).
set_sync_mem()
{
	if have_cli; then
		cli "$1" set sync-mem "$2"
	else
		ctl "$1" edit merge "{\"lcfib:lcfib\":{\"sync-mem\":$2}}"
	fi
}

# ------------------------------------------------------------------ tests

test_yang_module_passes_yanglint_without_warnings()
{
	command -v yanglint >/dev/null || t_skip "yanglint is not installed (Debian: libyang2-tools)"
	# -D: nothing from the current directory; the module's own and libyang's
	# built-in ietf modules only. Any message, warning or error, fails.
	expect_status 0 yanglint -D "$YANG_DIR/lcfib.yang"
	expect_eq "$OUT$ERR" "" "yanglint's output"
	# And every node compiles: the tree printer walks all of them.
	expect_status 0 yanglint -D -f tree "$YANG_DIR/lcfib.yang"
	expect_eq "$ERR" "" "yanglint -f tree's messages"
	expect_match "$OUT" "sync-mem" "the schema tree"
}

test_lcfibd_refuses_to_start_when_a_config_leaf_has_no_handler()
{
	local y=$T/yang-unhandled st
	mkdir -p "$y"
	# Two new config leaves, one at the top and one in a nested container.
	"$PYTHON" - "$YANG_DIR/lcfib.yang" "$y/lcfib.yang" <<'EOF'
import sys
text = open(sys.argv[1]).read()
top = "    leaf log-level {"
nested = "        leaf address {"
assert text.count(top) == 1 and text.count(nested) == 1, "anchors moved in lcfib.yang"
text = text.replace(top, '''    leaf e2e-unhandled {
      type uint32;
      description "A leaf no handler knows.";
    }

''' + top).replace(nested, '''        leaf e2e-nested-unhandled {
          type boolean;
          description "Another one, deeper.";
        }
''' + nested)
open(sys.argv[2], "w").write(text)
EOF
	# The copy is a valid module: the refusal is lcfibd's, not libyang's.
	if command -v yanglint >/dev/null; then
		expect_status 0 yanglint -D "$y/lcfib.yang"
	fi
	mkdir -p "$T/unhandled"
	st=0
	"$LCFIBD" -f -s "$T/unhandled/sock" -S "$T/unhandled/state" -p "$T/unhandled/pid" \
		-y "$y" 2>"$T/unhandled/log" </dev/null || st=$?
	cat "$T/unhandled/log"
	[ "$st" -ne 0 ] || fail "lcfibd started with config leaves that have no handler"
	expect_match "$(cat "$T/unhandled/log")" "/lcfib:lcfib/e2e-unhandled\b" "the log"
	expect_match "$(cat "$T/unhandled/log")" "/lcfib:lcfib/feeds/fpm/e2e-nested-unhandled\b" \
		"the log"
	[ ! -e "$T/unhandled/sock" ] || fail "lcfibd made its socket before refusing"
	# The same start with the module as shipped serves.
	d_start shipped || fail "lcfibd does not start with the shipped module"
	d_stop shipped
}

test_lcfibd_refuses_to_start_when_an_rpc_has_no_handler()
{
	local y=$T/yang-unhandled-rpc st
	mkdir -p "$y" "$T/unhandled-rpc"
	"$PYTHON" - "$YANG_DIR/lcfib.yang" "$y/lcfib.yang" <<'EOF'
import sys
text = open(sys.argv[1]).read()
at = "  rpc flush {"
assert text.count(at) == 1, "anchor moved in lcfib.yang"
text = text.replace(at, '''  rpc e2e-unhandled {
    description "An RPC no handler knows.";
  }

''' + at)
open(sys.argv[2], "w").write(text)
EOF
	if command -v yanglint >/dev/null; then
		expect_status 0 yanglint -D "$y/lcfib.yang"
	fi
	# -t: the start-up checks, then exit (a daemon without them would serve).
	st=0
	timeout -k 5 60 "$LCFIBD" -t -f -s "$T/unhandled-rpc/sock" -S "$T/unhandled-rpc/state" \
		-p "$T/unhandled-rpc/pid" -y "$y" 2>"$T/unhandled-rpc/log" </dev/null || st=$?
	cat "$T/unhandled-rpc/log"
	[ "$st" -ne 0 ] || fail "lcfibd -t passed a module with an RPC that has no handler"
	expect_match "$(cat "$T/unhandled-rpc/log")" "rpc /lcfib:e2e-unhandled has no handler" \
		"the log"
	# The same check with the module as shipped passes.
	expect_status 0 timeout -k 5 60 "$LCFIBD" -t -f -s "$T/unhandled-rpc/sock" \
		-S "$T/unhandled-rpc/state" -p "$T/unhandled-rpc/pid" -y "$YANG_DIR"
}

# Writes STATEDIR/lcfibd.json and checks that lcfibd refuses to start, naming
# the file, the line and (for a value) the YANG path, and leaves the file be.
expect_config_refused()
{
	local name=$1 line=$2 path=$3 dir st
	dir=$(d_dir "$name")
	mkdir -p "$dir/state"
	cat >"$dir/state/lcfibd.json"
	cp "$dir/state/lcfibd.json" "$dir/written"
	st=0
	"$LCFIBD" -f -s "$dir/sock" -S "$dir/state" -p "$dir/pid" -y "$YANG_DIR" \
		2>"$dir/stderr" </dev/null || st=$?
	echo "--- $name: status $st"
	cat "$dir/stderr"
	[ "$st" -ne 0 ] || fail "$name: lcfibd started with a corrupt config file"
	expect_match "$(cat "$dir/stderr")" "$dir/state/lcfibd.json: line $line: " "$name: stderr"
	[ -z "$path" ] || expect_match "$(cat "$dir/stderr")" " at $path\$" "$name: stderr"
	[ ! -e "$dir/sock" ] || fail "$name: lcfibd made its socket with a corrupt config"
	cmp -s "$dir/state/lcfibd.json" "$dir/written" || fail "$name: lcfibd changed the file"
}

test_corrupt_config_file_stops_start_up_naming_the_file_and_line()
{
	expect_config_refused bad-json 3 "" <<'EOF'
{
  "lcfib:lcfib": {
    "sync-mem": 65536,,
    "log-level": "info"
  }
}
EOF
	expect_config_refused out-of-range 3 /lcfib:lcfib/sync-mem <<'EOF'
{
  "lcfib:lcfib": {
    "sync-mem": 100,
    "log-level": "info"
  }
}
EOF
	expect_config_refused unknown-leaf 4 "" <<'EOF'
{
  "lcfib:lcfib": {
    "log-level": "info",
    "sink-mem": 65536
  }
}
EOF
	expect_config_refused not-a-number 4 /lcfib:lcfib/sync-mem <<'EOF'
{
  "lcfib:lcfib": {
    "log-level": "info",
    "sync-mem": "lots",
    "admin-group": "root"
  }
}
EOF
	# libyang gives the line of the token after a bad value: for the last
	# member of an object, the line of the '}'. The path still names it.
	expect_config_refused out-of-range-last 4 /lcfib:lcfib/sync-mem <<'EOF'
{
  "lcfib:lcfib": {
    "sync-mem": 67108865
  }
}
EOF
}

test_sighup_rereads_the_config_file()
{
	local s f
	d_start hup || fail "lcfibd did not start"
	s=$(d_sock hup)
	f=$(d_state hup)/lcfibd.json
	expect_eq "$(value "$s" /lcfib:lcfib/state/reclamation/sync-mem)" 524288 "default sync-mem"
	[ ! -e "$f" ] || fail "a config file before any change"
	printf '{\n  "lcfib:lcfib": {\n    "sync-mem": 1048576\n  }\n}\n' >"$f"
	kill -HUP "$(d_pid hup)"
	wait_until "lcfibd logs the reload" log_has hup "config reloaded from $f"
	expect_eq "$(value "$s" /lcfib:lcfib/state/reclamation/sync-mem)" 1048576 \
		"sync-mem in state after SIGHUP"
	expect_eq "$(value "$s" /lcfib:lcfib/sync-mem)" 1048576 "sync-mem in the config after SIGHUP"
	# A broken file on SIGHUP: logged, and the running config stays.
	printf '{\n  "lcfib:lcfib": {\n    "sync-mem": 1,\n    "log-level": "info"\n  }\n}\n' >"$f"
	kill -HUP "$(d_pid hup)"
	wait_until "lcfibd logs the failed reload" log_has hup "reload of $f failed"
	expect_match "$(grep 'reload of' "$(d_log hup)")" "line 3: .*at /lcfib:lcfib/sync-mem" "the log"
	expect_eq "$(value "$s" /lcfib:lcfib/state/reclamation/sync-mem)" 1048576 \
		"sync-mem after a bad SIGHUP"
	d_stop hup
}

test_full_table_loads_end_to_end_and_lookups_agree_with_brute_force()
{
	local s full clis=()
	full=$(fullview_file) || fail "cannot unpack $FULLVIEW_GZ"
	d_start full || fail "lcfibd did not start"
	s=$(d_sock full)
	load_file "$s" "$full" transient
	echo "$OUT$ERR"
	expect_eq "$ST" 0 "the load's exit status"
	expect_no_match "$OUT$ERR" $'\r' "the load's output (no progress bar off a terminal)"
	expect_eq "$(routes "$s")" "$FULLVIEW_ROUTES" "routes in state after the load"
	expect_eq "$(value "$s" /lcfib:lcfib/state/routes/ipv4)" 901899 "IPv4 routes"
	expect_eq "$(value "$s" /lcfib:lcfib/state/routes/ipv6)" 160147 "IPv6 routes"
	if have_cli; then
		clis=(--cli "$LCFIBCTL" --cli-count 50 --cli-arg=-s --cli-arg="$s" --cli-arg=-y
			--cli-arg="$YANG_DIR")
	else
		echo "# lcfibctl is not built: all lookups go through the socket"
	fi
	"$PYTHON" "$E2E_HELPERS/lpm_check.py" "$s" "$full" --count 2000 --seed "$(seed)" \
		"${clis[@]}" || fail "lookups disagree with the brute-force LPM"
	d_stop full
}

test_lookups_answer_right_while_a_full_table_loads()
{
	local s full
	full=$(fullview_file) || fail "cannot unpack $FULLVIEW_GZ"
	d_start conc || fail "lcfibd did not start"
	s=$(d_sock conc)
	# Sentinels: one in table 100, one in main that no prefix of the table covers.
	ctl "$s" rpc '{"lcfib:route-add":{"prefix":"198.51.100.0/24","table":100,"nexthop":[{"gateway":"192.0.2.1"}]}}' ||
		fail "route-add in table 100"
	ctl "$s" rpc '{"lcfib:route-add":{"prefix":"203.0.113.77/32","nexthop":[{"gateway":"192.0.2.2"}]}}' ||
		fail "route-add in main"
	"$PYTHON" "$E2E_HELPERS/lookups_during_load.py" "$s" "$full" --routes "$FULLVIEW_ROUTES" \
		--min 100 \
		100,198.51.100.5,198.51.100.0/24,192.0.2.1 \
		main,203.0.113.77,203.0.113.77/32,192.0.2.2 \
		100,8.8.8.8,- ||
		fail "lookups went wrong during the load"
	expect_eq "$(routes "$s")" $((FULLVIEW_ROUTES + 2)) "routes after the load"
	d_stop conc
}

test_sync_mem_changed_during_a_load_shows_in_the_counters()
{
	local s full st attempt setcmd
	full=$(fullview_file) || fail "cannot unpack $FULLVIEW_GZ"
	d_start syncmem || fail "lcfibd did not start"
	s=$(d_sock syncmem)
	if have_cli; then
		setcmd=("$LCFIBCTL" -s "$s" -y "$YANG_DIR" set sync-mem 64M)
	else
		setcmd=("$PYTHON" "$E2E_HELPERS/ctl.py" "$s" edit merge '{"lcfib:lcfib":{"sync-mem":67108864}}')
	fi
	# The change must land while the load runs; when the load wins the race
	# the attempt proves nothing, and the next one starts from an empty FIB.
	for attempt in 1 2 3; do
		set_sync_mem "$s" 65536 >/dev/null || fail "setting sync-mem to 65536"
		st=0
		"$PYTHON" "$E2E_HELPERS/sync_mem_during_load.py" "$s" "$full" --from 65536 \
			--to 67108864 -- "${setcmd[@]}" || st=$?
		[ "$st" = 2 ] || break
		ctl "$s" rpc '{"lcfib:flush":{"table":"all"}}' >/dev/null || fail "flush"
	done
	expect_eq "$st" 0 "sync_mem_during_load.py's status (attempt $attempt)"
	local waits
	waits=$(value "$s" /lcfib:lcfib/state/reclamation/forced-waits)
	[ "$waits" -gt 0 ] || fail "no forced waits after a load with sync-mem 65536"
	d_stop syncmem
}

test_config_and_route_files_survive_a_restart()
{
	local s f n before
	d_start restart || fail "lcfibd did not start"
	s=$(d_sock restart)
	f=$T/restart-routes.txt
	# 5000 prefixes of the full view (both families), plus a routed one.
	gzip -dc "$FULLVIEW_GZ" | awk 'NR % 200 == 0' >"$f"
	echo "203.0.113.0/24 192.0.2.7" >>"$f"
	n=$(wc -l <"$f")
	load_file "$s" "$f"
	expect_eq "$ST" 0 "the load's status: $OUT$ERR"
	set_sync_mem "$s" 128K >/dev/null || set_sync_mem "$s" 131072 || fail "set sync-mem"
	expect_eq "$(routes "$s")" "$n" "routes after the load"
	before=$(ctl "$s" get config)
	d_stop restart
	d_start restart || fail "lcfibd did not start again"
	expect_eq "$(ctl "$s" get config)" "$before" "the config after the restart"
	expect_eq "$(value "$s" /lcfib:lcfib/state/reclamation/sync-mem)" 131072 "sync-mem in force"
	# The configured file loads in the background after start.
	wait_until "the configured route file is loaded again" \
		value_is "$s" /lcfib:lcfib/state/ingest/loads 1
	expect_eq "$(routes "$s")" "$n" "routes after the restart"
	expect_match "$(lookup "$s" 203.0.113.9)" '"prefix":"203.0.113.0/24".*"gateway":"192.0.2.7"' \
		"lookup after the restart"
	d_stop restart
}

test_streamed_load_survives_a_restart()
{
	local s f i kept
	d_start stream || fail "lcfibd did not start"
	s=$(d_sock stream)
	f=$T/stream-routes.txt
	for ((i = 0; i < 300; i++)); do
		echo "route add 10.$((i / 256)).$((i % 256)).0/24 via 192.0.2.$((i % 250 + 1)) table 100"
	done >"$f"
	echo "route add 2001:db8:1::/48 via 2001:db8::1 table 100" >>"$f"
	if have_cli; then
		cli "$s" load - <"$f" || fail "lcfibctl load - failed"
	else
		ctl "$s" load-stream "$f" || fail "the streamed load failed"
	fi
	expect_eq "$(table_routes "$s" 100 ipv4)" 300 "IPv4 routes in table 100"
	expect_eq "$(table_routes "$s" 100 ipv6)" 1 "IPv6 routes in table 100"
	# The daemon keeps what it was sent, and the config names that copy.
	kept=$(ls "$(d_state stream)"/routes/*)
	expect_eq "$(echo "$kept" | wc -l)" 1 "files under STATEDIR/routes"
	cmp "$kept" "$f" || fail "the kept copy differs from what was sent"
	expect_match "$(ctl "$s" get config)" "\"path\": \"$kept\"" "the config"
	d_stop stream
	d_start stream || fail "lcfibd did not start again"
	wait_until "the streamed file is loaded again" \
		value_is "$s" /lcfib:lcfib/state/ingest/loads 1
	expect_eq "$(table_routes "$s" 100 ipv4)" 300 "IPv4 routes in table 100 after the restart"
	expect_eq "$(table_routes "$s" 100 ipv6)" 1 "IPv6 routes in table 100 after the restart"
	expect_match "$(lookup "$s" 10.1.2.3 100)" '"prefix":"10.1.2.0/24".*"gateway":"192.0.2.9"' \
		"lookup in table 100 after the restart"
	d_stop stream
}

# A relative path given to `lcfibctl load` is the caller's, not the daemon's
# working directory: lcfibctl sends it absolute, and the config records that.
test_a_relative_load_path_is_resolved_against_the_callers_directory()
{
	local s here
	have_cli || t_skip "lcfibctl is not built"
	d_start relpath || fail "lcfibd did not start"
	s=$(d_sock relpath)
	here=$T/relpath-caller
	mkdir -p "$here/sub"
	echo "route add 10.77.0.0/16 via 192.0.2.77" >"$here/rel.routes"
	[ "$(readlink "/proc/$(d_pid relpath)/cwd")" != "$here" ] ||
		fail "the daemon runs in the caller's directory: the test would prove nothing"
	(cd "$here/sub" && cli "$s" -q load ../rel.routes) || fail "lcfibctl load ../rel.routes"
	expect_match "$(lookup "$s" 10.77.1.1)" '"prefix":"10.77.0.0/16"' "the loaded route"
	expect_match "$(ctl "$s" get config)" "\"path\": \"$here/rel.routes\"" \
		"the absolute path in the config"
	cd "$here" || fail "cd $here"
	expect_status 1 cli "$s" load missing.routes
	cd - >/dev/null || fail "cd back"
	expect_match "$ERR" "missing.routes: No such file or directory" "a missing relative file"
	d_stop relpath
}

test_out_of_range_and_malformed_config_edits_change_nothing()
{
	local s cfg writes
	s=$(d_sock small)
	cfg=$(ctl "$s" get config)
	writes=$(value "$s" /lcfib:lcfib/state/control/config-writes)
	if have_cli; then
		expect_status 1 cli "$s" set sync-mem 1K
		expect_match "$ERR" 'out of the allowed range' "lcfibctl's message (libyang's)"
		expect_match "$ERR" '/lcfib:lcfib/sync-mem' "lcfibctl's message names the path"
	else
		echo "# lcfibctl is not built: set sync-mem 1K goes as 1024 through the socket"
		expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"sync-mem":1024}}'
		expect_match "$OUT" 'out of the allowed range' "the error"
	fi
	expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"sync-mem":100}}'
	expect_match "$OUT" '^error .*"message":"[^"]*Unsatisfied range - value \\"100\\" is out of the allowed range' \
		"the error for sync-mem 100"
	expect_match "$OUT" '"path":"/lcfib:lcfib/sync-mem"' "the error's path"
	expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"sync-mem":'
	expect_match "$OUT" '^error .*"path":"/lcfib:lcfib"' "the error for malformed JSON"
	expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"sink-mem":65536}}'
	expect_match "$OUT" '^error .*sink-mem.*"path":"/lcfib:lcfib"' "the error for an unknown leaf"
	expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"state":{"routes":{"ipv4":"7"}}}}'
	expect_status 1 ctl "$s" edit merge '{"lcfib:lcfib":{"feeds":{"kernel":{"receive-buffer":4096}}}}'
	expect_match "$OUT" '"path":"/lcfib:lcfib/feeds/kernel/receive-buffer"' "the error for a feed"
	expect_status 1 ctl "$s" edit replace '{"lcfib:lcfib":{"sync-mem":65536,"log-level":"loud"}}'
	expect_match "$OUT" '"path":"/lcfib:lcfib/log-level"' "the error for a bad enum in a replace"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the config after refused edits"
	expect_eq "$(value "$s" /lcfib:lcfib/state/control/config-writes)" "$writes" "config writes"
	expect_eq "$(value "$s" /lcfib:lcfib/state/reclamation/sync-mem)" 524288 "sync-mem in force"
	# A good edit still goes through, so the refusals above were not a dead socket.
	ctl "$s" edit merge '{"lcfib:lcfib":{"sync-mem":65536}}' >/dev/null || fail "a good edit"
	expect_eq "$(value "$s" /lcfib:lcfib/state/reclamation/sync-mem)" 65536 "sync-mem after a good edit"
	ctl "$s" edit delete /lcfib:lcfib/sync-mem >/dev/null || fail "deleting sync-mem"
	expect_eq "$(value "$s" /lcfib:lcfib/state/reclamation/sync-mem)" 524288 "sync-mem back to its default"
}

test_bad_addresses_in_rpcs_are_refused_with_the_path()
{
	local s
	s=$(d_sock small)
	expect_status 1 lookup "$s" 1.2.3
	expect_match "$OUT" '"path":"/lcfib:lookup/address"' "the error for a bad address"
	expect_status 1 ctl "$s" rpc '{"lcfib:route-add":{"prefix":"10.0.0.0/33"}}'
	expect_match "$OUT" '"path":"/lcfib:route-add/prefix"' "the error for a bad prefix"
	expect_status 1 ctl "$s" rpc '{"lcfib:load":{"path":"relative/file"}}'
	expect_match "$OUT" '"path":"/lcfib:load/path"' "the error for a relative path"
	expect_status 1 ctl "$s" rpc '{"lcfib:no-such-rpc":{}}'
	if have_cli; then
		expect_status 1 cli "$s" lookup 300.1.1.1
		expect_match "$ERR" 'address' "lcfibctl's message for a bad address"
	fi
}

# libyang 2.1 dies of SIGFPE on `mod` by zero (or NaN) in an XPath: a get or
# a delete with one is refused, and the daemon lives; names with "mod" in
# them (cache/mode) still work.
test_an_xpath_with_mod_is_refused_and_the_daemon_lives()
{
	local s
	s=$(d_sock small)
	expect_status 1 ctl "$s" get all 'count(/lcfib:lcfib) mod 0'
	expect_match "$OUT" "operator 'mod' is not supported" "the error of a get"
	expect_status 1 ctl "$s" get state 'x mod y'
	expect_status 1 ctl "$s" get state '1mod(0)'
	expect_status 1 ctl "$s" get state 'count(/lcfib:lcfib) mod'
	expect_status 1 ctl "$s" edit delete '/lcfib:lcfib/sync-mem[. mod 0 = 1]'
	expect_match "$OUT" "operator 'mod' is not supported" "the error of a delete"
	kill -0 "$(d_pid small)" || fail "lcfibd is gone"
	expect_status 0 ctl "$s" get config /lcfib:lcfib/cache/mode
	expect_status 0 ctl "$s" get state "/lcfib:lcfib/state/routes[. = 'mod']"
}

# libyang 2.1 dies of deref() on a leaf that is not a leafref, and leaks at
# each re-match() with a bad pattern: a get or a delete calling any function
# but XPath 1.0's and current() is refused, also behind an operator read by
# its prefix ("1 divderef(...)" is 1 div deref(...)); the daemon lives, and
# the core functions still work.
test_an_xpath_calling_deref_or_re_match_is_refused_and_the_daemon_lives()
{
	local s
	s=$(d_sock small)
	expect_status 1 ctl "$s" get state 'deref(/lcfib:lcfib/state/daemon/version)'
	expect_match "$OUT" "function 'deref' is not supported" "the error of a get"
	expect_status 1 ctl "$s" get config 'deref (/lcfib:lcfib/log-level)'
	expect_status 1 ctl "$s" get all '/lcfib:lcfib[1 divderef(log-level)]'
	expect_match "$OUT" "function 'deref' is not supported" "a call behind div"
	expect_status 1 ctl "$s" get all '/lcfib:lcfib[1 andderef(log-level)]'
	expect_status 1 ctl "$s" get state "/lcfib:lcfib/state/daemon[re-match(version, '(')]"
	expect_match "$OUT" "function 're-match' is not supported" "the error of a re-match"
	expect_status 1 ctl "$s" edit delete '/lcfib:lcfib/log-level[deref(.)]'
	expect_match "$OUT" "function 'deref' is not supported" "the error of a delete"
	kill -0 "$(d_pid small)" || fail "lcfibd is gone"
	expect_status 0 ctl "$s" get state '/lcfib:lcfib/state/daemon[string-length(version) > 0]'
	expect_match "$OUT" '"version"' "a get calling string-length()"
	expect_status 0 ctl "$s" get all "/lcfib:lcfib/state/daemon[contains(version, '.') or true()]"
	expect_status 0 ctl "$s" get state "/lcfib:lcfib/state/routes[. = 'deref(x)']"
	expect_status 0 ctl "$s" get state '/lcfib:lcfib/state/daemon/child::node()'
	expect_match "$OUT" '"version"' "a get with an axis and node()"
	expect_status 1 ctl "$s" get state '/lcfib:lcfib/state/daemon/child::deref(version)'
}

# A 10-line route file, bad at lines 3, 6 and 9, in table 42.
write_bad_file()
{
	cat >"$1" <<'EOF'
route add 10.42.1.0/24 via 192.0.2.1 table 42
route add 10.42.2.0/24 via 192.0.2.1 table 42
route add 10.42.3.0/33 via 192.0.2.1 table 42
route add 10.42.4.0/24 via 192.0.2.1 table 42
route add 10.42.5.0/24 via 192.0.2.1 table 42
route add 10.42.6.0/24 via 192.0.2.300 table 42
route add 10.42.7.0/24 via 192.0.2.1 table 42
route add 10.42.8.0/24 via 192.0.2.1 table 42
route frobnicate 10.42.9.0/24 via 192.0.2.1 table 42
route add 10.42.10.0/24 via 192.0.2.1 table 42
EOF
}

# The FILE:LINE places named in $1, sorted, one per line.
places() { grep -oE "$2:[0-9]+:" <<<"$1" | sort -u -t: -k2n | tr '\n' ' '; }

test_route_file_errors_are_reported_at_file_line_and_nothing_applies()
{
	local s f before
	s=$(d_sock small)
	f=$T/bad-lines.txt
	write_bad_file "$f"
	before=$(routes "$s")
	load_file "$s" "$f"
	echo "$OUT$ERR"
	expect_eq "$ST" 1 "the load's status"
	expect_eq "$(places "$OUT$ERR" "$f")" "$f:3: $f:6: $f:9: " "the places of the errors"
	expect_eq "$(routes "$s")" "$before" "routes after a failed load"
	expect_match "$(lookup "$s" 10.42.1.1 42)" '"found":false' "a good line of the failed file"
	expect_no_match "$(ctl "$s" get config)" "$f" "the config (a failed load is not recorded)"
}

test_skip_bad_lines_applies_the_good_lines_and_lists_each_bad_one()
{
	local s f before reply
	s=$(d_sock small)
	f=$T/bad-lines-skipped.txt
	write_bad_file "$f"
	before=$(routes "$s")
	ctl "$s" rpc "{\"lcfib:load\":{\"path\":\"$f\",\"skip-bad-lines\":true,\"transient\":true}}" \
		>"$T/.out" || fail "the load failed: $(cat "$T/.out")"
	reply=$(cat "$T/.out")
	echo "$reply"
	expect_match "$reply" '"applied":"7","skipped":"3"' "the load's counts"
	expect_eq "$(places "$reply" "$f")" "$f:3: $f:6: $f:9: " "the bad lines listed"
	expect_match "$reply" '"bad-line":\[\{"line":"3",' "the first bad line"
	expect_eq "$(routes "$s")" $((before + 7)) "routes after the load"
	expect_eq "$(table_routes "$s" 42 ipv4)" 7 "routes in table 42"
	if have_cli; then
		ctl "$s" rpc '{"lcfib:flush":{"table":42}}' >/dev/null || fail "flush"
		load_file "$s" "$f" skip-bad-lines transient
		echo "$OUT$ERR"
		expect_eq "$ST" 0 "lcfibctl load skip-bad-lines' status"
		expect_eq "$(places "$OUT$ERR" "$f")" "$f:3: $f:6: $f:9: " "the bad lines lcfibctl lists"
		expect_eq "$(table_routes "$s" 42 ipv4)" 7 "routes in table 42"
	fi
	ctl "$s" rpc '{"lcfib:flush":{"table":42}}' >/dev/null || fail "flush"
	expect_eq "$(routes "$s")" "$before" "routes after the flush"
}

test_route_file_failing_at_apply_time_rolls_back_everything()
{
	local s f before
	s=$(d_sock small)
	ctl "$s" rpc '{"lcfib:route-add":{"prefix":"10.43.5.0/24","table":43,"nexthop":[{"gateway":"192.0.2.99"}]}}' \
		>/dev/null || fail "route-add"
	before=$(routes "$s")
	f=$T/apply-fails.txt
	cat >"$f" <<'EOF'
route add 10.43.1.0/24 via 192.0.2.1 table 43
route add 10.43.2.0/24 via 192.0.2.1 table 43
route replace 10.43.3.0/24 via 192.0.2.1 table 43
route add 2001:db8:43::/48 via 2001:db8::1 table 43
route add 10.43.5.0/24 via 192.0.2.1 table 43
route add 10.43.6.0/24 via 192.0.2.1 table 43
EOF
	load_file "$s" "$f"
	echo "$OUT$ERR"
	expect_eq "$ST" 1 "the load's status"
	expect_eq "$(places "$OUT$ERR" "$f")" "$f:5: " "the place of the error"
	expect_eq "$(routes "$s")" "$before" "routes after the rollback"
	expect_match "$(lookup "$s" 10.43.1.1 43)" '"found":false' "a route of the rolled-back file"
	expect_match "$(lookup "$s" 2001:db8:43::1 43)" '"found":false' "an IPv6 route of the file"
	expect_match "$(lookup "$s" 10.43.5.1 43)" '"gateway":"192.0.2.99"' "the route that was there"
	# A duplicate within the file fails the same way, at its second line.
	printf 'route add 10.43.7.0/24 via 192.0.2.1 table 43\nroute add 10.43.7.0/24 via 192.0.2.2 table 43\n' >"$f"
	load_file "$s" "$f"
	expect_eq "$ST" 1 "the load's status"
	expect_eq "$(places "$OUT$ERR" "$f")" "$f:2: " "the place of the duplicate"
	expect_eq "$(routes "$s")" "$before" "routes after the second rollback"
	ctl "$s" rpc '{"lcfib:flush":{"table":43}}' >/dev/null || fail "flush"
}

test_garbage_frames_do_not_crash_the_daemon()
{
	local s
	s=$(d_sock small)
	"$PYTHON" "$E2E_HELPERS/bad_frames.py" "$s" --seed "$(seed)" --random 300 ||
		fail "bad frames"
	kill -0 "$(d_pid small)" || fail "lcfibd is gone"
	expect_match "$(log_has small 'bad frame' && echo logged)" logged "the log"
}

test_the_shared_daemon_exits_cleanly_after_the_small_tests()
{
	d_stop small
}

test_the_shared_daemon_starts()
{
	fail "lcfibd did not start (its log is above)"
}

# Runs the raw client as nobody (uid and gid 65534) or as GID.
as_nobody()
{
	local gid=$1
	shift
	setpriv --reuid=65534 --regid="$gid" --clear-groups -- \
		"$NOBODY_PYTHON" "$T/bin/ctl.py" "$@"
}

test_a_non_admin_user_can_read_but_not_change()
{
	local s denied cfg
	[ "$(id -u)" = 0 ] || t_skip "needs root, to run a client as nobody"
	command -v setpriv >/dev/null || t_skip "setpriv is not installed (Debian: util-linux)"
	getent group nogroup >/dev/null || t_skip "no group 'nogroup' on this host"
	# nobody cannot run a python3 under /root (pyenv): take the system's.
	NOBODY_PYTHON=$PYTHON
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$NOBODY_PYTHON" -c '' 2>/dev/null ||
		NOBODY_PYTHON=/usr/bin/python3
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$NOBODY_PYTHON" -c '' ||
		t_skip "no python3 that nobody may run"
	mkdir -p "$T/bin"
	cp "$E2E_HELPERS/ctl.py" "$T/bin/"
	chmod -R a+rX "$T/bin"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- test -r "$T/bin/ctl.py" ||
		t_skip "nobody cannot reach $T: make TMPDIR traversable by all"
	d_start ro -G nogroup || fail "lcfibd did not start"
	s=$(d_sock ro)
	echo "203.0.113.0/24" >"$T/ro-routes.txt"
	chmod a+r "$T/ro-routes.txt"
	cfg=$(ctl "$s" get config)

	expect_status 0 as_nobody 65534 "$s" get state /lcfib:lcfib/state/routes
	expect_match "$OUT" '"ipv4": "0"' "state read by nobody"
	expect_status 0 as_nobody 65534 "$s" rpc '{"lcfib:lookup":{"address":"192.0.2.1"}}'
	expect_status 1 as_nobody 65534 "$s" edit merge '{"lcfib:lcfib":{"sync-mem":65536}}'
	expect_match "$OUT" '"app-tag":"access-denied"' "an edit by nobody"
	expect_status 1 as_nobody 65534 "$s" rpc "{\"lcfib:load\":{\"path\":\"$T/ro-routes.txt\"}}"
	expect_match "$OUT" '"app-tag":"access-denied"' "a load by nobody"
	expect_status 1 as_nobody 65534 "$s" rpc '{"lcfib:flush":{"table":"all"}}'
	expect_match "$OUT" '"app-tag":"access-denied"' "a flush by nobody"
	expect_status 1 as_nobody 65534 "$s" rpc '{"lcfib:route-add":{"prefix":"10.0.0.0/8"}}'
	expect_match "$OUT" '"app-tag":"access-denied"' "a route-add by nobody"
	denied=$(value "$s" /lcfib:lcfib/state/control/denied)
	expect_eq "$denied" 4 "state control/denied"
	expect_eq "$(ctl "$s" get config)" "$cfg" "the config"
	expect_eq "$(routes "$s")" 0 "routes"
	# Someone outside the socket's group cannot even connect.
	st=0
	as_nobody 12345 "$s" get state >/dev/null 2>&1 || st=$?
	[ "$st" != 0 ] || fail "a client outside group nogroup got an answer"
	# Root still may.
	ctl "$s" edit merge '{"lcfib:lcfib":{"sync-mem":65536}}' >/dev/null || fail "root's edit"
	d_stop ro
}

test_lcfibd_exits_cleanly_under_valgrind()
{
	local s vg f
	command -v valgrind >/dev/null || t_skip "valgrind is not installed (Debian: valgrind)"
	if grep -Eq -- '-fsanitize=' "$E2E_BUILDDIR/Makefile" 2>/dev/null; then
		t_skip "a sanitizer build: valgrind cannot run ASan or TSan programs"
	fi
	mkdir -p "$T/vg"
	vg=$T/vg/valgrind.log
	f=$T/vg-routes.txt
	gzip -dc "$FULLVIEW_GZ" | head -n 2000 >"$f"
	gzip -dc "$FULLVIEW_GZ" | tail -n 500 >>"$f"
	D_WRAP="$E2E_BUILDDIR/libtool --mode=execute valgrind -q --leak-check=full \
--errors-for-leak-kinds=definite --error-exitcode=99 --log-file=$vg" \
		d_start vg || { cat "$vg"; fail "lcfibd did not start under valgrind"; }
	s=$(d_sock vg)
	ctl "$s" rpc "{\"lcfib:load\":{\"path\":\"$f\"}}" >/dev/null || fail "the load"
	ctl "$s" get all >/dev/null || fail "get all"
	ctl "$s" get state /lcfib:lcfib/state/reclamation >/dev/null || fail "get state"
	expect_match "$(lookup "$s" 1.0.4.1)" '"prefix":"1.0.4.0/22"' "a lookup"
	ctl "$s" edit merge '{"lcfib:lcfib":{"sync-mem":65536}}' >/dev/null || fail "an edit"
	ctl "$s" rpc '{"lcfib:flush":{"table":"main","family":"ipv6"}}' >/dev/null || fail "a flush"
	"$PYTHON" "$E2E_HELPERS/bad_frames.py" "$s" --seed 1 --random 20 >/dev/null ||
		fail "bad frames under valgrind"
	kill -TERM "$(d_pid vg)"
	st=$(d_wait_exit vg)
	cat "$vg"
	expect_eq "$st" 0 "lcfibd's exit status under valgrind (99: valgrind found errors)"
	! grep -q 'definitely lost' "$vg" || fail "valgrind found definite leaks"
	log_has vg 'exiting' || fail "lcfibd did not log its exit"
}

# ------------------------------------------------------------------- main

e2e_init
[ -r "$FULLVIEW_GZ" ] || e2e_skip_all "no full table at $FULLVIEW_GZ"

t_run test_yang_module_passes_yanglint_without_warnings
t_run test_lcfibd_refuses_to_start_when_a_config_leaf_has_no_handler
t_run test_lcfibd_refuses_to_start_when_an_rpc_has_no_handler
t_run test_corrupt_config_file_stops_start_up_naming_the_file_and_line
t_run test_sighup_rereads_the_config_file
t_run test_full_table_loads_end_to_end_and_lookups_agree_with_brute_force
t_run test_lookups_answer_right_while_a_full_table_loads
t_run test_sync_mem_changed_during_a_load_shows_in_the_counters
t_run test_config_and_route_files_survive_a_restart
t_run test_streamed_load_survives_a_restart
t_run test_a_relative_load_path_is_resolved_against_the_callers_directory

# The small tests share one daemon; each leaves the FIB as it found it.
if d_start small; then
	t_run test_out_of_range_and_malformed_config_edits_change_nothing
	t_run test_bad_addresses_in_rpcs_are_refused_with_the_path
	t_run test_an_xpath_with_mod_is_refused_and_the_daemon_lives
	t_run test_an_xpath_calling_deref_or_re_match_is_refused_and_the_daemon_lives
	t_run test_route_file_errors_are_reported_at_file_line_and_nothing_applies
	t_run test_skip_bad_lines_applies_the_good_lines_and_lists_each_bad_one
	t_run test_route_file_failing_at_apply_time_rolls_back_everything
	t_run test_garbage_frames_do_not_crash_the_daemon
	t_run test_the_shared_daemon_exits_cleanly_after_the_small_tests
else
	t_run test_the_shared_daemon_starts
fi

t_run test_a_non_admin_user_can_read_but_not_change
t_run test_lcfibd_exits_cleanly_under_valgrind

t_summary

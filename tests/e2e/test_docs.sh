#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Every example command in README.md's "Running the daemon" section and in
# the EXAMPLES of lcfibd(8) and lcfibctl(8), taken from the docs as they
# are now, run against a daemon, with its documented outcome checked: the
# exit status and a key line of its output. An example that changes in the
# docs no longer matches its entry in EXPECT below and fails until the
# entry (the outcome) is updated too; an entry whose example is gone fails
# as well. Examples that cannot run here are in CANNOT, with the reason.
#
# The daemon runs in a network namespace of its own (the kernel feed
# mirrors that namespace, the FPM feed listens on its loopback), with its
# socket, pid file and state in the temp dir: `lcfibd` in an example is a
# wrapper that adds -s, -p, -S and -y; lcfibctl finds the socket through
# LCFIB_SOCKET. File names in the examples (/etc/lcfib/..., /srv/...,
# table.gz) are made in the temp dir and rewritten to it: the full table
# (tests/data/fullview-2024.txt.gz) stands in for every table file, as
# `ip -batch` lines where the example says `format batch`.
#
# Needs: root, unshare and ip (for the namespace); gzip; jq for the one
# example that pipes into it (tools/deps.sh installs it; the example fails
# without it rather than pass unrun).

# shellcheck disable=SC2317 # functions run through t_run and t_case
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

# The expected outcome of each example, by its text as the docs print it
# (man escapes undone, continued lines joined): "STATUS REGEX" (an
# extended regex that stdout and stderr together must match; empty: any).
# "lcfibd-fg" before the status: a foreground daemon in its own directory,
# stopped after 3 s (status 124, from timeout); "during-load": run while a
# load of the full table runs, as the man page says ("While it loads").
declare -A EXPECT=(
	# README.md, "Running the daemon"
	['lcfibd']='0 '
	['lcfibctl load /etc/lcfib/full.routes']='0 ^applied +1062046$'
	['lcfibctl set sync-mem 16M']='0 '
	['lcfibctl show state reclamation']='0 ^sync-mem +16 MiB$'
	['lcfibctl lookup 192.0.2.1']='0 ^192\.0\.2\.0/24 dev lo'
	['lcfibctl lookup -f addresses.txt']='0 ^192\.0\.2\.0/24 dev lo'
	['lcfibctl route add 10.0.0.0/8 via 192.0.2.1 metric 20']='0 '
	['lcfibctl show routes 10.0.0.0/8']='0 ^10\.0\.0\.0/8 via 192\.0\.2\.1 proto boot metric 20$'
	['zcat table.gz | lcfibctl load -']='0 ^applied +1062046$'
	['lcfibctl']='0 '
	['lcfibctl set feeds kernel enabled true']='0 '
	['lcfibctl set feeds fpm enabled true']='0 '
	['lcfibctl route show proto static dev eth0']='0 '
	['lcfibctl show routes summary']='0 '
	['lcfibctl show feeds']='0 ^feed fpm'
	# lcfibctl(8)
	['lcfibctl load /srv/fullview.routes format batch transient']='0 ^applied +1062046$'
	['lcfibctl show state ingest load']='during-load 0 ^(file|phase) '
	['lcfibctl delete sync-mem']='0 '
	['zcat fullview.routes.gz | lcfibctl load - format batch']='0 ^applied +1062046$'
	['lcfibctl lookup 192.0.2.7']='0 ^192\.0\.2\.0/24 dev lo'
	['lcfibctl show routes 10.0.0.0/8 limit 20']='0 ^10\.0\.0\.0/8 via 192\.0\.2\.1'
	['cut -d, -f3 flows.csv | lcfibctl --json lookup - >flows.routes.jsonl']='0 '
	['lcfibctl -j show state reclamation | jq -r '\''."lcfib:lcfib".state.reclamation."forced-waits"'\''']='0 ^[0-9]+$'
	['lcfibctl set cache enabled true']='0 '
	['lcfibctl set cache mode common']='0 '
	['lcfibctl set cache size 1024']='0 '
	['lcfibctl show state cache']='0 ^size +1024$'
	['lcfibctl set route-files route-file /etc/lcfib/static.routes skip-bad-lines true']='0 '
	# lcfibd(8)
	['lcfibd -t && lcfibd -f -d debug']='lcfibd-fg 124 lcfibd notice: lcfibd .* serving on '
)
declare -A CANNOT=(
	['watch -n 1 lcfibctl show state reclamation']='watch(1) needs a terminal and runs until interrupted; its command is the example "lcfibctl show state reclamation"'
	['lcfibd -G lcfib']='needs a group named lcfib on this host (the tests do not add system groups)'
)

# The examples, one a line: SOURCE<TAB>COMMAND.
docs_examples()
{
	"$PYTHON" - "$E2E_SRCDIR" <<'EOF'
import re, sys
src = sys.argv[1]

def readme():
    lines = open(src + "/README.md").read().split("\n")
    i = lines.index("## Running the daemon") + 1
    while i < len(lines) and not lines[i].startswith("    "):
        i += 1
    while i < len(lines) and lines[i].startswith("    "):
        cmd = re.sub(r"\s+#\s.*$", "", lines[i].strip())
        yield "README.md:%d" % (i + 1), cmd
        i += 1

def unescape(s):
    for a, b in (("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\e", "\\"), ("\\~", " "), ("\\&", "")):
        s = s.replace(a, b)
    return s

def man(name):
    lines = open(src + "/docs/" + name).read().split("\n")
    sect, ex, cmd, start = None, False, None, 0
    for n, l in enumerate(lines, 1):
        if l.startswith(".SH "):
            sect = l[4:].strip()
        elif sect == "EXAMPLES" and l == ".EX":
            ex = True
        elif l == ".EE":
            ex = False
        elif ex:
            l = unescape(l)
            if cmd is None:
                cmd, start = re.sub(r"^[#$] ", "", l.strip()), n
            else:
                cmd += " " + l.strip()
            if cmd.endswith("\\") or cmd.endswith("|"):
                cmd = cmd.rstrip("\\").rstrip()
                continue
            yield "docs/%s:%d" % (name, start), cmd
            cmd = None

for where, cmd in list(readme()) + list(man("lcfibctl.8")) + list(man("lcfibd.8")):
    print("%s\t%s" % (where, cmd))
EOF
}

# docs_setup: the files the examples name, the wrappers, the fixture route.
docs_setup()
{
	local full
	full=$(fullview_file) || return 1
	mkdir -p "$T/docs/work" "$T/docs/etc" "$T/docs/srv" "$T/docs/wrap" "$T/docs/d" "$T/docs/fg" || return 1
	ln -sf "$full" "$T/docs/etc/full.routes"
	gzip -c "$full" >"$T/docs/work/table.gz" || return 1
	# The examples that say `format batch`: the table as `ip -batch` lines.
	tr -d '\r' <"$full" | awk '{ print "route add blackhole " $1 }' >"$T/docs/srv/fullview.routes" &&
		gzip -c "$T/docs/srv/fullview.routes" >"$T/docs/work/fullview.routes.gz" || return 1
	printf 'route add 10.9.0.0/16 via 192.0.2.9\n' >"$T/docs/etc/static.routes"
	# The addresses the streamed lookups read.
	printf '192.0.2.1\n2001:db8::1\n' >"$T/docs/work/addresses.txt"
	printf '1733040000,198.51.100.1,192.0.2.7,443\n1733040001,198.51.100.2,8.8.8.8,53\n' \
		>"$T/docs/work/flows.csv"
	# The daemon of the examples: in a network namespace whose loopback is up.
	cat >"$T/docs/wrap/lcfibd" <<EOF
#!/bin/sh
d=$T/docs/\${DOCS_D:-d}
exec unshare -n sh -c 'ip link set lo up && exec "\$0" "\$@"' "$LCFIBD" \\
	-s "\$d/sock" -p "\$d/pid" -S "\$d/state" -y "$YANG_DIR" "\$@"
EOF
	chmod +x "$T/docs/wrap/lcfibd"
	ln -sf "$LCFIBCTL" "$T/docs/wrap/lcfibctl"
}

# The daemons the examples started (they fork or run under timeout).
docs_kill()
{
	local d
	for d in d fg; do
		[ -s "$T/docs/$d/pid" ] && kill -TERM "$(cat "$T/docs/$d/pid")" 2>/dev/null
	done
	return 0
}

# docs_fixture [flush]: the route the lookups expect (192.0.2.0/24); after
# a flush also a 10.0.0.0/8 (metric 30: beside the examples' metric 20).
docs_fixture()
{
	local s=$T/docs/d/sock
	printf 'route add 192.0.2.0/24 dev lo\n' >"$T/docs/fixture.routes"
	if [ "${1:-}" = flush ]; then
		ctl "$s" rpc '{"lcfib:flush":{"table":"all"}}' >/dev/null || return 1
		printf 'route add 10.0.0.0/8 via 192.0.2.1 metric 30\n' >>"$T/docs/fixture.routes"
	fi
	ctl "$s" rpc "{\"lcfib:load\":{\"path\":\"$T/docs/fixture.routes\",\"transient\":true}}" \
		>/dev/null
}

# docs_rewrite CMD: the example's file names, in the temp dir.
docs_rewrite()
{
	local c=$1
	c=${c//\/etc\/lcfib\//$T/docs/etc/}
	c=${c//\/srv\//$T/docs/srv/}
	printf '%s' "$c"
}

# docs_run CMD: runs an example as an operator would type it; output in $T/docs/out.
docs_run()
{
	(
		cd "$T/docs/work" || exit 1
		PATH=$T/docs/wrap:$PATH LCFIB_SOCKET=$T/docs/${DOCS_D:-d}/sock LCFIB_YANG_DIR=$YANG_DIR \
			timeout -k 2 "${DOCS_TIMEOUT:-120}" bash -c "$(docs_rewrite "$1")" </dev/null
	) >"$T/docs/out" 2>&1
}

# docs_check WHERE CMD: one example against its expected outcome.
docs_check()
{
	local where=$1 cmd=$2 exp=${EXPECT[$2]} mode='' want re st i
	case $exp in
	lcfibd-fg\ * | during-load\ *)
		mode=${exp%% *}
		exp=${exp#* }
		;;
	esac
	want=${exp%% *}
	re=${exp#* }
	echo "# $where: $cmd"
	# Each load starts from an empty FIB (a second load of the same table
	# would fail: its routes exist), with the fixture routes.
	if [[ $cmd == *" load "* ]]; then
		docs_fixture flush || fail "the flush and the fixture before '$cmd'"
	fi
	st=0
	case $mode in
	lcfibd-fg) DOCS_D=fg DOCS_TIMEOUT=3 docs_run "$cmd" || st=$? ;;
	during-load)
		# "While it loads, from another terminal": a load runs meanwhile.
		PATH=$T/docs/wrap:$PATH LCFIB_SOCKET=$T/docs/d/sock LCFIB_YANG_DIR=$YANG_DIR \
			"$LCFIBCTL" -q load "$T/docs/srv/fullview.routes" transient >/dev/null 2>&1 &
		for ((i = 0; i < 200; i++)); do
			st=0
			docs_run "$cmd" || st=$?
			grep -Eq -- "$re" "$T/docs/out" && break
			sleep 0.02
		done
		wait
		;;
	*) docs_run "$cmd" || st=$? ;;
	esac
	sed 's/^/  | /' "$T/docs/out" | head -n 8
	[ "$st" = "$want" ] || fail "$where: '$cmd' exited with $st, the docs' outcome is $want"
	[ -z "$re" ] || grep -Eq -- "$re" "$T/docs/out" ||
		fail "$where: '$cmd' printed no line matching '$re'"
}

test_every_documented_example_has_its_outcome()
{
	local where cmd seen=$'\n' n=0 k
	[ "$(id -u)" = 0 ] || t_skip "needs root, for the daemon's network namespace"
	command -v unshare >/dev/null || t_skip "unshare is not installed (Debian: util-linux)"
	unshare -n true 2>/dev/null || t_skip "cannot make a network namespace here"
	have_cli || t_skip "lcfibctl is not built"
	trap 'docs_kill; d_kill_mine' EXIT
	docs_setup || fail "cannot set up the examples' files"
	while IFS=$'\t' read -r where cmd; do
		n=$((n + 1))
		seen="$seen$cmd"$'\n'
		if [ -n "${CANNOT[$cmd]+x}" ]; then
			echo "# $where: $cmd -- cannot run here: ${CANNOT[$cmd]}"
			continue
		fi
		[ -n "${EXPECT[$cmd]+x}" ] ||
			fail "$where: example '$cmd' has no expected outcome in tests/e2e/test_docs.sh (changed or new: add it)"
		[[ $cmd != *"| jq "* ]] || command -v jq >/dev/null ||
			fail "$where: '$cmd' needs jq, which tools/deps.sh installs (Debian: jq)"
		docs_check "$where" "$cmd"
		if [ "$cmd" = lcfibd ]; then
			docs_fixture || fail "the fixture route"
		fi
	done < <(docs_examples)
	[ "$n" -ge 15 ] || fail "only $n examples found in the docs: is the extraction broken?"
	for k in "${!EXPECT[@]}" "${!CANNOT[@]}"; do
		[[ $seen == *$'\n'"$k"$'\n'* ]] ||
			fail "'$k' is no longer an example in the docs: update tests/e2e/test_docs.sh"
	done
}

e2e_init
# Under TSan the examples (a full table loaded, twice) take seven minutes,
# and what they check is what the docs say, which no sanitizer changes; the
# daemon's threads are the other tests' under TSan. The normal and ASan
# builds run them.
! e2e_sanitized thread || e2e_skip_all "a ThreadSanitizer build (see tests/e2e/test_docs.sh)"
t_run test_every_documented_example_has_its_outcome
t_summary

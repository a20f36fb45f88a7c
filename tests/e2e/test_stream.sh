#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Streamed answers on the full table, through lcfibctl as users run it:
# `lookup -f FILE` and `lookup -` (the lookups RPC: addresses in data
# frames, answers in lines frames) and `routes` (a listing streamed as
# text or JSON lines). A million addresses' answers equal the brute-force
# reference LPM's (tests/lpm_ref) on all of them and single lookups on a
# sample; a listing of the whole table equals the file loaded; bad lines
# are answered with their number and token only, and counted; the daemon's
# memory stays flat; a stream does not keep other clients waiting; a
# client that breaks the stream's rules is refused.
#
# Needs: python3, gzip, GNU time (/usr/bin/time) for the CLI's peak memory.
# LCFIB_STRESS scales the number of addresses (the sanitizer builds).

# shellcheck disable=SC2317 # functions run through t_run
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

e2e_init
have_cli || e2e_skip_all "lcfibctl is not built"
LPM_REF=$E2E_BUILDDIR/tests/lpm_ref
[ -x "$LPM_REF" ] || e2e_skip_all "tests/lpm_ref is not built (make check builds it)"

# start_full NAME: lcfibd NAME with the full table (1,062,046 routes) in main.
start_full()
{
	d_start "$1" || fail "lcfibd $1 did not start"
	cli "$(d_sock "$1")" -q load "$(fullview_file)" transient >/dev/null ||
		fail "the full table did not load"
}

# rss_kb NAME: the resident memory of lcfibd NAME, in KiB.
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$(d_pid "$1")/status"; }

# addresses N FILE: N addresses, seeded: random IPv4 (most have a route,
# some not), IPv6 within the table's prefixes and outside them.
addresses()
{
	"$PYTHON" - "$1" "$(fullview_file)" >"$2" <<'EOF'
import ipaddress, random, sys
n, table = int(sys.argv[1]), sys.argv[2]
rng = random.Random(20261201)
v6 = [l.strip() for l in open(table) if ":" in l]
out = []
for i in range(n):
    r = rng.random()
    if r < 0.80:
        out.append(str(ipaddress.IPv4Address(rng.getrandbits(32))))
    elif r < 0.97:
        net = ipaddress.ip_network(rng.choice(v6))
        host = rng.getrandbits(128 - net.prefixlen) if net.prefixlen < 128 else 0
        out.append(str(net.network_address + host))
    else:
        out.append(str(ipaddress.IPv6Address(rng.getrandbits(128))))
sys.stdout.write("\n".join(out) + "\n")
EOF
}

test_a_million_streamed_lookups_equal_the_reference_and_single_lookups()
{
	local s n m before after i a
	start_full lk
	s=$(d_sock lk)
	n=$(scaled 1000000 20000)
	addresses "$n" "$T/addrs"
	before=$(rss_kb lk)
	cli "$s" --json lookup -f "$T/addrs" table main >"$T/answers.json" || fail "lookup -f (JSON)"
	cli "$s" lookup - table main <"$T/addrs" >"$T/answers.txt" || fail "lookup - (text)"
	after=$(rss_kb lk)
	echo "# $n addresses; daemon RSS $before KiB before, $after KiB after"
	# Flat: the answers go out as they are made (20 MiB is a frame's
	# answers many times over; the table itself is ~110 MiB).
	[ $((after - before)) -lt 20480 ] || fail "the daemon grew by $((after - before)) KiB"
	"$LPM_REF" <"$T/addrs" >"$T/ref" || fail "tests/lpm_ref failed"
	"$PYTHON" - "$T/addrs" "$T/answers.json" "$T/ref" "$n" <<'EOF' || fail "the answers differ"
import ipaddress, json, sys
bad = n = found = 0
with open(sys.argv[1]) as addrs, open(sys.argv[2]) as answers, open(sys.argv[3]) as ref:
    for a, line, want in zip(addrs, answers, ref):
        a, want, o, n = a.strip(), want.strip(), json.loads(line)["lcfib:lookup"], n + 1
        got = o["prefix"] if o["found"] else "-"
        found += want != "-"
        # The addresses were written by str(ip_address), as inet_ntop
        # writes them: compared as text, as addresses when the texts differ.
        same = o["address"] == a or ipaddress.ip_address(o["address"]) == ipaddress.ip_address(a)
        if not same or got != want:
            bad += 1
            if bad <= 5:
                print(f"{a}: lcfibd {o}, reference {want}")
        elif o["found"] and (o["table"] != 254 or o["type"] != "blackhole" or o["protocol"] != 3):
            bad += 1
            print(f"{a}: {o} is not the loaded route")
    left = [f.name for f in (addrs, answers, ref) if f.readline()]
assert not left, f"{left} go on after line {n}"
print(f"# {n} answers, {found} with a route, {bad} differ from the reference LPM")
sys.exit(1 if bad or not found or found == n or n != int(sys.argv[4]) else 0)
EOF
	expect_eq "$(wc -l <"$T/answers.txt")" "$n" "text answers, one a line"
	# A sample, one request each: the same answer as streamed, in JSON
	# (made by libyang, not by hand as the stream's) and in text.
	# 200 (each two lcfibctl runs: a tenth of a second apiece under TSan), scaled.
	m=$(scaled 200 20)
	# Each one's line number, address and streamed text answer, in one pass.
	paste "$T/addrs" "$T/answers.txt" |
		awk -v step=$((n / m)) -F '\t' 'NR % step == 1 { print NR "\t" $1 "\t" $2 }' |
		head -n "$m" >"$T/sample"
	while IFS=$'\t' read -r i a text; do
		cli "$s" --json lookup "$a" table main | tr -d ' \n' >>"$T/one.json"
		echo >>"$T/one.json"
		expect_eq "$(cli "$s" lookup "$a" table main)" "$text" \
			"the text of lookup $a (line $i), alone and streamed"
	done <"$T/sample"
	"$PYTHON" - "$T/sample" "$T/one.json" "$T/answers.json" "$m" <<'EOF' || fail "single lookups differ"
import json, sys
lines = [int(l.split("\t")[0]) for l in open(sys.argv[1])]
ones = [json.loads(l)["lcfib:lookup"] for l in open(sys.argv[2])]
streamed = open(sys.argv[3]).readlines()
assert len(ones) == len(lines) == int(sys.argv[4]), (len(ones), len(lines))
for i, one in zip(lines, ones):
    o = json.loads(streamed[i - 1])["lcfib:lookup"]
    assert o == one, f"line {i}: streamed {o}, alone {one}"
EOF
	expect_eq "$(value "$s" /lcfib:lcfib/state/control/streamed-lookups)" "$((2 * n + m))" \
		"lines counted (two streams, $m single text lookups)"
	d_stop lk
}

test_a_listing_of_the_full_table_equals_the_file_loaded()
{
	local s before after peak bound
	start_full ls
	s=$(d_sock ls)
	before=$(rss_kb ls)
	/usr/bin/time -f %M -o "$T/cli-peak" "$LCFIBCTL" -s "$s" -y "$YANG_DIR" \
		routes limit 10000000 >"$T/listing.txt" || fail "routes (text)"
	cli "$s" --json routes limit 10000000 >"$T/listing.json" || fail "routes (JSON lines)"
	after=$(rss_kb ls)
	peak=$(cat "$T/cli-peak")
	echo "# daemon RSS $before KiB before, $after KiB after; lcfibctl peak $peak KiB"
	[ $((after - before)) -lt 20480 ] || fail "the daemon grew by $((after - before)) KiB"
	# The routes pass through lcfibctl, never all in it (it peaked at 1.7 GB
	# when it parsed them): 4 MiB here; ASan's own memory took one to 64 MiB.
	bound=65536
	! e2e_sanitized || bound=262144
	[ "$peak" -lt "$bound" ] || fail "lcfibctl peaked at $peak KiB (bound $bound KiB)"
	"$PYTHON" - "$(fullview_file)" "$T/listing.txt" "$T/listing.json" <<'EOF' || fail "the listing differs"
import itertools, json, socket, sys
# Prefix order as the kernel's trie dumps it: by address, the longest first
# (the file's prefixes are written as inet_ntop writes them).
def order(prefix):
    addr, _, plen = prefix.partition("/")
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    return family != socket.AF_INET, socket.inet_pton(family, addr), -int(plen)
want = sorted((l.strip() for l in open(sys.argv[1]) if l.strip()), key=order)
# Read in step, line by line: a million lines held as lists took this
# test 30 s where it takes 10.
n = v4 = 0
with open(sys.argv[2]) as text, open(sys.argv[3]) as jsonl:
    for t, j, w in itertools.zip_longest(text, jsonl, want):
        n += 1
        assert t is not None and j is not None, f"the listing ends at line {n}, {len(want)} loaded"
        t, o = t.split(), json.loads(j)
        assert t[0] == "blackhole" and t[2:] in (["proto", "boot"], ["proto", "boot", "metric", "1024"]), \
            f"line {n}: {t} is not the loaded route"
        assert o["index"] == n, f"JSON line {n}: index {o['index']}"
        assert o["prefix"] == t[1], f"line {n}: JSON lists {o['prefix']}, text {t[1]}"
        assert t[1] == w, f"line {n}: {t[1]}, where the file in prefix order has {w}"
        v4 += ":" not in w
print(f"# {n} routes listed ({v4} IPv4, {n - v4} IPv6), {len(want)} loaded")
EOF
	d_stop ls
}

test_bad_lines_are_answered_in_place_with_their_number_and_token_only()
{
	local s out st=0
	d_start bad || fail "lcfibd did not start"
	s=$(d_sock bad)
	cli "$s" route add 192.0.2.0/24 dev lo >/dev/null || fail "route add"
	# CRLF, blanks, a comment, junk, a long line (never echoed), a NUL, and
	# a last line without its newline.
	{
		printf '192.0.2.1\r\n\n# a comment\n  192.0.2.9  \nnot-an-address\n'
		printf 'x%.0s' $(seq 1 300)
		printf '\n1.2.3\0.4\n2001:db8::1\n192.0.2.77'
	} >"$T/badlines"
	out=$(cli "$s" lookup -f "$T/badlines" table main 2>"$T/err") || st=$?
	expect_eq "$st" 1 "the exit status with bad lines"
	expect_eq "$out" "192.0.2.0/24 dev lo proto boot
192.0.2.0/24 dev lo proto boot
error: line 5: 'not-an-address' is not an IP address
error: line 6: longer than 64 bytes, not an address
error: line 7: '1.2.3?.4' is not an IP address
no route to 2001:db8::1
192.0.2.0/24 dev lo proto boot" "the answers, in order"
	expect_match "$(cat "$T/err")" "3 of 7 lines are not addresses" "the summary on stderr"
	expect_eq "$(value "$s" /lcfib:lcfib/state/control/bad-lookup-lines)" 3 "bad lines counted"
	# JSON lines: the error in the answer that stands for the line.
	cli "$s" --json lookup - <"$T/badlines" >"$T/bad.json" 2>/dev/null && fail "bad lines, exit 0"
	"$PYTHON" - "$T/bad.json" <<'EOF' || fail "the JSON answers"
import json, sys
a = [json.loads(l)["lcfib:lookup"] for l in open(sys.argv[1])]
assert len(a) == 7, a
assert a[2] == {"found": False, "error": "line 5: 'not-an-address' is not an IP address"}, a[2]
assert "x" not in a[3]["error"], a[3]
assert a[5] == {"address": "2001:db8::1", "found": False}, a[5]
assert a[6]["prefix"] == "192.0.2.0/24" and a[6]["nexthop"] == [{"interface": "lo"}], a[6]
EOF
	# A line cut by a frame's end (lcfibctl sends 64 KiB frames) is joined.
	"$PYTHON" -c 'import sys; sys.stdout.write("192.0.2.5\n" * 30000)' >"$T/many"
	expect_eq "$(cli "$s" lookup -f "$T/many" | sort | uniq -c | awk '{ print $1, $2 }')" \
		"30000 192.0.2.0/24" "30,000 answers across frames"
	d_stop bad
}

test_a_stream_does_not_keep_other_clients_waiting()
{
	local s n t0 ms worst=0 i
	start_full busy
	s=$(d_sock busy)
	n=$(scaled 1000000 20000)
	addresses "$n" "$T/addrs"
	cli "$s" lookup -f "$T/addrs" >/dev/null &
	for ((i = 0; i < 20; i++)); do
		t0=$(date +%s%N)
		cli "$s" lookup 8.8.8.8 >/dev/null || fail "a lookup beside the stream"
		ms=$((($(date +%s%N) - t0) / 1000000))
		[ "$ms" -gt "$worst" ] && worst=$ms
		sleep 0.02
	done
	wait $! || fail "the stream failed"
	echo "# the slowest of 20 lookups beside a stream of $n: $worst ms (lcfibctl's start included)"
	below "$worst" "$(latency_bound 500)" || fail "a lookup beside the stream took $worst ms"
	d_stop busy
}

test_a_stream_that_breaks_the_rules_is_refused()
{
	local s
	d_start rules || fail "lcfibd did not start"
	s=$(d_sock rules)
	"$PYTHON" - "$s" <<'EOF' || fail "the refusals"
import socket, struct, sys
H = struct.Struct(">IBBHI")
def frame(t, p=b"", i=1):
    return H.pack(len(p), 1, t, 0, i) + p
def answers(s):
    f = s.makefile("rb")
    while True:
        h = f.read(12)
        if len(h) < 12:
            return
        n, _, t, _, i = H.unpack(h)
        yield t, f.read(n)
# A request in the middle of a stream: an error, and the connection closes.
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(frame(3, b'{"lcfib:lookups":{}}') + frame(4, b"192.0.2.1\n") + frame(1, b"", 2))
got = list(answers(s))
assert got[0][0] == 68 and got[0][1] == b"no route to 192.0.2.1\n", got
assert got[-1][0] == 65 and b"in the middle of a stream of lookups" in got[-1][1], got
# Data with no stream: an error, the connection stays.
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(frame(4, b"192.0.2.1\n"))
t, p = next(answers(s))
assert t == 65 and b"data without" in p, (t, p)
EOF
	d_answers rules || fail "lcfibd stopped answering"
	d_stop rules
}

t_run test_a_million_streamed_lookups_equal_the_reference_and_single_lookups
t_run test_a_listing_of_the_full_table_equals_the_file_loaded
t_run test_bad_lines_are_answered_in_place_with_their_number_and_token_only
t_run test_a_stream_does_not_keep_other_clients_waiting
t_run test_a_stream_that_breaks_the_rules_is_refused
t_summary

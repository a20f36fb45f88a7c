#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The metrics: `lcfibctl show metrics` and the optional loopback HTTP
# endpoint (config metrics/enabled) give the state tree in Prometheus's
# text format, read here with Prometheus's own parser (python3's
# prometheus_client) and compared with the state tree. The endpoint is off
# by default, serves loopback only, answers nothing but GET /metrics, and
# a greedy client (every slot held, requests that never end) neither
# stalls the control socket nor keeps a slot past the timeout. Each case
# runs lcfibd in a network namespace of its own (ip netns), so the port is
# its alone.
#
# Needs root (network namespaces), iproute2, python3 with prometheus_client.

# shellcheck disable=SC2317 # functions run through t_run
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || e2e_skip_all "needs root, to make network namespaces"
command -v ip >/dev/null || e2e_skip_all "needs iproute2's ip"
ip netns add "lcfibm-probe$$" 2>/dev/null || e2e_skip_all "cannot make a network namespace"
ip netns del "lcfibm-probe$$"
e2e_init
"$PYTHON" -c 'import prometheus_client' 2>/dev/null ||
	e2e_skip_all "needs python3's prometheus_client (Debian: python3-prometheus-client)"
have_cli || e2e_skip_all "lcfibctl is not built"

NS=
S=
PORT=9717 # the default, in the test's own namespace

in_ns() { ip netns exec "$NS" "$@"; }

# m_start NAME [CONFIG-JSON]: lcfibd NAME in a new namespace (lo up), with
# CONFIG-JSON (the lcfib:lcfib container's members) as its config file.
m_start()
{
	local dir
	NS=lcfibm$$-${RANDOM}
	ip netns add "$NS" || fail "ip netns add $NS"
	trap 'd_kill_mine; ip netns del "$NS" 2>/dev/null' EXIT
	ip -n "$NS" link set lo up
	dir=$(d_dir "$1")
	mkdir -p "$dir/state"
	[ -z "${2:-}" ] || printf '{"lcfib:lcfib":{%s}}\n' "$2" >"$dir/state/lcfibd.json"
	D_WRAP="ip netns exec $NS" d_start "$1" || fail "lcfibd $1 did not start"
	S=$(d_sock "$1")
}

# scrape [PATH [METHOD]]: "STATUS\n" then the body, from the endpoint.
scrape()
{
	in_ns "$PYTHON" - "$PORT" "${1:-/metrics}" "${2:-GET}" <<'EOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request(sys.argv[3], sys.argv[2])
r = c.getresponse()
print(r.status)
sys.stdout.write(r.read().decode())
EOF
}

# check_families FILE: parses FILE with prometheus_client, prints NAME TYPE VALUE
# for each unlabelled sample, and fails on what the parser refuses.
check_families()
{
	"$PYTHON" - "$1" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        if not s.labels:
            print(s.name, fam.type, int(s.value) if s.value == int(s.value) else s.value)
EOF
}

routes_file()
{
	local f=$T/m.routes
	printf '%s\n' "10.1.0.0/16 192.0.2.1" "10.2.0.0/16 192.0.2.1" "10.3.0.0/16 192.0.2.2" \
		"2001:db8:1::/48 2001:db8::1" >"$f"
	echo "$f"
}

test_show_metrics_parses_and_agrees_with_the_state()
{
	local out
	m_start m1
	cli "$S" load "$(routes_file)" >/dev/null || fail "load"
	cli "$S" show metrics >"$T/m1.txt" || fail "lcfibctl show metrics failed"
	out=$(check_families "$T/m1.txt") || fail "prometheus_client refuses the output: $out"
	expect_match "$out" '^lcfib_routes_ipv4 gauge 3$' "IPv4 routes"
	expect_match "$out" '^lcfib_routes_ipv6 gauge 1$' "IPv6 routes"
	expect_match "$out" '^lcfib_ingest_loads_total counter 1$' "loads"
	expect_match "$out" '^lcfib_reclamation_sync_mem_bytes gauge 524288$' "sync-mem"
	expect_match "$(cat "$T/m1.txt")" '^lcfib_table_routes\{table="254",family="ipv4"\} 3$' \
		"main's IPv4 routes, labelled"
	expect_match "$(cat "$T/m1.txt")" '^# TYPE lcfib_metrics_scrapes_total counter$' \
		"the endpoint's own counters"
	d_stop m1
}

test_the_endpoint_is_off_by_default()
{
	m_start m2
	expect_eq "$(value "$S" /lcfib:lcfib/state/metrics/listening)" false "listening"
	scrape >/dev/null 2>&1 && fail "something answers on port $PORT with the endpoint off"
	d_stop m2
}

test_the_endpoint_serves_the_same_metrics()
{
	local out body
	m_start m3 '"metrics":{"enabled":true}'
	expect_eq "$(value "$S" /lcfib:lcfib/state/metrics/listening)" true "listening"
	cli "$S" load "$(routes_file)" >/dev/null || fail "load"
	out=$(scrape) || fail "the scrape failed"
	expect_eq "$(head -n 1 <<<"$out")" 200 "the status"
	tail -n +2 <<<"$out" >"$T/m3.txt"
	body=$(check_families "$T/m3.txt") || fail "prometheus_client refuses the scrape: $body"
	expect_match "$body" '^lcfib_routes_ipv4 gauge 3$' "IPv4 routes"
	expect_match "$body" '^lcfib_metrics_scrapes_total counter 0$' \
		"scrapes (counted once answered)"
	# An answer serves the scrapes of a second; one made later shows a new route.
	cli "$S" route add 10.4.0.0/16 via 192.0.2.1 >/dev/null || fail "route add"
	sleep 1.1
	expect_match "$(scrape)" '^lcfib_routes_ipv4 4$' "IPv4 routes a second after a route add"
	expect_eq "$(value "$S" /lcfib:lcfib/state/metrics/scrapes)" 2 "scrapes"
	# HEAD: the headers alone.
	out=$(scrape /metrics HEAD)
	expect_eq "$out" 200 "HEAD"
	d_stop m3
}

test_other_requests_are_refused_and_counted()
{
	local out
	m_start m4 '"metrics":{"enabled":true}'
	expect_eq "$(scrape / | head -n 1)" 404 "GET /"
	expect_eq "$(scrape /metrics POST | head -n 1)" 405 "POST /metrics"
	out=$(in_ns "$PYTHON" - "$PORT" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
print(s.recv(100).split(b"\r\n")[0].decode())
EOF
	) || fail "no answer to garbage"
	expect_eq "$out" "HTTP/1.1 400 Bad Request" "garbage"
	expect_eq "$(value "$S" /lcfib:lcfib/state/metrics/bad-requests)" 3 "bad requests"
	expect_eq "$(value "$S" /lcfib:lcfib/state/metrics/scrapes)" 0 "scrapes"
	d_stop m4
}

test_a_non_loopback_address_is_refused()
{
	local out
	m_start m5
	out=$(cli "$S" set metrics address 198.51.100.1 2>&1) && fail "a non-loopback address was taken"
	expect_match "$out" "not a loopback address" "the error"
	expect_match "$out" "metrics" "the error names the leaf"
	expect_eq "$(value "$S" /lcfib:lcfib/state/metrics/listening)" false "listening"
	cli "$S" set metrics enabled true >/dev/null || fail "enable"
	expect_eq "$(value "$S" /lcfib:lcfib/state/metrics/listening)" true "listening after enable"
	cli "$S" set metrics enabled false >/dev/null || fail "disable"
	expect_eq "$(value "$S" /lcfib:lcfib/state/metrics/listening)" false "listening after disable"
	scrape >/dev/null 2>&1 && fail "the endpoint answers after it was turned off"
	d_stop m5
}

# Eight connections that send half a request and wait: the ninth is closed
# at once and counted; the control socket answers meanwhile; five seconds
# on they are closed and a scrape works again.
test_a_greedy_client_neither_stalls_others_nor_keeps_its_slots()
{
	local holder
	m_start m6 '"metrics":{"enabled":true}'
	in_ns "$PYTHON" - "$PORT" >"$T/holder.out" 2>&1 <<'EOF' &
import socket, sys, time
held = []
for i in range(9):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    held.append(s)
print("held", flush=True)
time.sleep(20)
EOF
	holder=$!
	wait_until "the holder has its connections" grep -q held "$T/holder.out"
	wait_until "the ninth is refused" value_is "$S" /lcfib:lcfib/state/metrics/refused 1
	expect_eq "$(value "$S" /lcfib:lcfib/state/metrics/connections)" 8 "connections held"
	# The control socket is served while the slots are full.
	expect_eq "$(value "$S" /lcfib:lcfib/state/routes/ipv4)" 0 "a control request"
	wait_until "the held connections time out" value_is "$S" /lcfib:lcfib/state/metrics/timed-out 8
	expect_eq "$(scrape | head -n 1)" 200 "a scrape after the timeout"
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	d_stop m6
}

t_run test_show_metrics_parses_and_agrees_with_the_state
t_run test_the_endpoint_is_off_by_default
t_run test_the_endpoint_serves_the_same_metrics
t_run test_other_requests_are_refused_and_counted
t_run test_a_non_loopback_address_is_refused
t_run test_a_greedy_client_neither_stalls_others_nor_keeps_its_slots
t_summary

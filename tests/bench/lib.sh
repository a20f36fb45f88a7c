# shellcheck shell=bash disable=SC2154
# Shared by the benchmark scripts that drive lcfibd: sourced after they set
# top (the source tree), build (the build tree) and tmp (their scratch
# folder, which holds the daemon's socket, state, pid file and log), and
# ns_pid (a process holding a network namespace, or empty).

# bench_cleanup: the EXIT trap: kills what is left (every $tmp/*.pid, the
# namespace's holder) and removes $tmp.
bench_cleanup()
{
	local f
	for f in "$tmp"/*.pid; do
		[ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	[ -n "$ns_pid" ] && kill "$ns_pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}

# start_lcfibd CONFIG-JSON [WRAP...]: a fresh lcfibd with that configuration,
# run under WRAP (nsenter ...) if given; returns once it answers.
start_lcfibd()
{
	local conf=$1
	shift
	rm -rf "$tmp/state"
	echo "$conf" >"$tmp/lcfibd.json"
	"$@" "$build/daemon/lcfibd" -f -c "$tmp/lcfibd.json" -s "$tmp/sock" -S "$tmp/state" \
		-p "$tmp/lcfibd.pid" -y "$top/yang" -d warning 2>>"$tmp/lcfibd.log" &
	for _ in $(seq 200); do
		"$build/cli/lcfibctl" -s "$tmp/sock" -y "$top/yang" show config >/dev/null 2>&1 && return
		sleep 0.05
	done
	echo "lcfibd did not start:" >&2
	cat "$tmp/lcfibd.log" >&2
	exit 1
}

# stop_pid NAME: stops the process in $tmp/NAME.pid and waits until it is gone.
stop_pid()
{
	local pid
	pid=$(cat "$tmp/$1.pid")
	kill "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	rm -f "$tmp/$1.pid"
}

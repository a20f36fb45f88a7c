#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds the libFuzzer targets with clang (ASan and UBSan) into a temp
# dir: the netlink and FPM decoders, seeded from the encoder (gen_seeds.c);
# the route-file parser and the control socket's requests, seeded from
# the few lines and frames below. Runs each for a fixed number of inputs,
# and prints
# cmocka-style summary lines (tools/summarize.sh counts them). Exits 0 when
# both ran clean, 1 when one found something (the input is kept in
# $LCFIB_BUILDDIR/tests/fuzz/), 77 (skip) without clang or libFuzzer.
#
# Environment: LCFIB_SRCDIR, LCFIB_BUILDDIR (make check sets them; by
# default this checkout), CLANG (default clang), FUZZ_RUNS (inputs per
# target, default 200000), FUZZ_MAX_TIME (seconds per target at most,
# default 15: a slow machine runs fewer inputs rather than holding up
# make check), FUZZ_SEED (libFuzzer's -seed, to replay a run; by default
# a new one, printed).

set -u
set -o pipefail

SRCDIR=${LCFIB_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILDDIR=${LCFIB_BUILDDIR:-$SRCDIR}
CLANG=${CLANG:-clang}
RUNS=${FUZZ_RUNS:-200000}
MAX_TIME=${FUZZ_MAX_TIME:-15}
TARGETS=(fuzz_rtnl fuzz_fpm fuzz_routefile fuzz_ctl)
# am_sources VAR: the .c files Makefile.am lists in VAR (continued lines too).
am_sources()
{
	awk -v var="$1" '
		$1 == var && $2 == "=" { on = 1 }
		on { for (i = 1; i <= NF; i++) if ($i ~ /\.c$/) print $i; if ($NF != "\\") exit }
	' "$SRCDIR/Makefile.am"
}
# The library, and the daemon but its main.c: fuzz_ctl serves requests with them.
mapfile -t LIB_SOURCES < <(am_sources lib_liblcfib_core_la_SOURCES; am_sources lib_liblcfib_conv_la_SOURCES)
mapfile -t DAEMON_SOURCES < <(am_sources daemon_lcfibd_SOURCES | grep -vx daemon/main.c)

skip()
{
	echo "SKIP: $*"
	exit 77
}

command -v "$CLANG" >/dev/null 2>&1 || skip "no $CLANG to build the fuzz targets with"
[ ${#LIB_SOURCES[@]} -gt 3 ] && [ ${#DAEMON_SOURCES[@]} -gt 3 ] || {
	echo "FAIL: no source lists (lib_liblcfib_core_la_SOURCES, lib_liblcfib_conv_la_SOURCES, daemon_lcfibd_SOURCES) in $SRCDIR/Makefile.am"
	exit 1
}
# The targets are built here, with their own ASan and UBSan, whatever the
# build: a sanitizer build of make check would only run them again.
if grep -q -- '^SAN_CFLAGS = .*-fsanitize' "$BUILDDIR/Makefile" 2>/dev/null; then
	skip "the fuzz targets build their own ASan+UBSan and run in the build without sanitizers"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lcfib-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# libFuzzer comes with clang's compiler-rt, which distributions package apart.
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\n%s\n' \
	'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' >"$tmp/probe.c"
"$CLANG" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" >"$tmp/probe.log" 2>&1 ||
	skip "$CLANG cannot link libFuzzer with ASan and UBSan: $(head -n 3 "$tmp/probe.log" | tr '\n' ' ')"

deps_cflags=$(pkg-config --cflags liburcu-memb libmnl libyang 2>/dev/null) || deps_cflags=
deps_libs=$(pkg-config --libs liburcu-memb libmnl 2>/dev/null) || deps_libs="-lurcu-memb -lmnl"
deps_libs="$deps_libs -lpthread"
yang_libs=$(pkg-config --libs libyang 2>/dev/null) || yang_libs=-lyang
CFLAGS=(-std=gnu11 -g -O1 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
	-Wformat=2 -Wwrite-strings -Wundef -Wvla -D_LGPL_SOURCE=1 -I"$SRCDIR" -I"$BUILDDIR")
# shellcheck disable=SC2206 # pkg-config's words are meant to split
CFLAGS+=($deps_cflags)
# shellcheck disable=SC2054 # the commas are clang's
SAN=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)

# fail_build WHAT LOG: a build step failed; both targets count as failed.
fail_build()
{
	cat "$2"
	echo "[==========] 0 test(s) run."
	echo "[  FAILED  ] ${#TARGETS[@]} test(s), listed below:"
	for t in "${TARGETS[@]}"; do echo "[  FAILED  ] $t (build of $1)"; done
	exit 1
}

# compile SOURCE...: once each, instrumented, into $tmp/NAME.o; the objects in $objs.
compile()
{
	local s o
	objs=()
	for s in "$@"; do
		o=$tmp/$(basename "$(dirname "$s")")-$(basename "$s" .c).o
		"$CLANG" "${CFLAGS[@]}" -fsanitize=fuzzer-no-link "${SAN[@]}" -c "$SRCDIR/$s" \
			-o "$o" >"$o.log" 2>&1 || fail_build "$s" "$o.log"
		objs+=("$o")
	done
}
compile "${DAEMON_SOURCES[@]}"
daemon_objs=("${objs[@]}")
compile "${LIB_SOURCES[@]}"

# link OUT SANITIZERS SOURCE [MORE...]: a program of SOURCE, the library and MORE.
link()
{
	# shellcheck disable=SC2086 # pkg-config's words are meant to split
	"$CLANG" "${CFLAGS[@]}" "${SAN[@]}" "$2" "$3" "${@:4}" "${objs[@]}" -o "$1" $deps_libs \
		>"$1.log" 2>&1 || fail_build "$(basename "$3")" "$1.log"
}

# frame TYPE FLAGS PAYLOAD: a control frame (lib/ctl.h), as printf escapes.
frame()
{
	local n=${#3}
	printf '\\x%02x\\x%02x\\x%02x\\x%02x\\x01\\x%02x\\x00\\x%02x\\x00\\x00\\x00\\x07%s' \
		$((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)) "$1" "$2" "$3"
}

# The control socket's seeds: one request of each kind, and a few in a row
# (config data sent as an rpc: libyang leaked it before ctl.c checked the name;
# a get with `mod` by zero: libyang 2.1 died of SIGFPE before err.c refused it;
# deref() of a leaf that is no leafref, a NULL dereference in libyang 2.1,
# and re-match() with a bad pattern, which leaks: refused by err.c too).
seed_ctl()
{
	local d=$tmp/corpus/fuzz_ctl i=0 f
	mkdir -p "$d"
	for f in "$(frame 1 3 '')" "$(frame 1 2 /lcfib:lcfib/state)" \
		"$(frame 1 1 "/lcfib:lcfib/feeds")" \
		"$(frame 3 0 '{"lcfib:lookup":{"address":"10.2.3.4"}}')" \
		"$(frame 3 0 '{"lcfib:routes":{"limit":2}}')" \
		"$(frame 3 0 '{"lcfib:metrics":{}}')" \
		"$(frame 2 0 '{"lcfib:lcfib":{"metrics":{"address":"::1","port":1}}}')" \
		"$(frame 3 0 '{"lcfib:routes":{"prefix":"2001:db8::/32","table":"main"}}')" \
		"$(frame 3 0 '{"lcfib:load":{"path":"-"}}')$(frame 4 0 '10.0.0.0/8')$(frame 5 0 '')" \
		"$(frame 3 0 '{"lcfib:lookups":{}}')$(frame 4 0 $'10.0.0.1\n::1\nx\n10.')$(frame 4 0 '2.3.4')$(frame 5 0 '')" \
		"$(frame 3 0 '{"lcfib:lookups":{"table":"local","format":"json-lines"}}')$(frame 4 0 $'# c\r\n\n2001:db8::1')$(frame 1 2 '')" \
		"$(frame 3 0 '{"lcfib:routes":{"format":"text"}}')$(frame 3 0 '{"lcfib:routes":{"format":"json-lines","limit":1}}')" \
		"$(frame 2 0 '{"lcfib:lcfib":{"sync-mem":65536}}')" \
		"$(frame 3 0 '{"lcfib:lcfib":{"sync-mem":65536}}')" \
		"$(frame 1 2 /lcfib:lcfib/state/routes)$(frame 3 0 '{"lcfib:routes":{}}')$(frame 1 2 '')" \
		"$(frame 1 3 'count(/lcfib:lcfib) mod 0')$(frame 1 1 'line mod 4')$(frame 1 1 '1 mod')" \
		"$(frame 1 2 'deref(/lcfib:lcfib/state/daemon/version)')$(frame 1 1 '/lcfib:lcfib[1 divderef(log-level)]')" \
		"$(frame 1 2 "/lcfib:lcfib/state/daemon[re-match(version, '(')]")$(frame 2 2 '/lcfib:lcfib/log-level[deref(.)]')"; do
		# shellcheck disable=SC2059 # the frame is made of escapes for printf
		printf "$f" >"$d/seed-$((i++))"
	done
}

# The route-file seeds: a format byte (0 auto, 1 batch, 2 plain; +0x80 skip bad
# lines), a byte where the file is cut in two, then the file.
seed_routefile()
{
	local d=$tmp/corpus/fuzz_routefile
	mkdir -p "$d"
	printf '\x01\x10route add 10.0.0.0/8 via 192.0.2.1 dev lo\nroute del 10.0.0.0/8\n' >"$d/batch"
	printf '\x02\x05192.0.2.0/24\r\n2001:db8::/32\n# comment\n\n10.0.0.0/8' >"$d/plain"
	printf '\x81\x20route add blackhole 10.1.0.0/16 metric 5\nroute add 10.2.0.0/33\n%s\n' \
		'route append 10.2.0.0/16 nexthop via 192.0.2.1 dev lo weight 2 nexthop dev lo' >"$d/skip"
	printf '\x00\x03route add 2001:db8::/32 via fe80::1 dev lo table 100 proto 186\n' >"$d/auto"
}

mkdir -p "$tmp/corpus/fuzz_rtnl" "$tmp/corpus/fuzz_fpm"
link "$tmp/gen_seeds" -fsanitize=address,undefined "$SRCDIR/tests/fuzz/gen_seeds.c"
"$tmp/gen_seeds" "$tmp/corpus/fuzz_rtnl" "$tmp/corpus/fuzz_fpm" >"$tmp/gen_seeds.out" 2>&1 ||
	fail_build "the seed corpus" "$tmp/gen_seeds.out"
seed_ctl
seed_routefile
for t in fuzz_rtnl fuzz_fpm fuzz_routefile; do
	link "$tmp/$t" -fsanitize=fuzzer "$SRCDIR/tests/fuzz/$t.c"
done
# shellcheck disable=SC2086 # pkg-config's words are meant to split
link "$tmp/fuzz_ctl" -fsanitize=fuzzer "$SRCDIR/tests/fuzz/fuzz_ctl.c" "${daemon_objs[@]}" $yang_libs
export LCFIB_YANG_DIR=$SRCDIR/yang

seed_opt=()
[ -n "${FUZZ_SEED:-}" ] && seed_opt=(-seed="$FUZZ_SEED")
failed=()
echo "[==========] Running ${#TARGETS[@]} test(s)."
for t in "${TARGETS[@]}"; do
	echo "[ RUN      ] $t"
	log=$tmp/$t.out
	ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		"$tmp/$t" -runs="$RUNS" -max_total_time="$MAX_TIME" -max_len=8192 -timeout=10 \
		-print_final_stats=1 -artifact_prefix="$tmp/$t-" "${seed_opt[@]}" \
		"$tmp/corpus/$t" >"$log" 2>&1
	status=$?
	seed=$(sed -n 's/.*Seed: \([0-9]*\).*/\1/p' "$log" | head -n 1)
	done_line=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	if [ $status -eq 0 ] && [ -n "$done_line" ]; then
		echo "[       OK ] $t (${execs:-?} inputs, ${rate:-?} exec/s, seed ${seed:-?})"
		continue
	fi
	failed+=("$t")
	tail -n 60 "$log"
	# The input that failed and the target, to replay it: tests/fuzz/fuzz_rtnl FILE.
	keep=$BUILDDIR/tests/fuzz
	mkdir -p "$keep" && cp "$tmp/$t" "$keep/"
	input=
	for a in "$tmp/$t"-*; do
		[ -e "$a" ] || continue
		cp "$a" "$keep/"
		echo "input kept: $keep/$(basename "$a") (replay: $keep/$t $keep/$(basename "$a"))"
		od -A d -t x1 "$a" | head -n 20
		# Its first bytes, control bytes escaped, for a summary that is all one sees of CI.
		input=$(head -c 96 "$a" | od -An -c | tr -s ' \n' ' ' | cut -c 1-240)
	done
	# What the sanitizer or libFuzzer said, and the input, in the line CI's summary shows.
	why=$(grep -m 1 -E '^(SUMMARY: |==[0-9]+== ?ERROR: |.*: check failed: )' "$log" | cut -c 1-160)
	echo "[  FAILED  ] $t (status $status, seed ${seed:-?}; replay the run with FUZZ_SEED=${seed:-?}${why:+; $why}${input:+; input:$input})"
done
echo "[==========] ${#TARGETS[@]} test(s) run."
echo "[  PASSED  ] $((${#TARGETS[@]} - ${#failed[@]})) test(s)."
if [ ${#failed[@]} -gt 0 ]; then
	echo "[  FAILED  ] ${#failed[@]} test(s), listed below:"
	for t in "${failed[@]}"; do echo "[  FAILED  ] $t"; done
	exit 1
fi
exit 0

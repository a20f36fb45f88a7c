#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds the libFuzzer targets of the netlink and FPM decoders with clang
# (ASan and UBSan) into a temp dir, seeds them from the encoder
# (gen_seeds.c), runs each for a fixed number of inputs, and prints
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
TARGETS=(fuzz_rtnl fuzz_fpm)
LIB_SOURCES=(lib/rtnl.c lib/fpm.c lib/err.c lib/addr.c)

skip()
{
	echo "SKIP: $*"
	exit 77
}

command -v "$CLANG" >/dev/null 2>&1 || skip "no $CLANG to build the fuzz targets with"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lcfib-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# libFuzzer comes with clang's compiler-rt, which distributions package apart.
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\n%s\n' \
	'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' >"$tmp/probe.c"
"$CLANG" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" >"$tmp/probe.log" 2>&1 ||
	skip "$CLANG cannot link libFuzzer with ASan and UBSan: $(head -n 3 "$tmp/probe.log" | tr '\n' ' ')"

deps_cflags=$(pkg-config --cflags liburcu-memb libmnl 2>/dev/null) || deps_cflags=
deps_libs=$(pkg-config --libs libmnl 2>/dev/null) || deps_libs=-lmnl
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

# The library's sources once, instrumented, for every program below.
objs=()
for s in "${LIB_SOURCES[@]}"; do
	o=$tmp/$(basename "$s" .c).o
	"$CLANG" "${CFLAGS[@]}" -fsanitize=fuzzer-no-link "${SAN[@]}" -c "$SRCDIR/$s" -o "$o" \
		>"$o.log" 2>&1 || fail_build "$s" "$o.log"
	objs+=("$o")
done

# link OUT SANITIZERS SOURCE
link()
{
	# shellcheck disable=SC2086 # pkg-config's words are meant to split
	"$CLANG" "${CFLAGS[@]}" "${SAN[@]}" "$2" "$3" "${objs[@]}" -o "$1" $deps_libs \
		>"$1.log" 2>&1 || fail_build "$(basename "$3")" "$1.log"
}

mkdir -p "$tmp/corpus/fuzz_rtnl" "$tmp/corpus/fuzz_fpm"
link "$tmp/gen_seeds" -fsanitize=address,undefined "$SRCDIR/tests/fuzz/gen_seeds.c"
"$tmp/gen_seeds" "$tmp/corpus/fuzz_rtnl" "$tmp/corpus/fuzz_fpm" >"$tmp/gen_seeds.out" 2>&1 ||
	fail_build "the seed corpus" "$tmp/gen_seeds.out"
for t in "${TARGETS[@]}"; do
	link "$tmp/$t" -fsanitize=fuzzer "$SRCDIR/tests/fuzz/$t.c"
done

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
	for a in "$tmp/$t"-*; do
		[ -e "$a" ] || continue
		cp "$a" "$keep/"
		echo "input kept: $keep/$(basename "$a") (replay: $keep/$t $keep/$(basename "$a"))"
		od -A d -t x1 "$a" | head -n 20
	done
	echo "[  FAILED  ] $t (status $status, seed ${seed:-?}; replay the run with FUZZ_SEED=${seed:-?})"
done
echo "[==========] ${#TARGETS[@]} test(s) run."
echo "[  PASSED  ] $((${#TARGETS[@]} - ${#failed[@]})) test(s)."
if [ ${#failed[@]} -gt 0 ]; then
	echo "[  FAILED  ] ${#failed[@]} test(s), listed below:"
	for t in "${failed[@]}"; do echo "[  FAILED  ] $t"; done
	exit 1
fi
exit 0

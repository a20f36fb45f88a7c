#!/usr/bin/env bash
# The test command of the README: installs what is missing, builds, runs
# `make check`, and ends with "N passed, N failed".
# Usage: tools/run-tests.sh [BUILDDIR [configure options...]]
# Environment: LCFIB_TESTS, a list of tests (as Makefile.am's TESTS names
# them) to run instead of all of them (.ci/run's sanitizer builds);
# LCFIB_JOBS, make's -j (default: the number of CPUs).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
[ $# -gt 0 ] || set -- --enable-werror

"$top/tools/deps.sh" || { echo "0 passed, 1 failed"; exit 1; }
cd "$top" || { echo "0 passed, 1 failed"; exit 1; }
"$top/tools/build.sh" "$dir" "$@" || { echo "0 passed, 1 failed"; exit 1; }
status=0
# The summary sums every result in the folder: none left from an earlier run.
find "$dir/tests" \( -name '*.log' -o -name '*.trs' \) -delete 2>/dev/null
make -C "$dir" -j"${LCFIB_JOBS:-$(nproc)}" check ${LCFIB_TESTS:+TESTS="$LCFIB_TESTS"} \
	>"$dir/check.out" 2>&1 || status=$?
grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):' "$dir/check.out"
if [ $status -ne 0 ]; then
	for log in "$dir"/tests/*.log "$dir"/tests/*/*.log; do
		grep -q -E '^(FAIL|ERROR)' "${log%.log}.trs" 2>/dev/null || continue
		echo "---- $log (last 40 lines)"
		tail -n 40 "$log"
	done
fi
"$top/tools/summarize.sh" "$dir"
exit $status

#!/usr/bin/env bash
# Sums the test cases of a `make check` run from its logs: cmocka's own
# counts per program, and one failure for a program that died before
# printing them. Prints the five slowest programs (a log's birth to its
# last write), then "N passed, N failed[, N skipped]".
# Usage: tools/summarize.sh BUILDDIR
set -uo pipefail
dir=$1
passed=0 failed=0 skipped=0
for trs in "$dir"/tests/*.trs "$dir"/tests/*/*.trs; do
	[ -e "$trs" ] || continue
	log=${trs%.trs}.log
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:.*/\1/p' "$log" | tail -1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s), listed below:.*/\1/p' "$log" | tail -1)
	res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
	if [ -z "$p" ] && [ -z "$f" ]; then
		# No cmocka summary: the program crashed or is not a cmocka test.
		case "$res" in
		PASS) passed=$((passed + 1)) ;;
		SKIP) skipped=$((skipped + 1)) ;;
		*) failed=$((failed + 1)) ;;
		esac
		continue
	fi
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	skipped=$((skipped + ${s:-0}))
	# A program that failed after its summary (a leak, a sanitizer report) counts once more.
	if [ "$res" != PASS ] && [ "$res" != SKIP ] && [ "${f:-0}" -eq 0 ]; then
		failed=$((failed + 1))
	fi
done
for log in "$dir"/tests/*.log "$dir"/tests/*/*.log; do
	[ -e "${log%.log}.trs" ] || continue
	born=$(stat -c %W "$log") changed=$(stat -c %Y "$log")
	[ "$born" -gt 0 ] && echo "$((changed - born)) ${log#"$dir"/}"
done | sort -rn | head -n 5 | awk '{ printf "# slowest: %s %d s\n", $2, $1 }'
# The failed cases by name, each with its first failure message, so the
# end of a long output still says what failed.
for log in "$dir"/tests/*.log "$dir"/tests/*/*.log; do
	grep -q -E '^:test-result: (FAIL|ERROR)' "${log%.log}.trs" 2>/dev/null || continue
	awk -v lg="${log#"$dir"/}" '
		/^\[ RUN      \] / { name = $4; msg = "" }
		(/^FAIL: / || /^\[  ERROR   \] --- /) && msg == "" { msg = substr($0, 1, 200) }
		/^\[  FAILED  \] / && $5 != "test(s)," && !seen[$4]++ {
			m = $4 == name ? msg : ""
			printf "# failed: %s %s: %s\n", lg, $4, (m != "" ? m : substr($0, 14)); n++
		}
		END { if (!n) printf "# failed: %s (no case named: it crashed or was killed)\n", lg }
	' "$log"
done
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi

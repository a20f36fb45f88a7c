#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/bench/bench_fib_reads, the benchmark whose lookups count what they
# read (lib/trie.h, TRIE_READ_STATS): single and batch lookups read the
# same memory objects for the same addresses (the batch is the same
# algorithm, its reads interleaved), and IPv6 lookups inside the table's
# prefixes take their answer from the slot their descent ends at instead
# of backtracking (issue 9, the thirteenth round), and read fewer levels
# than with the kernel's thresholds (the fourteenth); wider roots
# (fib_set_root_threshold(), the seventeenth) read less. Counts, not times: the
# same for a table, a seed and a build on any machine. See
# tests/e2e/lib.sh for the harness.
#
# Needs: bash, awk, the full table in tests/data.

# shellcheck disable=SC2317 # functions run through t_run and t_case
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

BENCH_READS=$E2E_BUILDDIR/tests/bench/bench_fib_reads

# reads_run: section reads of the quick run, its table in $T/reads (one
# run for both tests: the counts of a build, a table and a seed are fixed).
reads_run()
{
	if [ ! -s "$T/reads" ]; then
		[ -x "$BENCH_READS" ] || fail "$BENCH_READS is not built (make builds it)"
		[ -r "$FULLVIEW_GZ" ] || t_skip "no full table at $FULLVIEW_GZ"
		LCFIB_DATA=$LCFIB_DATA "$BENCH_READS" --quick --section reads >"$T/reads.out" \
			2>"$T/reads.err" || fail "bench_fib_reads failed: $(tail -3 "$T/reads.err")"
		mv "$T/reads.out" "$T/reads"
	fi
	cat "$T/reads"
}

# Each family and address kind has a single and a batch row with the same
# counts; every lookup reads the root's slot; DIR-24-8 is beside them.
# (The rows at wider roots, batch only, are the next test's.)
test_single_and_batch_lookups_read_the_same()
{
	reads_run
	awk '
	/^IPv[46] / && !/root threshold/ {
		n = split($0, f, /  +/)
		key = $1 " " f[2]
		api = f[3]
		counts = ""
		for (i = 4; i <= n; i++)
			counts = counts " " f[i]
		if (api ~ /batch/)
			batch[key] = counts
		else
			single[key] = counts
		if (f[4] + 0 < 1)
			bad = bad "\n" key " " api ": root " f[4] " reads a lookup, below 1"
	}
	/^DIR-24-8 / { dir++ }
	END {
		for (k in single) {
			rows++
			if (!(k in batch))
				bad = bad "\n" k ": no batch row"
			else if (single[k] != batch[k])
				bad = bad "\n" k ": single" single[k] " but batch" batch[k]
		}
		if (rows != 4)
			bad = bad "\n" rows + 0 " single rows, not 4"
		if (dir != 2)
			bad = bad "\n" dir + 0 " DIR-24-8 lines, not 2"
		if (bad != "") {
			print "bench_fib_reads:" bad > "/dev/stderr"
			exit 1
		}
	}' "$T/reads" || fail "the reads of single and batch lookups differ (above)"
}

# ipv6_inside_reads N: sets READS to column NF - N of the IPv6
# inside-prefixes row (single lookups; the batch reads the same).
ipv6_inside_reads()
{
	reads_run >/dev/null
	READS=$(awk -v back="$1" '/^IPv6 +inside prefixes +fib_lookup6_rcu/ { print $(NF - back) }' "$T/reads")
	[ -n "$READS" ] || fail "no IPv6 inside-prefixes row in $(cat "$T/reads")"
}

# An answer slot reached after skipped bits is checked against its node's
# header (one read) instead of treated as empty: IPv6 lookups inside table
# prefixes spent 2.3 reads a lookup in steps 2-3 before, 0.23 after.
test_ipv6_lookups_inside_prefixes_rarely_backtrack()
{
	ipv6_inside_reads 1
	echo "# IPv6 inside prefixes: $READS reads a lookup in steps 2-3"
	below "$READS" 0.5 || fail "IPv6 lookups inside prefixes read $READS objects in steps 2-3 (0.19 expected)"
}

# IPv6 nodes inflate at 30 % (lib/trie6.c): a lookup inside a table
# prefix reads 5.98 objects in all (--quick), 6.78 with the kernel's.
test_ipv6_lookups_inside_prefixes_read_fewer_levels()
{
	ipv6_inside_reads 0
	echo "# IPv6 inside prefixes: $READS reads a lookup"
	below "$READS" 6.4 || fail "IPv6 lookups inside prefixes read $READS objects (5.98 expected, 6.78 with the kernel's thresholds)"
}

# fib_set_root_threshold(): at the default (25 %) the IPv4 root has 19
# bits, and a lookup inside a prefix reads fewer objects than at the
# kernel's 30 % (18 bits; 2.25 against 2.45), more than at 20 % (20 bits,
# 2.11); at 5 % it has 24 and reads one, as DIR-24-8 does.
test_wider_roots_read_fewer_objects()
{
	reads_run >/dev/null
	awk '
	/^IPv4 +inside prefixes +fib_lookup4_batch_rcu/ { def = $NF }
	/^IPv4 +inside prefixes +batch, root threshold 30 %/ { t30 = $NF }
	/^IPv4 +inside prefixes +batch, root threshold 20 %/ { t20 = $NF }
	/^IPv4 +inside prefixes +batch, root threshold 5 %/ { t5 = $NF }
	END {
		printf "# IPv4 inside prefixes: %s reads a lookup at the default, %s at 30 %%, %s at 20 %%, %s at 5 %%\n", def, t30, t20, t5
		exit !(def != "" && t30 != "" && t20 != "" && t5 != "" &&
		       t30 + 0 > def + 0.1 && t20 + 0 < def - 0.1 && t5 + 0 < 1.01)
	}' "$T/reads" || fail "wider roots do not read fewer objects (2.45 at 30 %, 2.25 at the default, 2.11 at 20 % and 1.00 at 5 % expected)"
}

# rte_fib6's reads, counted from the table (24 bits, then 8 a level):
# 3.50 a lookup inside IPv6 prefixes, one for addresses in 2000::/3 that
# no prefix longer than 24 bits holds (nearly all).
test_rte_fib6_reads_are_counted_beside()
{
	reads_run >/dev/null
	awk '
	/^rte_fib6 .*IPv6 inside prefixes:/ { inside = $(NF - 3) }
	/^rte_fib6 .*IPv6 random in 2000::\/3:/ { random = $(NF - 3) }
	END {
		printf "# rte_fib6: %s reads a lookup inside prefixes, %s random\n", inside, random
		exit !(inside != "" && random != "" && inside + 0 > 3 && inside + 0 < 4 && random + 0 >= 1 && random + 0 < 1.1)
	}' "$T/reads" || fail "rte_fib6's reads are not beside ours (3.50 and 1.00 expected)"
}

e2e_init
t_run test_single_and_batch_lookups_read_the_same
t_run test_rte_fib6_reads_are_counted_beside
t_run test_wider_roots_read_fewer_objects
t_run test_ipv6_lookups_inside_prefixes_rarely_backtrack
t_run test_ipv6_lookups_inside_prefixes_read_fewer_levels
t_summary

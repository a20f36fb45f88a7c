#!/usr/bin/env bash
# The main job of the README, until the daemon exists: installs what is
# missing (DPDK too, for the baseline), builds, and runs the full-table
# benchmark: load rate, bytes per route, trie statistics and lookups/s, then
# DPDK's rte_lpm and rte_fib on the same table (rte_lpm's load alone takes
# about a minute). Extra arguments go to the benchmark.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tools/deps.sh" --bench
"$top/tools/build.sh" build --enable-werror
cd "$top"
export LCFIB_DATA="$top/tests/data"
build/tests/bench/bench_fib --section full "$@"
build/tests/bench/bench_fib --section dpdk "$@"

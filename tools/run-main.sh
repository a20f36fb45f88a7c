#!/usr/bin/env bash
# The main job of the README, until the daemon exists: installs what is
# missing (DPDK too, for the baseline), builds, and runs the full-table
# benchmark: load rate, bytes per route, lookups/s beside DPDK's rte_lpm.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tools/deps.sh" --bench
"$top/tools/build.sh" build --enable-werror
cd "$top"
LCFIB_DATA="$top/tests/data" build/tests/bench/bench_fib --section full "$@"

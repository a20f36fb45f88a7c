#!/usr/bin/env bash
# Installs what lcfib needs to build and test on Debian 12 (as root, or with sudo).
# Usage: tools/deps.sh [--bench]   (--bench adds DPDK, the benchmarks' baseline, and gnuplot)
set -euo pipefail

pkgs=(build-essential autoconf automake libtool pkg-config gzip
      liburcu-dev libmnl-dev libyang2-dev libyang2-tools libcmocka-dev libreadline-dev
      python3 valgrind iproute2 util-linux procps bc clang libclang-rt-14-dev strace
      python3-prometheus-client  # the metrics test reads a scrape with Prometheus's parser
      jq  # an example in the docs pipes lcfibctl -j into jq; test_docs.sh runs that example
      time  # GNU time: test_stream.sh reads lcfibctl's peak memory with /usr/bin/time
      frr)  # zebra and dplane_fpm_nl for the FPM feed's tests
if [ "${1:-}" = "--bench" ]; then
	pkgs+=(libdpdk-dev librte-lpm23 librte-fib23 librte-mempool-ring23
	       gnuplot-nox)  # tests/bench/*plot.sh draw docs/*.svg
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q "${missing[@]}"

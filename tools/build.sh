#!/usr/bin/env bash
# Configures and builds lcfib in a build folder (default: build/).
# Usage: tools/build.sh [BUILDDIR] [configure options...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
cd "$top"
if ! { [ -x configure ] && [ configure -nt configure.ac ] && [ configure -nt Makefile.am ]; }; then
	autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
fi
mkdir -p "$dir"
cd "$dir"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
	"$top/configure" -q "$@"
fi
make -j"$(nproc)" >/dev/null

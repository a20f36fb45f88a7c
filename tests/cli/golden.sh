#!/bin/sh
# Golden output of lcfibctl: runs cases.txt against a fresh lcfibd (with
# routes.txt loaded) and compares every command's stdout, stderr and exit
# status with golden.txt. With --regen, rewrites golden.txt instead.
#
#   tests/cli/golden.sh [--regen]    (from the build directory)
#
# LCFIB_BUILDDIR (default .) holds daemon/lcfibd and cli/lcfibctl;
# LCFIB_SRCDIR (default: two levels above this script) holds yang/.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=${LCFIB_SRCDIR:-$(cd "$here/../.." && pwd)}
build=${LCFIB_BUILDDIR:-.}
tmp=$(mktemp -d)
sock=$tmp/lcfibd.sock
out=$tmp/golden.txt

cleanup() {
	[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

"$build/daemon/lcfibd" -f -s "$sock" -S "$tmp/state" -p "$tmp/pid" -y "$src/yang" \
	-d error 2>"$tmp/lcfibd.log" &
pid=$!
i=0
while [ ! -S "$sock" ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "lcfibd did not start:" >&2; cat "$tmp/lcfibd.log" >&2; exit 99; }
	sleep 0.05
done

ctl() {
	LCFIB_SOCKET=$sock LCFIB_YANG_DIR=$src/yang "$build/cli/lcfibctl" "$@"
}

ctl -q load "$here/routes.txt" transient

# Paths that differ from run to run read @TMP@ and @SRC@.
grep -v '^#' "$here/cases.txt" | while IFS= read -r line; do
	[ -n "$line" ] || continue
	cmd=$(printf '%s' "$line" | sed "s|@SRC@|$here|g")
	printf '$ lcfibctl %s\n' "$line"
	status=0
	eval "ctl $cmd" >"$tmp/stdout" 2>"$tmp/stderr" || status=$?
	cat "$tmp/stdout"
	sed 's/^/stderr: /' "$tmp/stderr"
	[ $status -eq 0 ] || printf '[exit %d]\n' $status
done | sed -e "s|$tmp|@TMP@|g" -e "s|$here|@SRC@|g" >"$out"

if [ "${1:-}" = --regen ]; then
	cp "$out" "$here/golden.txt"
	echo "regenerated $here/golden.txt"
	exit 0
fi
diff -u "$here/golden.txt" "$out"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# daemon/'s modules form layers: no module reaches, through the modules it
# calls, back to itself. A module is daemon/X.c with its one header
# daemon/X.h; the arrows are the #include "daemon/..." lines. So that the
# includes are the calls, every function a header declares must be defined
# in its own .c file, and no .c file may declare another's functions itself.
# Fails, naming what is wrong: a function declared in the wrong header, or a
# circle (printed in order), or an arrow that does not go down a row of
# the drawing in docs/DAEMON.md (section Layers).
set -u
SRCDIR=${LCFIB_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$SRCDIR/daemon" || {
	echo "FAIL: no daemon/ in $SRCDIR"
	exit 1
}
fail=0

# The non-static functions defined in each .c file: "NAME FILE".
defs=$(for c in *.c; do
	grep -E '^[a-z][^(;=]*[ *][a-z_][a-z0-9_]*\(' "$c" | grep -vE '^(static|extern|typedef)\b' |
		sed -E 's/^[^(]*[ *]([a-z_][a-z0-9_]*)\(.*/\1/' | sed "s/\$/ $c/"
done | sort -u)

# 1. A header declares only its module's functions.
for h in *.h; do
	m=${h%.h}
	for fn in $(grep -E '^[a-z][^(;=]*[ *][a-z_][a-z0-9_]*\(' "$h" |
		grep -vE '^(static|typedef|struct [a-z_]+ \{)' |
		sed -E 's/^[^(]*[ *]([a-z_][a-z0-9_]*)\(.*/\1/'); do
		where=$(awk -v f="$fn" '$1 == f { print $2 }' <<<"$defs")
		if [ -z "$where" ]; then
			echo "FAIL: daemon/$h declares $fn, defined in no daemon/*.c"
			fail=1
		elif [ "$where" != "$m.c" ]; then
			echo "FAIL: daemon/$h declares $fn, defined in daemon/$where (one header per module)"
			fail=1
		fi
	done
done

# 2. A .c file declares no other module's function (it includes its header).
for c in *.c; do
	for fn in $(grep -E '^[a-z][^(;=]*[ *][a-z_][a-z0-9_]*\(.*\);$' "$c" | grep -vE '^(static|typedef)\b' |
		sed -E 's/^[^(]*[ *]([a-z_][a-z0-9_]*)\(.*/\1/'); do
		where=$(awk -v f="$fn" '$1 == f { print $2 }' <<<"$defs")
		if [ -n "$where" ] && [ "$where" != "$c" ]; then
			echo "FAIL: daemon/$c declares $fn of daemon/$where itself: include its header"
			fail=1
		fi
	done
done

# 3. The arrows, and no circle among them.
arrows=$(for f in *.c *.h; do
	m=${f%.*}
	sed -nE 's/^#[[:space:]]*include[[:space:]]+"daemon\/([a-z_0-9]+)\.h".*/\1/p' "$f" |
		while read -r to; do
			[ "$to" != "$m" ] && echo "$m $to"
		done
done | sort -u)

# Depth-first search from each module; a grey module met again closes a circle.
circle=$(awk '
	{ out[$1] = out[$1] " " $2; mods[$1] = 1; mods[$2] = 1 }
	function visit(m,    n, i, k, next_) {
		state[m] = 1
		stack[++depth] = m
		n = split(out[m], next_, " ")
		for (i = 1; i <= n; i++) {
			if (found)
				break
			if (state[next_[i]] == 1) {
				for (k = 1; k <= depth && stack[k] != next_[i]; k++)
					;
				for (; k <= depth; k++)
					printf "%s -> ", stack[k]
				print next_[i]
				found = 1
			} else if (!state[next_[i]]) {
				visit(next_[i])
			}
		}
		depth--
		state[m] = 2
	}
	END { for (m in mods) if (!state[m] && !found) visit(m) }
' <<<"$arrows")
if [ -n "$circle" ]; then
	echo "FAIL: daemon/ includes in a circle: $circle"
	fail=1
fi

# 4. docs/DAEMON.md's drawing: every module in a row, every arrow down.
rows=$(sed -n '/^## Layers (`daemon\/`)/,/^## /p' "$SRCDIR/docs/DAEMON.md" |
	awk '$1 ~ /^[0-9]+$/ { for (i = 2; i <= NF && $i ~ /\.[ch]$/; i++) { sub(/\.[ch]$/, "", $i); print $i, $1 } }')
if [ -z "$rows" ]; then
	echo "FAIL: docs/DAEMON.md has no drawing of daemon/'s rows (section Layers)"
	fail=1
fi
for m in $(ls *.c *.h | sed 's/\..*//' | sort -u); do
	grep -q "^$m " <<<"$rows" || {
		echo "FAIL: daemon/$m is in no row of docs/DAEMON.md's drawing"
		fail=1
	}
done
while read -r from to; do
	rf=$(awk -v m="$from" '$1 == m { print $2 }' <<<"$rows")
	rt=$(awk -v m="$to" '$1 == m { print $2 }' <<<"$rows")
	if [ -n "$rf" ] && [ -n "$rt" ] && [ "$rf" -ge "$rt" ]; then
		echo "FAIL: $from (row $rf of docs/DAEMON.md) includes $to (row $rt): not a row below"
		fail=1
	fi
done <<<"$arrows"

if [ "$fail" = 0 ]; then
	echo "ok: daemon/ has $(wc -l <<<"$arrows") arrows among $(ls *.c *.h | sed 's/\..*//' | sort -u | wc -l) modules, and no circle"
	echo "1 passed, 0 failed"
else
	echo "0 passed, 1 failed"
fi
exit "$fail"

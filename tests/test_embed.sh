#!/usr/bin/env bash
# liblcfib as an embedder gets it: `make install DESTDIR=...`, then
#  - the installed headers are exactly the public ones, and each compiles
#    on its own with `pkg-config --cflags lcfib`;
#  - liblcfib.so exports exactly the symbols of lib/liblcfib.map, each
#    documented in docs/LIBRARY.md, and every function the installed
#    headers declare (none of the library's internals: err_set, mem_alloc,
#    ctl_send, ...);
#  - examples/embed.c, built against the installed library only, loads a
#    route file while a reader thread looks up, and answers right.
# Run by make check (LCFIB_SRCDIR, LCFIB_BUILDDIR, LCFIB_CC and
# LCFIB_SAN_FLAGS come from Makefile.am); exits 1 naming every failure.
set -u
set -o pipefail

SRCDIR=${LCFIB_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILDDIR=${LCFIB_BUILDDIR:-$SRCDIR/build}
CC=${LCFIB_CC:-cc}
SAN_FLAGS=${LCFIB_SAN_FLAGS:-}
VERSION_SCRIPT=${LCFIB_VERSION_SCRIPT:-yes}
# The public headers: a header added here is a decision, taken with its
# symbols in lib/liblcfib.map and its documentation in docs/LIBRARY.md.
PUBLIC_HEADERS="addr.h cache.h errbuf.h fib.h nh.h route.h routefile.h stats.h"
# Symbols an embedder must never get (a sample of each internal module).
INTERNAL_SYMBOLS="err_set err_prefix mem_alloc mem_new reclaim_retire trie4_edit trie4_new
	nh_table_new nh_put cache_gens_begin ifname_resolve ctl_send ctl_recv fpm_frame_next
	rtnl_decode_route trie_batch_min_leaves"

failed=0
fail()
{
	echo "FAIL: $*"
	failed=1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lcfib-embed.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# --------------------------------------------------------------- install
# A make of its own (not the jobserver of the make check that runs us).
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$BUILDDIR" install DESTDIR="$tmp/root" \
	>"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	echo "FAIL: make install DESTDIR=$tmp/root"
	exit 1
fi
pc=$(find "$tmp/root" -name lcfib.pc -path '*/pkgconfig/*' | head -n1)
so=$(find "$tmp/root" -name 'liblcfib.so' | head -n1)
[ -n "$pc" ] && [ -n "$so" ] || {
	echo "FAIL: no lcfib.pc or liblcfib.so under $tmp/root"
	exit 1
}
libdir=$(dirname "$so")
export PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_SYSROOT_DIR=$tmp/root
cflags=$(pkg-config --cflags lcfib) && libs=$(pkg-config --libs lcfib) || {
	echo "FAIL: pkg-config lcfib, from $pc"
	exit 1
}
incdir=$(pkg-config --variable=includedir lcfib)
incdir=$tmp/root${incdir#"$tmp/root"}
echo "installed: $(cd "$tmp/root" && find . -path '*include*' -type f | sort | tr '\n' ' ')"
echo "pkg-config: $cflags $libs"

# ------------------------------------------------------ installed headers
installed=$(cd "$incdir" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')
expected=$(tr ' ' '\n' <<<"$PUBLIC_HEADERS" | sort | sed 's|^|lcfib/|' | tr '\n' ' ')
[ "$installed" = "$expected" ] ||
	fail "installed headers under $incdir: '$installed', expected only '$expected'"
for h in $PUBLIC_HEADERS; do
	for std in gnu11 c11; do
		echo "#include <lcfib/$h>" >"$tmp/one.c"
		# shellcheck disable=SC2086 # flag lists
		$CC -std=$std -Wall -Wextra -Werror -Wstrict-prototypes -Wshadow -Wundef $cflags \
			-c "$tmp/one.c" -o "$tmp/one.o" >"$tmp/one.log" 2>&1 || {
			cat "$tmp/one.log"
			fail "<lcfib/$h> does not compile on its own (-std=$std $cflags)"
		}
	done
done

# ----------------------------------------------------------------- symbols
# The map's global names, comments and blank lines aside.
map_symbols=$(sed 's|/\*.*\*/||g' "$SRCDIR/lib/liblcfib.map" |
	awk '/global:/ { on = 1; next } /local:/ { on = 0 } on && /;/ { gsub(/[ \t;]/, ""); if ($0 != "") print }' |
	sort)
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ && $3 !~ /^LCFIB_/ { sub(/@.*/, "", $3); print $3 }' | sort)
echo "exported: $(wc -w <<<"$exported") symbols"
[ "$(wc -w <<<"$map_symbols")" -gt 50 ] || fail "no global symbols read from lib/liblcfib.map"
for s in $INTERNAL_SYMBOLS; do
	grep -qx "$s" <<<"$exported" && fail "liblcfib.so exports the internal $s"
done
if [ "$VERSION_SCRIPT" = yes ]; then
	extra=$(comm -23 <(echo "$exported") <(echo "$map_symbols") | tr '\n' ' ')
	missing=$(comm -13 <(echo "$exported") <(echo "$map_symbols") | tr '\n' ' ')
	[ -z "$extra" ] || fail "liblcfib.so exports what lib/liblcfib.map does not list: $extra"
	[ -z "$missing" ] || fail "lib/liblcfib.map lists what liblcfib.so does not define: $missing"
else
	echo "NOTE: the linker takes no version script; the exported set is not checked"
fi
for s in $map_symbols; do
	grep -qw -- "$s" "$SRCDIR/docs/LIBRARY.md" || fail "$s is exported but docs/LIBRARY.md does not name it"
done
# Every function an installed header declares (not inline) must be exported.
if $CC --version 2>/dev/null | grep -qi 'gcc\|free software'; then
	for h in $PUBLIC_HEADERS; do echo "#include <lcfib/$h>"; done >"$tmp/all.c"
	# shellcheck disable=SC2086
	$CC -std=gnu11 $cflags -aux-info "$tmp/aux" -c "$tmp/all.c" -o "$tmp/all.o" || fail "-aux-info"
	declared=$(grep -F "$incdir/" "$tmp/aux" | grep -E '^/\* [^ ]+:[0-9]+:NC \*/ extern ' |
		sed -E 's|^/\* [^ ]+ \*/ extern [^(]*[ *]([A-Za-z_][A-Za-z0-9_]*) \(.*|\1|' | sort -u)
	[ "$(wc -w <<<"$declared")" -gt 50 ] || fail "no declarations read from the installed headers"
	for s in $declared; do
		grep -qx "$s" <<<"$exported" ||
			fail "$s is declared in an installed header but liblcfib.so does not export it"
	done
fi

# ----------------------------------------------------------------- example
# Built against the installed library only: no -I or -L into the tree.
# shellcheck disable=SC2086
if ! $CC -std=gnu11 -Wall -Wextra -Werror -D_LGPL_SOURCE=1 $SAN_FLAGS $cflags \
	-o "$tmp/embed" "$SRCDIR/examples/embed.c" $libs -lpthread -Wl,-rpath,"$libdir" \
	>"$tmp/cc.log" 2>&1; then
	cat "$tmp/cc.log"
	fail "examples/embed.c does not build against the installed liblcfib"
	exit 1
fi
deps=$(ldd "$tmp/embed")
grep -q "$libdir/liblcfib.so" <<<"$deps" || fail "embed does not load the installed liblcfib.so: $deps"

# 20480 IPv4 /24s (a load in bulk mode, for the reader to run across), and a few more.
awk 'BEGIN { for (i = 0; i < 80; i++) for (j = 0; j < 256; j++) printf "route add 10.%d.%d.0/24 via 192.0.2.1 dev eth0\n", i, j }' >"$tmp/routes"
cat >>"$tmp/routes" <<'EOF'
# a comment
route add 10.0.0.0/8 via 192.0.2.9 metric 20
route add blackhole 198.51.100.0/24
192.0.2.0/24 dev eth1
route add 2001:db8::/32 via fe80::1 dev eth0
EOF
if ! "$tmp/embed" "$tmp/routes" 10.1.2.3 10.200.0.1 198.51.100.7 192.0.2.77 203.0.113.1 2001:db8::5 \
	>"$tmp/out" 2>"$tmp/err"; then
	cat "$tmp/out" "$tmp/err"
	fail "embed exited with $? on a good route file"
fi
cat "$tmp/out" "$tmp/err"
for want in \
	'loaded 20484 routes from 20485 lines' \
	'10.1.2.3: 10.1.2.0/24 via 192.0.2.1 dev [0-9]+ proto 3 metric 0' \
	'10.200.0.1: 10.0.0.0/8 via 192.0.2.9 proto 3 metric 20' \
	'198.51.100.7: blackhole 198.51.100.0/24 proto 3 metric 0' \
	'192.0.2.77: 192.0.2.0/24 dev [0-9]+ proto 3 metric 0' \
	'203.0.113.1: no route' \
	'2001:db8::5: 2001:db8::/32 via fe80::1 dev [0-9]+ proto 3 metric 1024' \
	'routes: 20483 IPv4, 1 IPv6'; do
	grep -Eqx -- "$want" "$tmp/out" || fail "embed's output has no line '$want'"
done
grep -q ', 0 cache mismatches' "$tmp/err" || fail "the cache and the trie disagreed"

# A bad line: the library's message names it, and nothing is loaded.
printf 'route add 10.0.0.0/8 via 192.0.2.1\nroute add 10.1.0.0/16 vai 192.0.2.1\n' >"$tmp/bad"
"$tmp/embed" "$tmp/bad" 10.1.2.3 >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out" "$tmp/err"
[ "$rc" = 1 ] || fail "embed exited with $rc on a bad route file, not 1"
grep -q "^$tmp/bad:2:[0-9]*: " "$tmp/err" || fail "no message naming $tmp/bad:2"
grep -qx '10.1.2.3: no route' "$tmp/out" || fail "a route of the bad file was loaded"

[ "$failed" = 0 ] && echo "PASS: liblcfib installed: public headers only, $(wc -w <<<"$exported") symbols, the example runs"
exit "$failed"

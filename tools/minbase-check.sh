#!/usr/bin/env bash
# Runs the README's test command on a bare Debian 12: a minbase chroot
# (Debian's required packages and apt, nothing else), so that a package the
# tests need but tools/deps.sh does not install shows as a failure here
# rather than on the CI box. As root; needs debootstrap (installed when
# missing) and a Debian mirror.
# Usage: tools/minbase-check.sh [CHROOT_DIR [TEST_COMMAND]]
#   CHROOT_DIR    made when missing, else reused with what earlier runs
#                 installed in it (quicker, less strict); by default a new
#                 one under /var/tmp, removed at the end
#   TEST_COMMAND  run in a clone of HEAD inside it (default: tools/run-tests.sh)
# Environment: MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-}
if [ -z "$root" ]; then
	root=$(mktemp -d /var/tmp/lcfib-minbase.XXXXXX)
	trap 'rm -rf --one-file-system "$root"' EXIT
fi
cmd=${2:-tools/run-tests.sh}
mirror=${MIRROR:-http://deb.debian.org/debian}

[ "$(id -u)" -eq 0 ] || { echo "minbase-check.sh: run as root" >&2; exit 1; }
if [ ! -x "$root/usr/bin/apt-get" ]; then
	command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
	debootstrap --variant=minbase bookworm "$root" "$mirror"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A clean clone of this checkout's HEAD, with the shared data beside it.
rm -rf "$root/work/main"
mkdir -p "$root/work"
git clone -q "$top" "$root/work/main"
[ ! -d "$top/../shared" ] || { rm -rf "$root/work/shared"; cp -r "$top/../shared" "$root/work/shared"; }

# In a mount namespace of its own, with the chroot's / a mount point (ip
# netns exec makes / a slave mount, which fails on a plain folder), then
# /proc, /sys, /dev and fresh /run and /tmp, as on a booted box.
# shellcheck disable=SC2016 # expanded by the inner shell
unshare -m bash -c '
	set -e
	root=$1
	mount --make-rprivate /
	mount --bind "$root" "$root"
	for m in proc sys dev; do mount --rbind "/$m" "$root/$m"; done
	mount -t tmpfs tmpfs "$root/run"
	mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
	exec chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		bash -c "cd /work/main && $2"' bash "$root" "$cmd"

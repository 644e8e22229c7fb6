#!/usr/bin/env bash
# Build host: the conformance test layer $OUT/tests/90-conformance.squashfs = the static unionconf (and a minimal
# getconf, which the busybox live root lacks) in /usr/lib/liveunion/ + the lower-layer fixtures in /srv/unionconf/,
# and two files with a 256-byte name (squashfs takes 256, no host filesystem does: they come from pseudo definitions);
# and $OUT/tests/50-middle.squashfs, a small layer stacked between 10-base and the test layer, so the suite runs on
# three squashfs lowers (overlayfs follows copy-up origins across them only if each has a UUID: kernel/patches/0003).
# Needs root (fixture owners, a device node and trusted.* xattrs are what copy-up must preserve).
# Skipped when the stamp records the same sources and SOURCE_DATE_EPOCH (as a build.sh stage is).
#   tests/conformance/mklayer.sh        (OUT, SOURCE_DATE_EPOCH from the environment)
set -euo pipefail
export LC_ALL=C
umask 022

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=${TOP:-$(cd "$HERE/../.." && pwd)}
OUT=${OUT:-$TOP/out}
# The same default as build.sh, so a test run by hand finds the layer the build's tests made.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git -C "$TOP" log -1 --format=%ct -- VERSION 2>/dev/null || true)
	SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600}
fi
# shellcheck source=rootfs/squashfs.sh
. "$TOP/rootfs/squashfs.sh"
LAYER=$OUT/tests/90-conformance.squashfs
MIDDLE=$OUT/tests/50-middle.squashfs
STAMP=$OUT/tests/90-conformance.stamp
# The 256-byte name: NAME_MAX checks read it through the union (lookups of long lower names must keep working).
LONG_NAME=$(printf 'L%.0s' $(seq 256))
# The second one is for rename and unlink (namemax.lower-256-remove), so that the first stays for the lookups.
LONG_NAME2=$(printf 'R%.0s' $(seq 256))

die() { printf 'mklayer: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (fixtures carry owners, a device node and trusted.* xattrs)"
command -v musl-gcc >/dev/null || die "musl-gcc missing: apt-get install -y musl-tools"
command -v mksquashfs >/dev/null || die "mksquashfs missing: apt-get install -y squashfs-tools"

# Scenarios running side by side (tests/run) ask for the layer at once: one makes it, the others wait and find it.
mkdir -p "$OUT/tests"
exec {lock}>"$OUT/tests/.conformance.lock"
flock "$lock" || die "cannot lock $OUT/tests/.conformance.lock"
key="$( (cd "$HERE" && sha256sum ./*.c ./*.h Makefile mklayer.sh) | sha256sum | cut -c1-16) $SOURCE_DATE_EPOCH"
if [ -f "$LAYER" ] && [ -f "$MIDDLE" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$key" ]; then
	printf 'mklayer: %s is up to date (%s)\n' "$LAYER" "$key"
	exit 0
fi
mkdir -p "$OUT/tests"
work=$(mktemp -d "$OUT/tests/conformance-layer.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$work/tree/usr/lib/liveunion
mkdir -p "$bin" "$work/tree/srv"
make -s -C "$HERE" OUTDIR="$bin" "$bin/unionconf" "$bin/getconf" || die "building unionconf failed"
"$bin/unionconf" --make-fixtures "$work/tree/srv/unionconf" --epoch "$SOURCE_DATE_EPOCH" || die "making the fixtures failed"
rm -f "$LAYER" "$MIDDLE" "$STAMP"
squashfs_make "$work/tree" "$LAYER" -comp xz -xattrs -p "srv/unionconf/$LONG_NAME f 644 0 0 echo long" \
	-p "srv/unionconf/$LONG_NAME2 f 644 0 0 echo long" || die "mksquashfs failed"
mkdir -p "$work/middle/etc"
printf 'a layer between 10-base and 90-conformance (tests/conformance/mklayer.sh)\n' >"$work/middle/etc/liveunion-middle"
squashfs_make "$work/middle" "$MIDDLE" -comp xz || die "mksquashfs of the middle layer failed"
printf '%s\n' "$key" >"$STAMP"
printf 'mklayer: %s (%s bytes)\n' "$LAYER" "$(stat -c %s "$LAYER")"

#!/usr/bin/env bash
# Build host: the conformance test layer $OUT/tests/90-conformance.squashfs = the static unionconf (and a minimal
# getconf, which the busybox live root lacks) in /usr/lib/liveunion/ + the lower-layer fixtures in /srv/unionconf/.
# Needs root (fixture owners, a device node and trusted.* xattrs are what copy-up must preserve).
#   tests/conformance/mklayer.sh        (OUT, SOURCE_DATE_EPOCH from the environment)
set -euo pipefail
export LC_ALL=C
umask 022

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=${TOP:-$(cd "$HERE/../.." && pwd)}
OUT=${OUT:-$TOP/out}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$TOP" log -1 --format=%ct 2>/dev/null || echo 1767225600)}
LAYER=$OUT/tests/90-conformance.squashfs

die() { printf 'mklayer: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (fixtures carry owners, a device node and trusted.* xattrs)"
command -v musl-gcc >/dev/null || die "musl-gcc missing: apt-get install -y musl-tools"
command -v mksquashfs >/dev/null || die "mksquashfs missing: apt-get install -y squashfs-tools"

mkdir -p "$OUT/tests"
work=$(mktemp -d "$OUT/tests/conformance-layer.XXXXXX")
trap 'rm -rf "$work"' EXIT
bin=$work/tree/usr/lib/liveunion
mkdir -p "$bin" "$work/tree/srv"
make -s -C "$HERE" OUTDIR="$bin" "$bin/unionconf" "$bin/getconf" || die "building unionconf failed"
"$bin/unionconf" --make-fixtures "$work/tree/srv/unionconf" --epoch "$SOURCE_DATE_EPOCH" || die "making the fixtures failed"
rm -f "$LAYER"
mksquashfs "$work/tree" "$LAYER.tmp" -noappend -quiet -no-progress -comp xz -xattrs \
	-mkfs-time "$SOURCE_DATE_EPOCH" -all-time "$SOURCE_DATE_EPOCH" >/dev/null || die "mksquashfs failed"
mv "$LAYER.tmp" "$LAYER"
printf 'mklayer: %s (%s bytes)\n' "$LAYER" "$(stat -c %s "$LAYER")"

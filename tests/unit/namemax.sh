#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# Host test (root, private mount namespace): NAME_MAX of a squashfs + tmpfs overlay on the build host's kernel, which
# lacks kernel/patches/0001 and 0002. It shows the bugs they fix: getconf NAME_MAX says 256 (squashfs' limit) while a
# 256-byte name cannot be created (tmpfs takes 255), and a missing 256-byte name is ENOENT, not ENAMETOOLONG. The
# patched kernel's side is tests/qemu/unionfs-namemax.sh, which fails on such a kernel. A host kernel without the bugs
# has a fix of its own: this test then fails, since what docs/build.md says of the stock kernel is no longer true. A
# tmpfs-over-tmpfs overlay beside it must report 255 and ENAMETOOLONG, so the squashfs layer makes the difference.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
needs_root loop mount, overlay
private_mounts "$@"

work=$(mktemp -d "${TMPDIR:-/tmp}/namemax.XXXXXX")
cleanup() {
	local m
	for m in "$work/c/m" "$work/c" "$work/m" "$work/t" "$work/l"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	rm -rf "$work"
}
at_exit cleanup

n255=$(printf 'n%.0s' $(seq 255))
long=$(printf 'L%.0s' $(seq 256)) # squashfs takes 256 bytes; only a pseudo definition can make it on the host
mkdir -p "$work/src" "$work/l" "$work/t" "$work/m"
check layer-with-256-byte-name mksquashfs "$work/src" "$work/l.squashfs" -quiet -no-progress -noappend \
	-p "$long f 644 0 0 echo long"
stack() { # like the init's: squashfs (loop, ro) under a tmpfs upper, xino=on
	mount -o loop,ro "$work/l.squashfs" "$work/l" && mount -t tmpfs -o size=16m tmpfs "$work/t" &&
		mkdir "$work/t/u" "$work/t/w" &&
		mount -t overlay overlay -o "lowerdir=$work/l,upperdir=$work/t/u,workdir=$work/t/w,xino=on" "$work/m"
}
control_stack() { # the same with a tmpfs lower: every layer takes 255
	mkdir -p "$work/c" && mount -t tmpfs -o size=16m tmpfs "$work/c" &&
		mkdir "$work/c/l" "$work/c/u" "$work/c/w" "$work/c/m" &&
		mount -t overlay overlay -o "lowerdir=$work/c/l,upperdir=$work/c/u,workdir=$work/c/w,xino=on" "$work/c/m"
}
require mount stack
require control-mount control_stack

lower=$(getconf NAME_MAX "$work/l") upper=$(getconf NAME_MAX "$work/t/u") union=$(getconf NAME_MAX "$work/m")
echo "# kernel $(uname -r): getconf NAME_MAX says $lower on the squashfs, $upper on the tmpfs, $union on the overlay"
check lower-squashfs-256 test "$lower" = 256
check upper-tmpfs-255 test "$upper" = 255
check create-255-on-union touch "$work/m/$n255"
out=$(touch "$work/m/${n255}n" 2>&1) && rc=0 || rc=$?
check create-256-on-union-fails-ENAMETOOLONG test "$rc" -ne 0 -a -z "${out##*File name too long*}"
check lower-256-byte-name-reads-through-union test "$(cat "$work/m/$long")" = long
# The bug: the overlay reports its lower layer's 256 although it creates no name longer than 255.
[ "$union" = 255 ] && echo "# this host kernel reports 255: it has a fix (kernel/patches/0001 or its own); docs/build.md says otherwise"
check union-reports-squashfs-256-unpatched test "$union" = 256
check tmpfs-only-union-reports-255 test "$(getconf NAME_MAX "$work/c/m")" = 255
# kernel/patches/0002: a 256-byte name that exists in no layer. ext4 or tmpfs say ENAMETOOLONG for it; the overlay
# over squashfs looks it up in the lower (which takes 256) and says ENOENT.
missing_says() { # DIR: the error chmod prints for a missing 256-byte name under DIR
	chmod 600 "$1/$(printf 'M%.0s' $(seq 256))" 2>&1 && return 1
	return 0
}
out=$(missing_says "$work/m") || out='(chmod succeeded)'
echo "# chmod of a missing 256-byte name on the overlay: $out"
check missing-256-ENOENT-unpatched test -z "${out##*No such file or directory*}"
out=$(missing_says "$work/c/m") || out='(chmod succeeded)'
check tmpfs-only-missing-256-ENAMETOOLONG test -z "${out##*File name too long*}"
finish

#!/usr/bin/env bash
# Host test (root, private mount namespace): NAME_MAX of a squashfs + tmpfs overlay on the build host's kernel, which
# lacks kernel/patches/0001 and 0002. It shows the bugs they fix: getconf NAME_MAX says 256 (squashfs' limit) while a
# 256-byte name cannot be created (tmpfs takes 255), and a missing 256-byte name is ENOENT, not ENAMETOOLONG. The patched kernel's side is tests/qemu/unionfs-namemax.sh,
# which fails on such a kernel. Here both outcomes pass, named: this kernel's symptom, or a fixed host kernel.
set -euo pipefail
export LC_ALL=C
pass=0 failn=0

[ "$(id -u)" -eq 0 ] || { echo "namemax: needs root (loop mount, overlay)"; echo "0 passed, 1 failed"; exit 1; }
if [ -z "${NAMEMAX_IN_NS:-}" ]; then
	NAMEMAX_IN_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi

check() { # NAME COMMAND...
	local n=$1
	shift
	if "$@"; then echo "ok $n"; pass=$((pass + 1)); else echo "FAIL $n"; failn=$((failn + 1)); fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/namemax.XXXXXX")
cleanup() {
	local m
	for m in "$work/m" "$work/t" "$work/l"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	rm -rf "$work"
}
trap cleanup EXIT

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
if ! stack; then
	echo "FAIL mount"
	echo "$pass passed, 1 failed"
	exit 1
fi

lower=$(getconf NAME_MAX "$work/l") upper=$(getconf NAME_MAX "$work/t/u") union=$(getconf NAME_MAX "$work/m")
echo "# kernel $(uname -r): getconf NAME_MAX says $lower on the squashfs, $upper on the tmpfs, $union on the overlay"
check lower-squashfs-256 test "$lower" = 256
check upper-tmpfs-255 test "$upper" = 255
check create-255-on-union touch "$work/m/$n255"
out=$(touch "$work/m/${n255}n" 2>&1) && rc=0 || rc=$?
check create-256-on-union-fails-ENAMETOOLONG test "$rc" -ne 0 -a -z "${out##*File name too long*}"
check lower-256-byte-name-reads-through-union test "$(cat "$work/m/$long")" = long
case "$union" in
255) echo "# the overlay reports 255: this host kernel has the fix (kernel/patches/0001 or upstream)"
	check union-reports-255 true ;;
256) echo "# union-reports-255 fails on this kernel: the overlay reports 256 but the longest name that can be created is 255 (the bug kernel/patches/0001 fixes)"
	check unpatched-symptom-shown true ;;
*) check "union-reports-255-or-256 (got $union)" false ;;
esac
# kernel/patches/0002: a 256-byte name that exists in no layer; ext4 or tmpfs say ENAMETOOLONG for it.
missing=$work/m/$(printf 'M%.0s' $(seq 256))
out=$(chmod 600 "$missing" 2>&1) && rc=0 || rc=$?
check chmod-of-missing-256-fails test "$rc" -ne 0
case "$out" in
*'File name too long'*) echo "# chmod of a missing 256-byte name: ENAMETOOLONG, this host kernel has the fix (kernel/patches/0002)"
	check missing-256-ENAMETOOLONG true ;;
*'No such file or directory'*) echo "# chmod of a missing 256-byte name says ENOENT on this kernel, not ENAMETOOLONG (the bug kernel/patches/0002 fixes)"
	check unpatched-missing-256-symptom-shown true ;;
*) check "missing-256-ENAMETOOLONG-or-ENOENT (got: $out)" false ;;
esac
echo "$pass passed, $failn failed"
[ "$failn" -eq 0 ]

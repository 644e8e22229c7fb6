#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# Host test (root, private mount namespace): the conformance suite on a test overlay of the 90-conformance layer,
# with the init's options for a persistence store (xino=on) and for a tmpfs upper (xino=on,index=on,redirect_dir=on)
# over one lower layer, and the tmpfs options over two (as the live root with more than 10-base), which show what
# each overlayfs feature changes on the build host's kernel. namemax.reported and namemax.missing-256 are left to
# tests/unit/namemax.sh: the host kernel lacks kernel/patches/0001 and 0002 (the guest runs them: unionfs-*.sh).
# Without kernel/patches/0003 squashfs has no UUID, so with two lowers overlayfs drops index and origins here.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
needs_root loop mounts, overlay
private_mounts "$@"
LAYER=$OUT/tests/90-conformance.squashfs

work=$(mktemp -d "${TMPDIR:-/tmp}/conformance-host.XXXXXX")
mkdir "$work/empty"
cleanup() {
	local m
	for m in "$work"/*/m "$work"/*/t "$work"/*/l "$work"/*/l2; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	rm -rf "$work"
}
at_exit cleanup

check build-layer "$TOP/tests/conformance/mklayer.sh"

# mount_union NAME OPTIONS [LOWER2]: squashfs (loop, ro) [over a second squashfs] + tmpfs upper + overlay, as the init stacks
mount_union() {
	local d=$work/$1 lower=$work/$1/l
	mkdir -p "$d/l" "$d/t" "$d/m"
	if [ -n "${3:-}" ]; then
		mkdir -p "$d/l2"
		mount -o loop,ro "$3" "$d/l2" || return 1
		lower=$d/l:$d/l2
	fi
	mount -o loop,ro "$LAYER" "$d/l" && mount -t tmpfs -o size=256m tmpfs "$d/t" && mkdir "$d/t/u" "$d/t/w" &&
		mount -t overlay overlay -o "lowerdir=$lower,upperdir=$d/t/u,workdir=$d/t/w,$2" "$d/m"
}

unionconf() { # NAME ARGS...: run the suite from the layer itself (the binary the guest runs)
	local d=$work/$1
	shift
	"$d/l/usr/lib/liveunion/unionconf" --root "$d/m" --lower "$d/l/srv/unionconf" --upper "$d/t/u/srv/unionconf" "$@"
}

summary_ok() { grep -qx '[0-9]* passed, 0 failed' "$1"; }
has_line() { grep -q -- "$2" "$1"; }

variant() { # NAME OPTIONS [LOWER2]: the whole suite but namemax.reported
	local name=$1 opts=$2 log=$work/$1.log rc d=$work/$1
	local failed=$T_FAIL
	check "$name-mount" mount_union "$name" "$opts" "${3:-}"
	[ "$T_FAIL" -eq "$failed" ] || return 0
	unionconf "$name" --skip namemax.reported,namemax.missing-256 -v >"$log" 2>&1 && rc=0 || rc=$?
	sed "s/^/# $name: /" "$log" | grep -v ": ok " || true
	check "$name-suite-exit-0" test "$rc" -eq 0
	check "$name-suite-0-failed" summary_ok "$log"
	check "$name-suite-ran-checks" grep -q '^ok copyup.fchmod-rdonly.lower$' "$log"
	umount "$d/m" && umount "$d/t" && umount "$d/l"
	if [ -n "${3:-}" ]; then umount "$d/l2"; fi
}

# A persistence store's options over one lower layer: no index, so hard links split on copy-up and directory
# rename(2) gives EXDEV; copy-up origins are followed, so st_ino survives eviction and link() keeps it.
variant store xino=on
check store-hardlinks-split-without-index has_line "$work/store.log" '^known-limit links.hardlink-copyup: .*index is off'
check store-dir-rename-exdev has_line "$work/store.log" '^known-limit rename.dir-lower: .*EXDEV'
check store-mv-of-lower-dir-works has_line "$work/store.log" '^ok rename.dir-mv$'
check store-one-lower-link-keeps-ino has_line "$work/store.log" '^ok copyup.link.lower$'
check store-one-lower-ino-after-eviction has_line "$work/store.log" '^ok stdev.copyup-ino-after-eviction$'
check store-lower-256-byte-name-reads has_line "$work/store.log" '^ok namemax.lower-256-lookup$'
# The tmpfs upper's options (the live CD): index keeps hard links one inode, redirect_dir makes rename(2) of lower
# and merged directories work, also across parents and once the dentries left the cache.
variant init xino=on,index=on,redirect_dir=on
check init-hardlinks-one-inode has_line "$work/init.log" '^ok links.hardlink-copyup$'
check init-dir-rename-works has_line "$work/init.log" '^ok rename.dir-lower$'
check init-dir-rename-across-parents has_line "$work/init.log" '^ok rename.dir-lower-across$'
check init-merged-dir-rename has_line "$work/init.log" '^ok rename.dir-merged$'
check init-merged-dir-rename-across has_line "$work/init.log" '^ok rename.dir-merged-across$'
check init-lower-256-remove-named has_line "$work/init.log" '^\(ok\|known-limit\) namemax.lower-256-remove'
check mmap-staleness-reported has_line "$work/init.log" '^\(ok\|known-limit\) mmap.shared-lower-then-write'
# Two squashfs lowers: without a UUID on either (no kernel/patches/0003 on the host) overlayfs stops following
# origins and turns index off by itself; the guest (unionfs-conformance.sh, three layers) shows them kept.
check second-layer mksquashfs "$work/empty" "$work/20-second.squashfs" -quiet -no-progress -noappend
variant two-lowers xino=on,index=on,redirect_dir=on "$work/20-second.squashfs"
if grep -q '^known-limit copyup.link.lower' "$work/two-lowers.log"; then
	echo "# two squashfs lowers without a UUID on this host kernel: origins and index dropped, as expected unpatched"
	check two-lowers-link-splits-ino has_line "$work/two-lowers.log" '^known-limit copyup.link.lower: .*without a UUID'
	check two-lowers-ino-after-eviction has_line "$work/two-lowers.log" \
		'^known-limit stdev.copyup-ino-after-eviction: .*without a UUID'
else
	echo "# two squashfs lowers keep origins: this host kernel gives squashfs a UUID (kernel/patches/0003 or upstream)"
	check two-lowers-link-keeps-ino has_line "$work/two-lowers.log" '^ok copyup.link.lower$'
	check two-lowers-ino-after-eviction has_line "$work/two-lowers.log" '^ok stdev.copyup-ino-after-eviction$'
fi

# The same sources under ASan/UBSan (dynamic, host only): the suite must run clean with them too.
san() {
	make -s -C "$TOP/tests/conformance" -B CC=gcc SAN=1 OUTDIR="$work" "$work/unionconf" || return 1
	mount_union san xino=on,index=on,redirect_dir=on || return 1
	local d=$work/san rc=0
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 "$work/unionconf" --root "$d/m" --lower "$d/l/srv/unionconf" \
		--upper "$d/t/u/srv/unionconf" --skip namemax.reported,namemax.missing-256 >"$work/san.log" 2>&1 || rc=1
	umount "$d/m" && umount "$d/t" && umount "$d/l" || rc=1
	grep -q 'Sanitizer' "$work/san.log" && { grep -A5 Sanitizer "$work/san.log" | head -20; rc=1; }
	[ "$rc" -eq 0 ] && summary_ok "$work/san.log"
}
check suite-clean-under-asan-ubsan san

check loops-detached test -z "$(losetup -j "$LAYER" 2>/dev/null)"
finish

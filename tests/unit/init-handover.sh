#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# Host test of the init's hand-over (handover.c) in a fake initramfs: a tmpfs root holding the driver, with
# /run /dev /proc /sys mounted and a new root on /newroot, chrooted into. Both sides of the point of no
# return: a missing init is refused before anything is torn down (initramfs and mounts intact, the failure
# comes back for the rescue shell); an init that is found but cannot be executed fails after the initramfs
# is deleted, so it is reported and the process exits (as PID 1: a kernel panic), never returning to a
# rescue shell that is gone; a good init runs. Needs root; runs in a private mount namespace.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
needs_root mounts, chroot
private_mounts "$@"

B=$OUT/tests/init-handover
SRC=$TOP/initramfs/init
tmp=$(mktemp -d /tmp/init-handover.XXXXXX)
ir=$tmp/initramfs
view=$tmp/view

teardown() {
	local m
	for m in $(findmnt -rn -o TARGET | grep "^$tmp/" | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
}
at_exit "teardown; rm -rf '$tmp'"

mkdir -p "$B"
# static: the driver runs chrooted into a root that holds nothing else
read -ra LIVE_CFLAGS <<<"$(make -s -C "$SRC" cflags)" # the init's own flags (its Makefile)
gcc "${LIVE_CFLAGS[@]}" -static -I"$SRC" -o "$B/init-handover-driver" \
	"$TOP/tests/unit/init-handover-driver.c" "$SRC/handover.c" "$SRC/log.c" "$SRC/util.c" "$SRC/text.c"

# A fresh fake initramfs; $view shows its own contents (a plain bind: no submounts) after the hand-over.
fake_initramfs() {
	local d
	mkdir -p "$ir" "$view"
	mount -t tmpfs -o size=64m initramfs "$ir"
	cp "$B/init-handover-driver" "$ir/driver"
	for d in run dev proc sys; do
		mkdir "$ir/$d"
		mount -t tmpfs "$d" "$ir/$d"
		: >"$ir/$d/in-$d"
	done
	mkdir "$ir/newroot"
	mount -t tmpfs newroot "$ir/newroot"
	mkdir "$ir/newroot/sbin"
	cp "$B/init-handover-driver" "$ir/newroot/sbin/init"
	printf 'not a program\n' >"$ir/newroot/sbin/garbage"
	chmod 0755 "$ir/newroot/sbin/garbage"
	mount --bind "$ir" "$view"
}
hand_over() { # hand_over INIT: the driver's exit status in $rc, its output in $tmp/out
	rc=0
	chroot "$ir" /driver "$1" >"$tmp/out" 2>&1 || rc=$?
}

# 1. Before the point of no return: a missing init is found missing first; nothing is torn down.
fake_initramfs
hand_over /sbin/missing
check "missing init: handover returns (the rescue shell can run)" test "$rc" = 3
check "missing init: named" grep -q 'handover returned -1: find /sbin/missing in the new root /newroot: No such file or directory' "$tmp/out"
check "missing init: the initramfs is intact" test -x "$view/driver"
for d in run dev proc sys; do
	check "missing init: /$d still mounted where it was" test -e "$ir/$d/in-$d"
done
teardown

# 2. Past the point of no return: an init that is there but cannot be executed.
fake_initramfs
hand_over /sbin/garbage
check "failed exec: the process exits 1 (PID 1: kernel panic)" test "$rc" = 1
check "failed exec: reported with its errno" grep -q 'exec /sbin/garbage in the new root: Exec format error' "$tmp/out"
check "failed exec: says why there is no shell" grep -q 'no rescue shell: PID 1 exits and the kernel panics' "$tmp/out"
check "failed exec: never returns to the caller" no_line 'handover returned' "$tmp/out"
check "failed exec: the initramfs was deleted before" test "$(ls -A "$view")" = newroot
teardown

# 3. A good init runs in the new root, with the mounts moved into it.
fake_initramfs
hand_over /sbin/init
check "good init: runs" grep -qx 'the new init runs as /sbin/init' "$tmp/out"
check "good init: exit status is the new init's" test "$rc" = 0
check "good init: /dev moved into the new root" test -e "$ir/dev/in-dev"
check "good init: the initramfs was deleted" test "$(ls -A "$view")" = newroot
teardown

finish

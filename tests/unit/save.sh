#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# Host test of `liveunion save`: an upper with a new, a modified and a whited-out file and an opaque
# directory becomes NN-NAME.squashfs; stacked over its base layer by the host's overlayfs it shows the
# same changes; numbering, the default destination (a store at /run/live/store) and every refusal, with
# nothing left behind when it fails. Needs root; runs in a private mount namespace (with its own /run)
# and detaches every loop device it attached.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
needs_root mounts, loop devices, trusted.* xattrs, device nodes
private_mounts "$@"

tmp=$(mktemp -d /tmp/save-test.XXXXXX)
LU=$OUT/liveunion/liveunion

cleanup() {
	local m l
	for m in $(findmnt -rn -o TARGET | grep -E "^($tmp/|/run)" | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
	for l in $(losetup -n -O NAME,BACK-FILE | awk -v t="$tmp/" 'index($2, t) == 1 {print $1}'); do
		losetup -d "$l" || true
	done
	rm -rf "$tmp"
}
at_exit cleanup

make -s -C "$TOP/liveunion" OUT="$OUT" >/dev/null
# /run of this namespace only: no store, no /run/live, whatever the build host has
mount -t tmpfs tmpfs /run

# save NAME ARGS...: runs liveunion save, output in $out, status in $rc
save() {
	rc=0
	out=$("$LU" save "$@" 2>&1) || rc=$?
}
said() { grep -Eq -- "$1" <<<"$out"; }
empty_dir() { [ -z "$(ls -A "$1")" ]; }

# The base layer and an upper as overlayfs leaves it after: a new file, a modified file, a deleted file
# (0/0 character device) and a directory replaced by a new one (opaque).
mkdir -p "$tmp/base/etc" "$tmp/base/srv/data" "$tmp/up/etc" "$tmp/up/srv/data" "$tmp/to"
echo keep >"$tmp/base/etc/keep"
echo old >"$tmp/base/etc/mod"
echo doomed >"$tmp/base/etc/gone"
echo old-data >"$tmp/base/srv/data/old"
mksquashfs "$tmp/base" "$tmp/10-base.squashfs" -noappend -quiet -all-root >/dev/null
echo fresh >"$tmp/up/etc/new"
echo new >"$tmp/up/etc/mod"
mknod "$tmp/up/etc/gone" c 0 0
setfattr -n trusted.overlay.opaque -v y "$tmp/up/srv/data"
echo new-data >"$tmp/up/srv/data/fresh"

save mine --upper "$tmp/up" --to "$tmp/to"
check "save exits 0 ($rc)" [ "$rc" -eq 0 ]
check "it wrote 20-mine.squashfs (the first number above 10)" test -s "$tmp/to/20-mine.squashfs"
check "the message names the file and its size" said "^saved 20-mine: $tmp/to/20-mine.squashfs \([0-9]+ bytes"
check "the message says how to use a --to file" said "liveunion-v1/layers/ of a persistence store" &&
	said "build.sh iso-with OUTPUT.iso 20-mine.squashfs"
check "no temporary file left" [ "$(ls -A "$tmp/to")" = 20-mine.squashfs ]
check "the whiteout is a 0/0 character device in the layer" \
	sh -c "unsquashfs -lls '$tmp/to/20-mine.squashfs' | grep -Eq '^c.* 0, +0 .*/etc/gone$'"

# Stacked: the saved layer over the base, as the init does it
mkdir -p "$tmp/l/base" "$tmp/l/mine" "$tmp/ov/u" "$tmp/ov/w" "$tmp/m"
mount -o loop,ro -t squashfs "$tmp/10-base.squashfs" "$tmp/l/base"
mount -o loop,ro -t squashfs "$tmp/to/20-mine.squashfs" "$tmp/l/mine"
mount -t overlay overlay -o "lowerdir=$tmp/l/mine:$tmp/l/base,upperdir=$tmp/ov/u,workdir=$tmp/ov/w" "$tmp/m"
check "the base alone has the file that was deleted" test -e "$tmp/l/base/etc/gone"
check "stacked: the deleted file is gone" test ! -e "$tmp/m/etc/gone"
check "stacked: the new file is there" [ "$(cat "$tmp/m/etc/new")" = fresh ]
check "stacked: the modified file has the new content" [ "$(cat "$tmp/m/etc/mod")" = new ]
check "stacked: an untouched base file is still there" [ "$(cat "$tmp/m/etc/keep")" = keep ]
check "the base alone has the replaced directory's old file" test -e "$tmp/l/base/srv/data/old"
check "stacked: the opaque directory hides the base's entries" [ "$(ls "$tmp/m/srv/data")" = fresh ]
check "the layer keeps trusted.overlay.opaque" \
	[ "$(getfattr --only-values -n trusted.overlay.opaque "$tmp/l/mine/srv/data" 2>/dev/null)" = y ]
umount "$tmp/m" "$tmp/l/mine" "$tmp/l/base"

# Numbers: one above the highest in the destination (and in /run/live/layers, below)
: >"$tmp/to/35-other.squashfs"
save two --upper "$tmp/up" --to "$tmp/to"
check "next number is one above the destination's highest (36)" test -s "$tmp/to/36-two.squashfs"

# Refusals, each with its message, nothing written
sum=$(sha256sum <"$tmp/to/20-mine.squashfs")
save mine --upper "$tmp/up" --to "$tmp/to"
check "an existing name is refused" [ "$rc" -eq 1 ]
check "... saying so" said "a layer called mine already exists: $tmp/to/20-mine.squashfs"
check "... and the existing layer is untouched" [ "$(sha256sum <"$tmp/to/20-mine.squashfs")" = "$sum" ]
check "... no 37- file" test ! -e "$tmp/to/37-mine.squashfs"
for n in Bad 'a/b' '.x' "$(printf 'n%.0s' {1..41})" 'ä'; do
	save "$n" --upper "$tmp/up" --to "$tmp/to"
	check "bad name '$n' refused (exit 2)" [ "$rc" -eq 2 ]
	check "... naming the rule" said "is not a layer name: use 1 to 40 of a-z, 0-9, _ and -"
done
save "$(printf 'n%.0s' {1..40})" --upper "$tmp/up" --to "$tmp/to"
check "a 40-character name is fine" [ "$rc" -eq 0 ]
save nostore --upper "$tmp/up"
check "no store and no --to: refused" [ "$rc" -eq 1 ]
check "... naming what was looked for and --to" said "no persistence store is mounted at /run/live/store" &&
	said "looked for /run/live/store/liveunion-v1/layers/" && said "Use --to DIR"
check "nothing new in the destination" [ "$(find "$tmp/to" | wc -l)" -eq 5 ]
: >"$tmp/to/99-last.squashfs"
save late --upper "$tmp/up" --to "$tmp/to"
check "beyond 99: refused" [ "$rc" -eq 1 ] && said "no layer number left"
check "... nothing written" [ "$(find "$tmp/to" -name '*late*' | wc -l)" -eq 0 ]
save gone --upper "$tmp/nothere" --to "$tmp/to"
check "a missing upper is refused, named" [ "$rc" -eq 1 ] && said "the upper $tmp/nothere: No such file"

# Failures while writing leave nothing behind
mkdir -p "$tmp/ro" "$tmp/full"
mount -t tmpfs -o ro,size=1m tmpfs "$tmp/ro"
save rodest --upper "$tmp/up" --to "$tmp/ro"
check "a read-only destination fails" [ "$rc" -eq 1 ] && said "create $tmp/ro/\.[0-9]+-rodest\.squashfs\.tmp-[0-9]+: Read-only file system"
check "... nothing in it" empty_dir "$tmp/ro"
mount -t tmpfs -o size=64k tmpfs "$tmp/full"
head -c 2000000 /dev/urandom >"$tmp/up/big"
save full --upper "$tmp/up" --to "$tmp/full"
check "a full destination fails" [ "$rc" -eq 1 ] && said "mksquashfs .* failed" && said "nothing saved"
check "... and the temporary file is removed" empty_dir "$tmp/full"
rm "$tmp/up/big"

# The default destination: a store mounted read-write at /run/live/store; layers of the running stack count
mkdir -p /run/live/store /run/live/layers/10-base /run/live/layers/42-desk
mount -t tmpfs -o ro,size=4m tmpfs /run/live/store
save rostore --upper "$tmp/up"
check "a read-only store is refused" [ "$rc" -eq 1 ] && said "mounted read-only" && said "Use --to DIR"
mount -o remount,rw /run/live/store
mkdir /run/live/store/liveunion-v1
save instore --upper "$tmp/up"
check "into the store by default" [ "$rc" -eq 0 ] && test -s /run/live/store/liveunion-v1/layers/43-instore.squashfs
check "... numbered above the running stack (43)" said "^saved 43-instore: /run/live/store/liveunion-v1/layers/43-instore.squashfs"
check "... saying which boot picks it up" said "next boot from this stick stacks it on top of the medium's layers as 43-instore" &&
	said "live.layers=-instore leaves it out"
save desk --upper "$tmp/up"
check "a name of the running stack is refused" [ "$rc" -eq 1 ] && said "a layer called desk already exists: /run/live/layers/42-desk"

finish

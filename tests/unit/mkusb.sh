#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# summary: iso/mkusb.sh stick images (partition, FAT32 and exFAT image file) keep the ISO's bytes and add partition 3; --device refuses what is not a free whole disk and writes nothing unconfirmed; an A/B update takes a glob in the new ISO's live.verify= as a name
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
ISO=$OUT/liveunion.iso
require "iso-built ($ISO; run ./build.sh first)" test -f "$ISO"
W=$(mktemp -d "${TMPDIR:-/tmp}/mkusb-test.XXXXXX")
loop=''
# shellcheck disable=SC2016 # $loop is set later: read at exit
at_exit '[ -z "$loop" ] || losetup -d "$loop"; rm -rf "$W"'
mk() { bash "$TOP/iso/mkusb.sh" --iso "$ISO" "$@" 2>"$W/err"; }
iso_kept() { cmp -s -n $(($(stat -c %s "$ISO") - 512)) -i 512 "$ISO" "$1"; }
p3() { sfdisk -d "$1" 2>/dev/null | grep -q "^$1""3 : .*type=$2"; }
label3() { # IMAGE TAG: what blkid says of partition 3
	part_read "$1" 3 "$W/p3" && blkid -o value -s "$2" "$W/p3"
}

check part-image mk -o "$W/part.img" --persist-size 16M
check part-iso-bytes-kept iso_kept "$W/part.img"
check part-type-linux p3 "$W/part.img" 83
fact part-ext4-labelled liveunion-rw label3 "$W/part.img" LABEL
check file-image mk -o "$W/file.img" --persist-size 16M --file
check file-iso-bytes-kept iso_kept "$W/file.img"
check file-type-fat32 p3 "$W/file.img" c
label3 "$W/file.img" TYPE >/dev/null
check file-holds-image sh -c "mdir -i '$W/p3' ::liveunion-rw.img >/dev/null"
check exfat-image mk -o "$W/exfat.img" --persist-size 16M --file --exfat
check exfat-type p3 "$W/exfat.img" 7
fact exfat-is-exfat exfat label3 "$W/exfat.img" TYPE
check bad-size-refused sh -c "! bash '$TOP/iso/mkusb.sh' --iso '$ISO' -o '$W/x.img' --persist-size lots 2>'$W/err' && grep -q 'persist-size' '$W/err'"
check exfat-needs-file sh -c "! bash '$TOP/iso/mkusb.sh' --iso '$ISO' -o '$W/x.img' --exfat 2>'$W/err' && grep -q -- '--exfat goes with --file' '$W/err'"

# --device: never a character device, never the disk of this system (mounted), never unconfirmed
check device-not-block sh -c "! bash '$TOP/iso/mkusb.sh' --iso '$ISO' -o '$W/d.img' --device /dev/null 2>'$W/err' && grep -q 'not a block device' '$W/err'"
root=$(findmnt -nvo SOURCE /)
rootdisk=/dev/$(lsblk -ndo PKNAME "$root" 2>/dev/null)
[ "$rootdisk" = /dev/ ] && rootdisk=$root
check device-system-disk-refused sh -c "! bash '$TOP/iso/mkusb.sh' --iso '$ISO' -o '$W/d.img' --device '$rootdisk' 2>'$W/err' && grep -Eq 'mounted|holds /' '$W/err'"
truncate -s 64M "$W/target"
loop=$(losetup -f --show "$W/target")
before=$(sha256sum <"$W/target")
check device-too-small-refused sh -c "! bash '$TOP/iso/mkusb.sh' --iso '$ISO' -o '$W/d.img' --persist-size 128M --device '$loop' --yes 2>'$W/err' && grep -q 'smaller than the image' '$W/err'"
check device-unconfirmed-writes-nothing sh -c "! setsid bash '$TOP/iso/mkusb.sh' --iso '$ISO' -o '$W/d.img' --persist-size 16M --device '$loop' </dev/null >/dev/null 2>'$W/err'"
check device-untouched test "$before" = "$(sha256sum <"$W/target")"
check device-confirmed-written bash "$TOP/iso/mkusb.sh" --iso "$ISO" -o "$W/d.img" --persist-size 16M --device "$loop" --yes 2>"$W/err" || cat "$W/err"
check device-holds-image cmp -s -n "$(stat -c %s "$W/d.img")" "$W/d.img" "$W/target"
# An A/B update reads the root hashes from the new ISO's menu (live.verify=): a glob there is a name, not a pattern
# matched against the build host's current directory.
glob_iso() {
	mkdir -p "$W/g/boot/grub" "$W/cwd" && touch "$W/cwd/decoy:0011" &&
		printf 'linux /live/vmlinuz live.verify=*:0011\n' >"$W/g/boot/grub/loopback.cfg" &&
		xorriso -as mkisofs -quiet -o "$W/glob.iso" "$W/g" >/dev/null 2>&1
}
check slots-glob-iso-made glob_iso
check slots-glob-refused sh -c "cd '$W/cwd' && ! bash '$TOP/iso/mkusb.sh' --update '$W/no-stick.img' --iso '$W/glob.iso' 2>'$W/err'"
check slots-glob-named-as-is grep -qF 'glob.iso: layer * is named by its menu but missing' "$W/err"
finish

#!/usr/bin/env bash
# summary: a liveunion-rw.img that is fragmented on its FAT32 is still used (through a read-write FAT mount, said on the console); the four changes survive reboot; after poweroff the image is clean on the host and the FAT (fsck.vfat -n) has no damage but the dirty bit docs/persistence.md documents for this case
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img tag=$$
require stick-made make_stick "$img" --persist-size 16M --file
# Re-copy the image into two holes left by deleted files on a full FAT: it has to be split around the
# file that stays between them.
require fat-read part_read "$img" 3 "$PDIR/fat"
mcopy -n -i "$PDIR/fat" ::liveunion-rw.img "$PDIR/store" && mdel -i "$PDIR/fat" ::liveunion-rw.img
head -c 9M /dev/zero >"$PDIR/c" && echo b >"$PDIR/b"
mcopy -i "$PDIR/fat" "$PDIR/c" ::c1 && mcopy -i "$PDIR/fat" "$PDIR/b" ::b && mcopy -i "$PDIR/fat" "$PDIR/c" ::c3
free=$(mdir -i "$PDIR/fat" :: | sed -n 's/^ *\([0-9 ]*\) bytes free.*/\1/p' | tr -d ' ')
head -c $((free - 4096)) /dev/zero >"$PDIR/fill" && mcopy -i "$PDIR/fat" "$PDIR/fill" ::fill
mdel -i "$PDIR/fat" ::c1 ::c3 && mcopy -i "$PDIR/fat" "$PDIR/store" ::liveunion-rw.img
require fat-written part_write "$img" 3 "$PDIR/fat"
require image-fragmented test "$(mshowfat -i "$PDIR/fat" ::liveunion-rw.img | grep -o '<[0-9-]*>' | wc -l)" -gt 1
require qemu-starts vm_start persist-file-fragmented stick-bios "$img" --direct
require login vm_login
check says-fragmented log_has 'liveunion: persistence: liveunion-rw.img on /dev/sd[a-z]3 is fragmented: used through the vfat filesystem'
check store-used log_has 'liveunion: persistence: store liveunion-rw.img on /dev/sd[a-z]3 \(vfat\) via /dev/loop[0-9]+, ext4'
check modify modify_four "$tag"
require reboot vm_reboot
check four-changes-kept four_kept "$tag"
check poweroff vm_poweroff
check image-clean-after-poweroff file_store_fsck "$img"
check image-unmounted-cleanly store_clean
check image-holds-etc-file store_file_is /liveunion-v1/upper/etc/kept "etc-$tag"
# The FAT was mounted read-write until power-off (the store's loop device keeps the image open for writing, so it
# cannot go read-only): marked dirty, as docs/persistence.md says; nothing else is wrong with it.
check fat-left-dirty-as-documented fat_dirty "$img"
check fat-partition-clean-but-dirty-bit fat_clean_but_dirty "$img"
finish

#!/usr/bin/env bash
# summary: USB stick whose FAT32 partition holds liveunion-rw.img, UEFI (OVMF): the four changes survive reboot; the image (used in place, the FAT never mounted read-write) and the FAT are clean after poweroff
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img
require stick-made make_stick "$img" --persist-size 32M --file
require qemu-starts vm_start persist-file-uefi stick-uefi "$img"
require login vm_login
check init-said-image-file log_has 'liveunion: persistence: store liveunion-rw.img on /dev/sd[a-z]3 \(vfat, in one piece at byte [0-9]+\) via /dev/loop[0-9]+, ext4, [0-9]+ MiB free'
check fat-not-mounted vm_none 'cat /proc/mounts' ' vfat '
check upper-is-the-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
check modify modify_four $$
require reboot vm_reboot
check four-changes-kept four_kept $$
check poweroff vm_poweroff
check rcK-said-clean log_has 'liveunion rcK: persistence store clean'
check image-clean-after-poweroff file_store_fsck "$img"
check image-unmounted-cleanly store_clean
check image-holds-etc-file store_file_is /liveunion-v1/upper/etc/kept "etc-$$"
check fat-partition-clean fat_clean "$img"
finish

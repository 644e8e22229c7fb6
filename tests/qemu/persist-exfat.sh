#!/usr/bin/env bash
# summary: USB stick whose exFAT partition holds liveunion-rw.img (live.persist=file:liveunion-rw.img): the four changes survive reboot; after poweroff the image (e2fsck -fn, unmounted cleanly, holding the file) and the exFAT (fsck.exfat -n) are clean on the host
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img tag=$$
require stick-made make_stick "$img" --persist-size 32M --file --exfat
require qemu-starts vm_start persist-exfat stick-bios "$img" --keys "live.persist=file:liveunion-rw.img"
require login vm_login
check init-said-exfat-file log_has 'liveunion: persistence: store liveunion-rw.img on /dev/sd[a-z]3 \(exfat, in one piece at byte [0-9]+\) via /dev/loop[0-9]+, ext4, [0-9]+ MiB free'
check modify modify_four "$tag"
require reboot vm_reboot
check four-changes-kept four_kept "$tag"
check poweroff vm_poweroff
check rcK-said-clean log_has 'liveunion rcK: persistence store clean'
check image-clean-after-poweroff file_store_fsck "$img"
check image-unmounted-cleanly store_clean
check image-holds-etc-file store_file_is /liveunion-v1/upper/etc/kept "etc-$tag"
check exfat-partition-clean exfat_clean "$img"
check wrong-file-named vm_start persist-exfat stick-bios "$img" --keys "live.persist=file:nothere.img"
check wrong-file-login vm_login
check wrong-file-says-why log_has 'liveunion: persistence: none: no nothere.img on the FAT/exFAT partitions of /dev/sd[a-z]'
vm_stop
finish

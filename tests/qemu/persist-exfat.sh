#!/usr/bin/env bash
# summary: USB stick whose exFAT partition holds liveunion-rw.img (live.persist=file:liveunion-rw.img): the four changes survive reboot; the image is clean after poweroff
# shellcheck source=tests/qemu/persist-lib.bash
. "$(dirname "$0")/persist-lib.bash"
img=$PDIR/stick.img tag=$$
require stick-made make_stick "$img" --persist-size 32M --file --exfat
require qemu-starts kvm_start persist-exfat "$img" "live.persist=file:liveunion-rw.img"
require login vm_login
check init-said-exfat-file log_has 'liveunion: persistence: store liveunion-rw.img on /dev/sd[a-z]3 \(exfat, in one piece at byte [0-9]+\) via /dev/loop[0-9]+, ext4, [0-9]+ MiB free'
check modify modify_four "$tag"
require reboot vm_reboot
check four-changes-kept four_kept "$tag"
check poweroff vm_poweroff
check rcK-said-clean log_has 'liveunion rcK: persistence store clean'
check wrong-file-named kvm_start persist-exfat "$img" "live.persist=file:nothere.img"
check wrong-file-login vm_login
check wrong-file-says-why log_has 'liveunion: persistence: none: no nothere.img on the FAT/exFAT partitions of /dev/sd[a-z]'
vm_stop
finish

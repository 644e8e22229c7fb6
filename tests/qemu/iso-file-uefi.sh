#!/usr/bin/env bash
# summary: a multi-boot stick's own UEFI GRUB (OVMF) loop-boots liveunion.iso as a file from its ext4 partition (loopback.cfg, live.iso=): login, layers verified, liveunion-rw.img beside the ISO used through the ext4, the changes in it after poweroff and both filesystems clean; live.iso= with another ISO file is refused by its UUID
# shellcheck source=tests/qemu/lib/multiboot.bash
. "$(dirname "$0")/lib/multiboot.bash"
img=$PDIR/multiboot.img tag=$$
require stick-made make_multiboot "$img"
require ext4-entry mb_pick "$img" 1
require qemu-starts vm_start iso-file-uefi stick-uefi "$img"
require login vm_login
check grub-read-loopback-cfg log_has "from the ISO file $MB_ISO_PATH4"
check init-found-the-file log_has "^liveunion: medium UUID=[0-9-]+ found: the file $MB_ISO_PATH4 on /dev/sd[a-z]3 \(ext4, mounted read-only on /run/live/iso-host\) via /dev/loop[0-9]+"
check medium-is-the-loop-device vm_run "grep ' /run/live/medium ' /proc/mounts"
check medium-loop-iso9660-ro out_has '^/dev/loop[0-9]+ /run/live/medium iso9660 ro[, ]'
check layers-verified log_has '^liveunion: stack, bottom to top \([0-9]+ layer\(s\), dm-verity\)'
check no-copy-elsewhere log_lacks "is also on"
check init-said-store-through-ext4 log_has "^liveunion: persistence: $MB_STORE_PATH4 on /dev/sd[a-z]3 is used through its ext4 filesystem"
check upper-is-the-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
check modify modify_four "$tag"
check poweroff vm_poweroff
check rcK-said-clean log_has 'liveunion rcK: persistence store clean'
check store-clean-after-poweroff mb_store "$img" 3
check store-unmounted-cleanly store_clean
check store-holds-etc-file store_file_is /liveunion-v1/upper/etc/kept "etc-$tag"
check ext4-partition-clean mb_host_clean "$img" 3

# The file is there but is another build (its UUID is not live.medium='s): refused, named, rescue shell.
require other-iso-starts vm_start iso-file-other usb-bios "$img" \
	--keys "live.medium=UUID=1999123123595900 live.iso=$MB_ISO_PATH live.timeout=3"
require rescue-prompt vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
check says-which-file log_has "^liveunion: the ISO file $MB_ISO_PATH \(medium UUID=1999123123595900\) is on no partition"
check says-why-not-it log_has "^liveunion: +sd[a-z]2: exfat, holds $MB_ISO_PATH but it is not the wanted medium: .*1999123123595900"
check no-kernel-panic log_lacks 'Kernel panic'
vm_stop
finish

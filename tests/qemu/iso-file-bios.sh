#!/usr/bin/env bash
# summary: a multi-boot stick's own BIOS GRUB loop-boots liveunion.iso as a file from its exFAT partition (loopback.cfg, live.iso=): login, layers verified, liveunion-rw.img beside the ISO keeps the four changes across a reboot and is clean after poweroff; live.toram lets go of the partition; a wrong live.iso= names the file and every partition searched, then the rescue shell; the same path on a second partition is named in a warning
# shellcheck source=tests/qemu/lib/multiboot.bash
. "$(dirname "$0")/lib/multiboot.bash"
img=$PDIR/multiboot.img tag=$$
require stick-made make_multiboot "$img"
require qemu-starts vm_start iso-file-bios stick-bios "$img"
require login vm_login
check grub-read-loopback-cfg log_has "from the ISO file $MB_ISO_PATH"
check init-found-the-file log_has "^liveunion: medium UUID=[0-9-]+ found: the file $MB_ISO_PATH on /dev/sd[a-z]2 \(exfat, mounted read-only on /run/live/iso-host\) via /dev/loop[0-9]+"
check says-second-copy log_has "^liveunion: WARNING: $MB_ISO_PATH is also on /dev/sd[a-z]3: the one on /dev/sd[a-z]2 is used"
check medium-is-the-loop-device vm_run "grep ' /run/live/medium ' /proc/mounts"
check medium-loop-iso9660-ro out_has '^/dev/loop[0-9]+ /run/live/medium iso9660 ro[, ]'
check host-partition-mounted-ro vm_run "grep ' /run/live/iso-host ' /proc/mounts"
check host-partition-exfat out_has '^/dev/sd[a-z]2 /run/live/iso-host exfat ro[, ]'
check layers-verified log_has '^liveunion: stack, bottom to top \([0-9]+ layer\(s\), dm-verity\)'
check plan-names-the-file vm_run "grep '^medium.iso' /run/live/plan"
check plan-iso-lines out_has_all "medium.iso=$MB_ISO_PATH" medium.iso.fstype=exfat
check init-said-store-beside log_has "^liveunion: persistence: store $MB_STORE_PATH on /dev/sd[a-z]2 \(exfat, in one piece at byte [0-9]+\) via /dev/loop[0-9]+, ext4"
check modify modify_four "$tag"
require reboot vm_reboot
check four-changes-kept four_kept "$tag"
check poweroff vm_poweroff
check rcK-said-clean log_has 'liveunion rcK: persistence store clean'
check store-clean-after-poweroff mb_store "$img" 2
check store-unmounted-cleanly store_clean
check store-holds-etc-file store_file_is /liveunion-v1/upper/etc/kept "etc-$tag"

# live.toram from an ISO file: the layers go to RAM, then the loop device and the partition are let go.
require toram-starts vm_start iso-file-toram usb-bios "$img" --keys "live.iso=$MB_ISO_PATH live.toram live.persist=off"
require toram-login vm_login
check toram-released log_has '^liveunion: live.toram: layers are in RAM; the medium /dev/sd[a-z]2 is released and can be removed \(the ISO file.s partition is unmounted\)'
check toram-nothing-of-the-stick-mounted vm_none 'cat /proc/mounts' ' /run/live/(iso-host|medium) |^/dev/sd'
check toram-no-loop-on-the-iso vm_none "cat /sys/block/loop*/loop/backing_file 2>/dev/null" "$MB_ISO_PATH"

# A path that is on no partition: every block device searched, each with why, then the rescue shell.
require wrong-path-starts vm_start iso-file-wrong usb-bios "$img" --keys "live.iso=/isos/nothere.iso live.timeout=3"
require rescue-prompt vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
check names-the-file log_has '^liveunion: the ISO file /isos/nothere.iso \(medium UUID=[0-9-]+\) is on no partition after 3 s'
check lists-exfat-partition log_has '^liveunion: +sd[a-z]2: exfat, no /isos/nothere.iso on it'
check lists-ext4-partition log_has '^liveunion: +sd[a-z]3: ext4, no /isos/nothere.iso on it'
check lists-esp log_has '^liveunion: +sd[a-z]1: vfat, no /isos/nothere.iso on it'
check lists-whole-disk log_has '^liveunion: +sd[a-z]: no ext2/3/4, FAT, exFAT or NTFS filesystem'
check no-kernel-panic log_lacks 'Kernel panic'
vm_stop
finish

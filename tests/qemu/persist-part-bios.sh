#!/usr/bin/env bash
# summary: USB stick with a liveunion-rw ext4 partition, BIOS: a file in /home, a file in /etc, a deleted and a chmod-ed lower file survive reboot; store clean after poweroff
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img
require stick-made make_stick "$img" --persist-size 32M
require qemu-starts vm_start persist-part-bios stick-bios "$img"
require login vm_login
check init-said-store log_has 'liveunion: persistence: store /dev/sd[a-z]3 \(LABEL=liveunion-rw\), ext4, [0-9]+ MiB free'
vm_run "grep ' /run/live/upper ' /proc/mounts"
check upper-is-the-store out_has '^/dev/sd[a-z]3 /run/live/upper ext4 rw'
check plan-says-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
check meta-names-image vm_run "grep '^image=[0-9]\{16\}\$' /run/live/store/liveunion-v1/meta"
check modify modify_four $$
require reboot vm_reboot
check home-file-kept vm_fact "cat /home/kept" "home-$$"
check etc-file-kept vm_fact "cat /etc/kept" "etc-$$"
check deleted-stays-deleted vm_run "test ! -e /etc/shells && test -e /run/live/layers/10-base/etc/shells"
check chmod-kept vm_fact "stat -c %a /etc/hosts" 600
check poweroff vm_poweroff
check rcK-said-clean log_has 'liveunion rcK: persistence store clean'
check store-clean-after-poweroff store_fsck "$img"
check store-unmounted-cleanly store_clean
check store-holds-home-file store_file_is /liveunion-v1/upper/home/kept "home-$$"
finish

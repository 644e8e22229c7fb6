#!/usr/bin/env bash
# summary: live.persist.ro shows the store's changes but keeps new ones in tmpfs; live.persist.reset starts fresh and keeps the old upper in a dated directory
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img tag=$$
require stick-made make_stick "$img" --persist-size 32M
require boot1 vm_start persist-ro-reset stick-bios "$img" --direct
require login1 vm_login
check modify modify_four "$tag"
require poweroff1 vm_poweroff

# read-only: the store is a lower layer, changes go to tmpfs and the store stays as it was
require boot-ro vm_start persist-ro-reset stick-bios "$img" --keys "live.persist.ro"
require login-ro vm_login
check ro-said log_has 'liveunion: persistence: read-only /dev/sd[a-z]3 \(LABEL=liveunion-rw\), ext4, [0-9]+ MiB free, changes go to tmpfs'
check ro-four-changes-visible four_kept "$tag"
check ro-store-mounted-ro vm_run "grep ' /run/live/store ext4 ro[,]' /proc/mounts"
check ro-upper-is-tmpfs vm_run "grep ' /run/live/upper tmpfs ' /proc/mounts"
check ro-store-is-a-lower-layer vm_run "grep ' / overlay ' /proc/mounts | grep -q 'liveunion-v1/upper'"
check ro-write-works vm_fact "echo ro-$tag >/etc/ro-write && rm /etc/kept && cat /etc/ro-write" "ro-$tag"
require poweroff-ro vm_poweroff
require boot3 vm_start persist-ro-reset stick-bios "$img" --direct
require login3 vm_login
check ro-changes-were-volatile vm_fact "test ! -e /etc/ro-write && cat /etc/kept" "etc-$tag"
check four-changes-still-kept four_kept "$tag"
require poweroff3 vm_poweroff

# reset: a fresh upper; the old one moved aside, not deleted
require boot-reset vm_start persist-ro-reset stick-bios "$img" --keys "live.persist.reset"
require login-reset vm_login
check reset-said log_has 'liveunion: persistence: live.persist.reset: previous changes kept in liveunion-v1/upper.reset-[0-9]{8}-[0-9]{6}'
check reset-gives-fresh-root four_gone
check reset-old-upper-in-store vm_fact "cat /run/live/store/liveunion-v1/upper.reset-*/home/kept" "home-$tag"
require poweroff-reset vm_poweroff
check store-clean store_fsck "$img"
check store-unmounted-cleanly store_clean
check old-upper-on-disk sh -c "debugfs -R 'ls /liveunion-v1' '$PDIR/store.fsck' 2>/dev/null | grep -q 'upper.reset-'"
finish

#!/usr/bin/env bash
# summary: more block devices than the init's old lists held (80 SCSI disks on virtio-scsi, plus the CD and the loop and dm devices of the layers): the medium is found, a store named by label on the last disk is found and used, and the init says nothing was cut off
# shellcheck disable=SC2016 # the eval'd check expands when it runs
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
N=${MANY_DISKS:-80}

require iso-exists test -f "$ISO"
# N sparse 1 MiB disks, LUNs 0..N-1 of one virtio-scsi target; the last carries the store (names sort after sda..).
# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
args=(-device virtio-scsi-pci,id=scsi)
for i in $(seq 0 $((N - 1))); do
	truncate -s 1M "$PDIR/d$i.img"
	args+=(-drive "if=none,id=d$i,format=raw,file=$PDIR/d$i.img" -device "scsi-hd,drive=d$i,bus=scsi.0,channel=0,scsi-id=0,lun=$i")
done
truncate -s 16M "$PDIR/d$((N - 1)).img"
require store-made mkfs.ext4 -q -L many-store "$PDIR/d$((N - 1)).img"
require boot vm_start persist-many-disks cd-bios "$ISO" --keys "live.persist=LABEL=many-store live.timeout=60" "${args[@]}"
require login vm_login
check all-disks-seen vm_fact "ls /sys/block | grep -c '^sd'" "$N"
check store-found-on-last-disk log_has 'liveunion: persistence: store /dev/sd[a-z]+ \(LABEL=many-store\), ext4'
check upper-is-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
check nothing-cut-off log_lacks 'block devices in .* left out'
check store-written vm_run "echo kept >/home/many && sync"
require poweroff vm_poweroff
check store-clean-and-kept eval 'e2fsck -fn "$PDIR/d$((N - 1)).img" >/dev/null 2>&1 && [ "$(debugfs -R "cat liveunion-v1/upper/home/many" "$PDIR/d$((N - 1)).img" 2>/dev/null)" = kept ]'
finish

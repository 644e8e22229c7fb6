#!/usr/bin/env bash
# summary: live.toram: progress line (MiB, percent, MB/s), the RAM copy read back and compared, loop and dm-verity devices moved onto it, the medium unmounted and the CD ejected (tray open per qemu); too little RAM says so and boots from the medium
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"

busybox_sum=$(md5sum <"$OUT/rootfs/tree/bin/busybox" | cut -d' ' -f1)

# tray_open: "true" or "false" for the CD drive, from qemu's own view (QMP query-block).
tray_open() {
	vm_qmp "$MDIR/qmp.sock" '{"execute": "query-block"}' | python3 -c '
import json, sys
print([str(b.get("tray_open")).lower() for b in json.loads(sys.stdin.readline()) if b.get("removable")][0])'
}

require qemu-starts vm_start toram cd-bios "$ISO" --keys "live.toram live.debug" -qmp "unix:$MDIR/qmp.sock,server=on,wait=off"
check tray-closed-at-start test "$(tray_open)" = false
require login vm_login
check progress-line log_has '^liveunion: live\.toram: [0-9.]+ / [0-9.]+ MiB \(100%\), [0-9.]+ MB/s$'
check copy-rate-line log_has '^liveunion: live\.toram: copied [0-9]+ bytes in [0-9.]+ s \([0-9.]+ MB/s\)$'
# the base layer (over 1 MiB) is read from the drive with O_DIRECT, its small hash tree through iso9660
check base-read-from-drive log_has '^liveunion: live\.toram: /run/live/medium/live/10-base\.squashfs lies at byte [0-9]+ of /dev/sr0: read from there with O_DIRECT$'
check hash-tree-read-through-fs log_has '^liveunion: live\.toram: /run/live/medium/live/10-base\.verity is read through the file system: smaller than'
check copy-verified log_has '^liveunion: live\.toram: the RAM copy matches what was read \(2 file\(s\), 1 of them read from /dev/sr0 directly'
check medium-released-ejected log_has '^liveunion: live\.toram: layers are in RAM; the medium /dev/sr0 is released and can be removed \(ejected\)$'
check tray-open-after-boot test "$(tray_open)" = true
check medium-not-mounted vm_none 'cat /proc/mounts' ' /run/live/medium '
# the kernel's own view: losetup shows the name given at attach time, LOOP_CHANGE_FD does not rename
check loops-read-ram-copies vm_fact 'cat /sys/block/loop*/loop/backing_file | grep -c "^/run/live/toram/"' 2
check verity-still-on vm_run 'grep "^/dev/dm-0 /run/live/layers/10-base " /proc/mounts'
check base-file-reads-from-ram vm_fact 'md5sum </bin/busybox | cut -d" " -f1' "$busybox_sum"
check plan-toram-result vm_run 'grep "^toram.result=copied .* medium released; ejected$" /run/live/plan'
vm_stop

# The ISO written to a stick (a virtio disk here): the base layer is read from the disk directly too,
# and the disk is released but not ejected.
require qemu-starts-disk vm_start toram-disk none "" --keys "live.toram live.debug" \
	-drive "file=$ISO,if=virtio,format=raw,readonly=on"
require login-disk vm_login
check disk-base-read-directly log_has '^liveunion: live\.toram: /run/live/medium/live/10-base\.squashfs lies at byte [0-9]+ of /dev/vda[0-9]*: read from there with O_DIRECT$'
check disk-released-not-ejected log_has '^liveunion: live\.toram: layers are in RAM; the medium /dev/vda[0-9]* is released and can be removed \(not a CD drive, nothing to eject\)$'
check disk-base-file-reads-from-ram vm_fact 'md5sum </bin/busybox | cut -d" " -f1' "$busybox_sum"
vm_stop

# 72 MiB of RAM: the copy does not fit beside the 64 MiB reserve; said, and the boot goes on from the medium.
VM_MEM_SAVED=$VM_MEM
VM_MEM=72
require qemu-starts-small vm_start toram-small cd-bios "$ISO" --keys "live.toram"
VM_MEM=$VM_MEM_SAVED
require login-small vm_login
check not-enough-ram-said log_has '^liveunion: live\.toram: not enough RAM: need [0-9]+ MiB \(layers \+ 64 MiB reserve\), MemAvailable [0-9]+ MiB; booting from the medium instead$'
check no-copy-made log_lacks 'live\.toram: copying'
check medium-still-mounted vm_fact 'grep -c "^/dev/sr0 /run/live/medium " /proc/mounts' 1
check plan-toram-skipped vm_run 'grep "^toram.result=skipped: not enough RAM" /run/live/plan'
vm_stop
finish

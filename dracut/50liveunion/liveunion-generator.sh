#!/bin/sh
# systemd generator in dracut's initramfs (boot time): for root=liveunion, /sysroot is mounted by
# `mount -t liveunion liveunion /sysroot`, that is our stacker as mount.liveunion. Written to the early directory
# ($2), which wins over what systemd-fstab-generator makes of root=. A failure fails initrd-root-fs.target:
# dracut's emergency shell, the stacker's report on the console and in the journal.
# shellcheck source=/dev/null # dracut-lib.sh: only in the initramfs
type getarg >/dev/null 2>&1 || . /lib/dracut-lib.sh
[ -z "$root" ] && root=$(getarg root=)
[ "$root" = liveunion ] || exit 0
dir=$2
[ -n "$dir" ] || exit 1
mkdir -p "$dir/initrd-root-fs.target.requires"
{
	echo "[Unit]"
	echo "Description=liveunion live root (layers, persistence, overlay)"
	echo "Before=initrd-root-fs.target"
	echo "After=systemd-udev-trigger.service"
	echo "[Mount]"
	echo "What=liveunion"
	echo "Where=/sysroot"
	echo "Type=liveunion"
	# live.timeout bounds the wait for the medium; live.toram's copy takes what it takes
	echo "TimeoutSec=infinity"
	echo "StandardOutput=journal+console"
	echo "StandardError=journal+console"
} >"$dir/sysroot.mount"
ln -sf ../sysroot.mount "$dir/initrd-root-fs.target.requires/sysroot.mount"

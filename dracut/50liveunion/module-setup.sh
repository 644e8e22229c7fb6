#!/bin/bash
# shellcheck disable=SC2154 # moddir, kernel, initdir, systemdutildir: set by dracut, which sources this file
# dracut module "liveunion" (sourced by dracut when it builds an initramfs, on the build host): liveunion's stacker
# builds the root for root=liveunion. Installed by `./build.sh dracut-module --install` beside the files it names:
# liveunion-stack (the init's static binary), modules.list (initramfs/pc-modules), e2fsck.conf and, for the
# kernel they were built for, our overlay.ko and squashfs.ko.

# Only when asked: dracut --add liveunion (or add_dracutmodules+=" liveunion " in dracut.conf.d).
check() {
	return 255
}

# The hooks run from dracut's own init (base); nothing else: the stacker finds and mounts the medium itself.
depends() {
	echo base
	return 0
}

# The modules our own pc initramfs carries to reach the root (initramfs/pc-modules), by dracut's instmods.
installkernel() {
	local m
	while read -r m _; do
		case "$m" in '' | '#'*) continue ;; esac
		hostonly='' instmods -o "$m"
	done <"$moddir/modules.list"
}

# Ours only for the kernel they were built against: another kernel loads its own overlay (the init says so).
liveunion_own_module() {
	local ko=$moddir/$1.ko
	[ -f "$ko" ] || return 0
	if [ "$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)" = "$kernel" ]; then
		inst_simple "$ko" "/lib/liveunion/$1.ko"
	else
		dinfo "liveunion: $ko is not built for $kernel: the kernel's own $1 is used"
	fi
}

install() {
	inst_simple "$moddir/liveunion-stack" /usr/sbin/liveunion-stack
	# systemd's sysroot.mount runs mount -t liveunion, which runs this helper (the same binary, by its name)
	ln_r /usr/sbin/liveunion-stack /sbin/mount.liveunion
	# the store is checked with e2fsck (init/store.c: /sbin/e2fsck); a LUKS store is opened with cryptsetup
	inst_multiple -o e2fsck cryptsetup
	inst_simple "$moddir/e2fsck.conf" /etc/e2fsck.conf
	sed -e 's/#.*//' "$moddir/modules.list" | awk '$2 == "preload" { print $1 }' >"$initdir/etc/liveunion-modules.preload"
	liveunion_own_module overlay
	liveunion_own_module squashfs
	inst_hook cmdline 20 "$moddir/parse-liveunion.sh"
	inst_hook mount 20 "$moddir/mount-liveunion.sh"
	if dracut_module_included "systemd-initrd"; then
		inst_script "$moddir/liveunion-generator.sh" "$systemdutildir/system-generators/dracut-liveunion-generator"
	fi
}

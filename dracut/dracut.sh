# shellcheck shell=bash
# Build-host: the dracut module 50liveunion (dracut/50liveunion: module-setup.sh and the boot-time hooks)
# with the init's static binary as liveunion-stack, the pc module list, e2fsck.conf and, when the pc kernel stage
# made them, our overlay.ko and squashfs.ko -> out/dracut/50liveunion; `--install [ROOT]` copies it into
# ROOT/usr/lib/dracut/modules.d/, where `dracut --add liveunion` finds it. dracut's range for modules of other
# projects: below 90 (90-99 are those dracut itself relies on, its HACKING.md).
# Sourced by build.sh, which provides log, die, OUT, TOP, LIVEUNION_VERSION; initramfs_uapi and initramfs_build_init (initramfs/initramfs.sh).
DRACUT_MODULE=50liveunion

dracut_module_build() {
	local d=$OUT/dracut/$DRACUT_MODULE ko
	command -v musl-gcc >/dev/null || need_pkgs musl-tools
	rm -rf "$d.tmp"
	mkdir -p "$d.tmp/build"
	cp "$TOP/dracut/$DRACUT_MODULE"/* "$d.tmp/" || die "cannot copy dracut/$DRACUT_MODULE"
	initramfs_uapi
	initramfs_build_init "$d.tmp/build"
	mv "$d.tmp/build/init" "$d.tmp/liveunion-stack"
	rm -rf "$d.tmp/build"
	cp "$TOP/initramfs/pc-modules" "$d.tmp/modules.list"
	cp "$TOP/initramfs/e2fsck.conf" "$d.tmp/e2fsck.conf"
	for ko in overlay squashfs; do
		[ ! -f "$OUT/pc/$ko.ko" ] || cp "$OUT/pc/$ko.ko" "$d.tmp/$ko.ko"
	done
	rm -rf "$d"
	mv "$d.tmp" "$d"
	log "dracut module: $d ($(stat -c %s "$d/liveunion-stack") bytes of stacker$([ -f "$d/overlay.ko" ] && echo ", our overlay.ko for $(cat "$OUT/pc/release" 2>/dev/null)"))"
}

# dracut_module_install ROOT: ROOT/usr/lib/dracut/modules.d/50liveunion ("" = this system).
dracut_module_install() {
	local dest=$1/usr/lib/dracut/modules.d/$DRACUT_MODULE
	[ -d "$1/usr/lib/dracut/modules.d" ] || die "no $1/usr/lib/dracut/modules.d: is dracut installed there?"
	rm -rf "$dest"
	cp -a "$OUT/dracut/$DRACUT_MODULE" "$dest" || die "cannot copy the module to $dest"
	log "installed $dest: dracut --add liveunion, and boot with root=liveunion (docs/dracut.md)"
}

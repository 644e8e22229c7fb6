# shellcheck shell=bash
# Sourced by tests/qemu/dracut.sh and bench/boot-peers (build host): Debian's dracut (bookworm, 059) in a copy of
# the debian profile's debootstrap tree (never on the build host), our module installed there by
# `./build.sh dracut-module --install TREE`, initramfs images it builds for the pc kernel, and copies of the debian
# ISO that carry such an image in their menus with root=liveunion.
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "${BASH_SOURCE[0]}")/vm.bash"

DRACUT_DIR=$OUT/tests/dracut
mkdir -p "$OUT/tests"
DRACUT_TREE=$DRACUT_DIR/tree
DRACUT_KVER=$(cat "$OUT/pc/release" 2>/dev/null || true)
DRACUT_PKGS=(dracut dracut-live)

# dracut_chroot CMD...: CMD in the tree, with /proc mounted for its duration.
dracut_chroot() {
	local rc=0
	mount -t proc proc "$DRACUT_TREE/proc" || return 1
	chroot "$DRACUT_TREE" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@" || rc=$?
	umount "$DRACUT_TREE/proc" || rc=1
	return "$rc"
}

# dracut_tree: the tree, made once per debootstrap tree and pc kernel: dracut installed from the tree's own Debian
# mirror, the pc kernel's modules under /lib/modules (dracut's instmods takes them from there). The profile cache
# keeps one debootstrap tree (rootfs/debian.sh): it is copied under the build lock, so that a profile build in
# the other test lane cannot remove it meanwhile.
dracut_tree() {
	local trees key cache=${PROFILE_CACHE:-$OUT/cache} blk rc=0
	{ [ -n "$DRACUT_KVER" ] && [ -d "$OUT/pc/$DRACUT_KVER/root/lib/modules/$DRACUT_KVER" ]; } ||
		{ vm_note "dracut_tree: no pc kernel modules under $OUT/pc (build the debian profile)"; return 1; }
	exec {blk}>"$OUT/.build.lock" && flock "$blk" || return 1
	trees=("$cache"/debootstrap/*.done)
	if [ ! -f "${trees[0]}" ]; then
		vm_note "dracut_tree: no debootstrap tree in $cache/debootstrap (build the debian profile)"
		rc=1
	else
		key="$(basename "${trees[0]}" .done) $DRACUT_KVER ${DRACUT_PKGS[*]}"
		if [ "$(cat "$DRACUT_DIR/tree.key" 2>/dev/null)" != "$key" ]; then
			vm_note "dracut_tree: a copy of ${trees[0]%.done}"
			rm -rf "$DRACUT_TREE" "$DRACUT_DIR/tree.key"
			mkdir -p "$DRACUT_DIR" && cp -a "${trees[0]%.done}" "$DRACUT_TREE" || rc=1
		fi
	fi
	exec {blk}>&-
	[ "$rc" -eq 0 ] || return 1
	[ "$(cat "$DRACUT_DIR/tree.key" 2>/dev/null)" != "$key" ] || return 0
	vm_note "dracut_tree: apt-get install ${DRACUT_PKGS[*]} in $DRACUT_TREE"
	rm -f "$DRACUT_TREE/etc/resolv.conf"
	cp /etc/resolv.conf "$DRACUT_TREE/etc/resolv.conf" || return 1
	{ dracut_chroot apt-get update -q >"$DRACUT_DIR/apt.log" 2>&1 &&
		dracut_chroot apt-get install -y -q --no-install-recommends "${DRACUT_PKGS[@]}" >>"$DRACUT_DIR/apt.log" 2>&1; } ||
		{ vm_note "dracut_tree: apt-get failed: $(tail -n 3 "$DRACUT_DIR/apt.log")"; return 1; }
	mkdir -p "$DRACUT_TREE/lib/modules" &&
		cp -a "$OUT/pc/$DRACUT_KVER/root/lib/modules/$DRACUT_KVER" "$DRACUT_TREE/lib/modules/" || return 1
	printf '%s\n' "$key" >"$DRACUT_DIR/tree.key"
}

# dracut_image NAME DRACUT-ARGS...: $DRACUT_DIR/NAME.img, made by the tree's dracut for the pc kernel with our
# module freshly installed (./build.sh dracut-module --install); remade when the module, the tree or the arguments
# change. The log is $DRACUT_DIR/NAME.log.
dracut_image() {
	local name=$1 key
	shift
	exec {lock}>>"$DRACUT_DIR.lock" && flock "$lock" || return 1 # one tree for every scenario of a run
	{ dracut_tree && "$TOP/build.sh" dracut-module --install "$DRACUT_TREE" >"$DRACUT_DIR/module.log" 2>&1; } ||
		{ vm_note "dracut_image: the tree or the module failed: $(tail -n 3 "$DRACUT_DIR/module.log" 2>/dev/null)"; exec {lock}>&-; return 1; }
	key="$(cat "$DRACUT_DIR/tree.key") $(cd "$OUT/dracut/50liveunion" && cat ./* | sha256sum | cut -c1-16) $*"
	if [ "$(cat "$DRACUT_DIR/$name.key" 2>/dev/null)" != "$key" ] || [ ! -s "$DRACUT_DIR/$name.img" ]; then
		rm -f "$DRACUT_DIR/$name.key"
		{ dracut_chroot dracut --force --no-hostonly --kver "$DRACUT_KVER" "$@" "/tmp/$name.img" \
			>"$DRACUT_DIR/$name.log" 2>&1 && mv "$DRACUT_TREE/tmp/$name.img" "$DRACUT_DIR/$name.img"; } ||
			{ vm_note "dracut_image: dracut $* failed: $(tail -n 3 "$DRACUT_DIR/$name.log")"; exec {lock}>&-; return 1; }
		printf '%s\n' "$key" >"$DRACUT_DIR/$name.key"
	fi
	exec {lock}>&-
	vm_note "dracut_image: $DRACUT_DIR/$name.img, $(stat -c %s "$DRACUT_DIR/$name.img") bytes (dracut $*)"
}

# dracut_iso ISO INITRD OUTPUT: a copy of ISO whose menus (isolinux and GRUB) boot INITRD with root=liveunion
# added to every entry; the volume date (the medium's UUID, live.medium=) is kept, the boot records are replayed.
dracut_iso() {
	local iso=$1 initrd=$2 out=$3 uuid w
	w=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-dracut-iso.XXXXXX") || return 1
	uuid=$(xorriso -indev "$iso" -pvd_info 2>/dev/null | sed -n 's/^Modif\. Time *: *//p' | tr -d ' ')
	{ xorriso -osirrox on -indev "$iso" -extract /isolinux/isolinux.cfg "$w/isolinux.cfg" \
		-extract /boot/grub/grub.cfg "$w/grub.cfg" >/dev/null 2>&1 && [ -n "$uuid" ]; } ||
		{ rm -rf "$w"; vm_note "dracut_iso: cannot read the menus or the volume date of $iso"; return 1; }
	sed -i -E "s/^([[:space:]]*APPEND )/\\1root=liveunion /" "$w/isolinux.cfg"
	sed -i -E "s/^([[:space:]]*linux [^ ]+ )/\\1root=liveunion /" "$w/grub.cfg"
	rm -f "$out"
	xorriso -report_about SORRY -indev "$iso" -outdev "$out" -boot_image any replay -volume_date uuid "$uuid" \
		-map "$initrd" /boot/initramfs.img -map "$w/isolinux.cfg" /isolinux/isolinux.cfg \
		-map "$w/grub.cfg" /boot/grub/grub.cfg -commit >/dev/null 2>&1 ||
		{ rm -rf "$w"; vm_note "dracut_iso: xorriso could not write $out"; return 1; }
	rm -rf "$w"
}

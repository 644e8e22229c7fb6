# shellcheck shell=bash
# Sourced by tests/qemu/iso-file-*.sh (build host): a multi-boot stick as users make them: a disk with its own
# GRUB (Debian's grub-pc-bin for BIOS, grub-efi-amd64-bin for UEFI) whose menu loop-mounts an ISO *file* and reads
# the ISO's /boot/grub/loopback.cfg with iso_path set. Partition 1 is the ESP and holds GRUB's menu, 2 is exFAT and 3
# ext4: the exFAT holds /isos/liveunion.iso and /isos/liveunion-rw.img (an ext4 store) beside it, the ext4
# /boot-isos/liveunion.iso with its own liveunion-rw.img, and a second copy at /isos/liveunion.iso (same path as the
# exFAT's: the init must say so).
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "${BASH_SOURCE[0]}")/persist.bash"

MB_ISO_PATH=/isos/liveunion.iso MB_STORE_PATH=/isos/liveunion-rw.img                     # exFAT
MB_ISO_PATH4=/boot-isos/liveunion.iso MB_STORE_PATH4=/boot-isos/liveunion-rw.img # ext4
# GRUB's modules for both firmwares, built into its image (the stick carries no module directory)
MB_GRUB_MODULES="part_msdos fat exfat ext2 iso9660 loopback linux normal configfile search serial terminal echo test"

# mb_menu DEFAULT: the stick's menu, entry DEFAULT (0: the ISO on exFAT, 1: on ext4) chosen at once.
mb_menu() {
	cat <<-EOF
	serial --unit=0 --speed=115200
	terminal_input console serial
	terminal_output console serial
	set timeout=0
	set default=$1
	menuentry "liveunion.iso on the exFAT partition" {
		set isofile=$MB_ISO_PATH
		loopback loop (hd0,msdos2)\$isofile
		set root=(loop)
		set iso_path=\$isofile
		export iso_path
		configfile /boot/grub/loopback.cfg
	}
	menuentry "liveunion.iso on the ext4 partition" {
		set isofile=$MB_ISO_PATH4
		loopback loop (hd0,msdos3)\$isofile
		set root=(loop)
		set iso_path=\$isofile
		export iso_path
		configfile /boot/grub/loopback.cfg
	}
	EOF
}

# make_multiboot IMAGE: the stick described above (sparse file), menu entry 0 by default.
make_multiboot() {
	local img=$1 d=$PDIR/mb esp=$PDIR/mb/esp.img ex=$PDIR/mb/exfat.img e4=$PDIR/mb/ext4.img how
	rm -rf "$d" && mkdir -p "$d/tree/isos" "$d/tree4/isos" "$d/tree4/boot-isos" || return 1
	printf 'set root=(hd0,msdos1)\nset prefix=(hd0,msdos1)/grub\nconfigfile /grub/grub.cfg\n' >"$d/embed.cfg"
	# shellcheck disable=SC2086 # a word list
	mb_try grub-mkimage -O i386-pc -o "$d/core.img" -c "$d/embed.cfg" -p '(hd0,msdos1)/grub' biosdisk $MB_GRUB_MODULES || return 1
	# shellcheck disable=SC2086 # a word list
	mb_try grub-mkimage -O x86_64-efi -o "$d/bootx64.efi" -c "$d/embed.cfg" -p '(hd0,msdos1)/grub' efi_gop $MB_GRUB_MODULES || return 1
	mb_menu 0 >"$d/grub.cfg"
	mb_try mkfs.vfat -C -n MBESP "$esp" $((16 * 1024)) || return 1
	mb_try mmd -i "$esp" ::/EFI ::/EFI/BOOT ::/grub || return 1
	mb_try mcopy -i "$esp" "$d/bootx64.efi" ::/EFI/BOOT/BOOTX64.EFI || return 1
	mb_try mcopy -i "$esp" "$d/grub.cfg" ::/grub/grub.cfg || return 1
	cp "$ISO" "$d/tree$MB_ISO_PATH" && store_image_file "$d/tree$MB_STORE_PATH" && cp "$ISO" "$d/tree4$MB_ISO_PATH" &&
		cp "$ISO" "$d/tree4$MB_ISO_PATH4" && store_image_file "$d/tree4$MB_STORE_PATH4" || return 1
	mkfs.ext4 -q -F -L MBEXT4 -d "$d/tree4" "$e4" 80M >/dev/null 2>&1 || { vm_note "make_multiboot: mkfs.ext4 -d"; return 1; }
	mb_try truncate -s 64M "$ex" || return 1
	mb_try mkfs.exfat -L MBEXFAT "$ex" || return 1
	how=mount.exfat-fuse
	grep -qw exfat /proc/filesystems && how='mount -t exfat'
	# shellcheck disable=SC2016 # expanded by the inner sh
	unshare -m sh -c 'set -e; d=$(mktemp -d); l=$(losetup -f --show "$1"); trap "losetup -d $l; rmdir $d" EXIT
		$3 "$l" "$d"; cp -r "$2" "$d/"; sync; umount "$d"' sh "$ex" "$d/tree${MB_ISO_PATH%/*}" "$how" ||
		{ vm_note "make_multiboot: copying onto the exFAT ($how)"; return 1; }
	rm -f "$img" && truncate -s $((1 + 16 + 64 + 80))M "$img" || return 1
	printf 'start=2048, size=16M, type=ef\nsize=64M, type=07\nsize=80M, type=83\n' |
		sfdisk -q --no-reread --no-tell-kernel "$img" >/dev/null 2>&1 || { vm_note "make_multiboot: sfdisk"; return 1; }
	part_write "$img" 1 "$esp" && part_write "$img" 2 "$ex" && part_write "$img" 3 "$e4" || return 1
	# BIOS: boot.img's code (not the partition table) in the MBR, core.img from sector 1 (where boot.img and
	# diskboot.img look for it by default), inside the gap before partition 1
	[ "$(stat -c %s "$d/core.img")" -lt $((2047 * 512)) ] || { vm_note "make_multiboot: core.img too big"; return 1; }
	dd if=/usr/lib/grub/i386-pc/boot.img of="$img" bs=440 count=1 conv=notrunc status=none &&
		dd if="$d/core.img" of="$img" bs=512 seek=1 conv=notrunc status=none
}

# mb_try COMMAND...: run it quietly; when it fails, say which command and what it printed.
mb_try() {
	"$@" >"$PDIR/mb.out" 2>&1 && return 0
	vm_note "make_multiboot: $* failed: $(tail -n 3 "$PDIR/mb.out")"
	return 1
}

# store_image_file FILE: an empty 32 MiB store as ./build.sh usb --file makes it.
store_image_file() {
	mkfs.ext4 -q -F -L liveunion-rw -O ^metadata_csum_seed -E root_owner=0:0 "$1" 32M >/dev/null 2>&1
}

# mb_pick IMAGE N: the stick's GRUB boots entry N from now on.
mb_pick() {
	mb_menu "$2" >"$PDIR/mb/grub.cfg" && mcopy -o -i "$1@@1M" "$PDIR/mb/grub.cfg" ::/grub/grub.cfg
}

# mb_store IMAGE N: liveunion-rw.img of partition N (2 exFAT, 3 ext4) copied to $PDIR/store.fsck (store_cat,
# store_clean) and checked with e2fsck -fn.
mb_store() {
	rm -f "$PDIR/store.fsck"
	part_read "$1" "$2" "$PDIR/mbp" || return 1
	case "$2" in
	2) mb_exfat_cat "$PDIR/mbp" "$MB_STORE_PATH" >"$PDIR/store.fsck" ;;
	*) debugfs -R "dump $MB_STORE_PATH4 $PDIR/store.fsck" "$PDIR/mbp" >/dev/null 2>&1 ;;
	esac
	[ -s "$PDIR/store.fsck" ] && e2fsck -fn "$PDIR/store.fsck" >"$PDIR/fsck.out" 2>&1
}

# mb_host_clean IMAGE N: the ext4 partition N itself needs no repair after the guest used it read-write.
mb_host_clean() {
	part_read "$1" "$2" "$PDIR/mbp" && e2fsck -fn "$PDIR/mbp" >"$PDIR/hostfsck.out" 2>&1 && return 0
	sed 's/^/# e2fsck: /' "$PDIR/hostfsck.out" >&2
	return 1
}

# mb_exfat_cat FS PATH: a file of an exFAT image on stdout, through exfat-fuse in a private mount namespace.
mb_exfat_cat() {
	# shellcheck disable=SC2016 # expanded by the inner sh
	unshare -m sh -c 'set -e; d=$(mktemp -d); l=$(losetup -r -f --show "$1"); trap "losetup -d $l; rmdir $d" EXIT
		mount.exfat-fuse -o ro "$l" "$d"; cat "$d$2"; umount "$d"' sh "$1" "$2"
}

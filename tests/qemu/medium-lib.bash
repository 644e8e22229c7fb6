# shellcheck shell=bash
# Sourced by tests/qemu/layers.sh, verity.sh, toram.sh and bench/toram (build host): test ISOs with extra
# layers, booting one with a chosen kernel command line, and damaging a copy of one in place.
# shellcheck source=tests/qemu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MDIR=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-medium.XXXXXX")
LIB_CLEANUP+=("rm -rf '$MDIR'")

# iso_cmdline ISO: the kernel command line the build put in the menus of ISO (made by ./build.sh or iso-with).
iso_cmdline() {
	local iso=$1 name
	if [ "$iso" = "$OUT/liveunion.iso" ]; then
		cat "$OUT/iso/cmdline"
	else
		name=$(basename "$iso" .iso)
		cat "$OUT/iso-with/${name%-damaged*}/cmdline"
	fi
}

# vm_boot_with NAME ISO CMDLINE [qemu args...]: the built kernel and initramfs with CMDLINE, ISO as the CD.
vm_boot_with() {
	local name=$1 iso=$2 cmdline=$3
	shift 3
	vm_start "$name" kernel "" -kernel "$OUT/kernel/bzImage" -initrd "$OUT/initramfs.img" -append "$cmdline" \
		-drive "file=$iso,if=ide,index=2,media=cdrom,readonly=on" "$@"
}

# iso_file_offset ISO PATH: "OFFSET SIZE", the byte offset of PATH's data in ISO and its size.
iso_file_offset() {
	local lba size
	read -r lba size < <(xorriso -indev "$1" -find "$2" -exec report_lba 2>/dev/null |
		awk -F' *, *' '/^File data lba:/ { print $2, $4 }')
	[ -n "${lba:-}" ] && [ -n "${size:-}" ] || return 1
	echo "$((lba * 2048)) $size"
}

# flip_byte FILE OFFSET: invert the bits of one byte in place.
flip_byte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ') || return 1
	[ -n "$b" ] || return 1
	# shellcheck disable=SC2059 # the format is the byte, built on purpose
	printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# iso_menu_lines ISO: every kernel line of both menus (isolinux APPEND, GRUB linux).
iso_menu_lines() {
	xorriso -indev "$1" -osirrox on -extract /isolinux/isolinux.cfg "$MDIR/isolinux.cfg" \
		-extract /boot/grub/grub.cfg "$MDIR/grub.cfg" >/dev/null 2>&1 || return 1
	grep -h -E '^[[:space:]]*(APPEND|linux) ' "$MDIR/isolinux.cfg" "$MDIR/grub.cfg"
}

# shellcheck shell=bash
# Sourced by tests/qemu/persist-*.sh (build host): stick images with a persistence store, booted as a
# writable usb-storage disk (no snapshot: the host checks the image after the guest powers off).
# shellcheck source=tests/qemu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PDIR=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-persist.XXXXXX")
LIB_CLEANUP+=("rm -rf '$PDIR'")

# make_stick IMAGE [mkusb options...]
make_stick() {
	local img=$1
	shift
	bash "$TOP/iso/mkusb.sh" --iso "$ISO" -o "$img" "$@" 2>"$PDIR/mkusb.err"
}

# pvm_start NAME bios|uefi IMAGE [qemu args...]: IMAGE as a writable USB stick, booted by the firmware.
pvm_start() {
	local name=$1 fw=$2 img=$3 bios=()
	shift 3
	[ "$fw" = uefi ] && bios=(-bios "$OVMF")
	# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
	vm_start "$name" kernel "" "${bios[@]}" -device qemu-xhci,id=xhci \
		-drive "if=none,id=stick,format=raw,file=$img" -device usb-storage,bus=xhci.0,drive=stick,bootindex=1 "$@"
}

# vm_poweroff: poweroff in the guest, wait until the kernel says it is done, then stop qemu.
vm_poweroff() {
	vm_mark
	vm_send poweroff || return 1
	vm_wait 'reboot: (Power down|System halted)' 120
	local rc=$?
	vm_stop
	return $rc
}

# part_of IMAGE N: byte offset and size of partition N, "OFFSET SIZE".
part_of() {
	partx -g -o START,SECTORS -n "$2" "$1" | awk '{ print $1 * 512, $2 * 512 }'
}

# store_fsck IMAGE: e2fsck -n on partition 3 of IMAGE (a copy, so nothing can change the image).
store_fsck() {
	local off size
	read -r off size < <(part_of "$1" 3) || return 1
	dd if="$1" of="$PDIR/store.fsck" bs=512 skip=$((off / 512)) count=$((size / 512)) status=none || return 1
	e2fsck -fn "$PDIR/store.fsck" >"$PDIR/fsck.out" 2>&1
}

# store_clean: the copy from store_fsck was unmounted cleanly (no journal replay pending).
store_clean() {
	dumpe2fs -h "$PDIR/store.fsck" 2>/dev/null >"$PDIR/dumpe2fs.out" || return 1
	grep -q '^Filesystem state: *clean$' "$PDIR/dumpe2fs.out" && ! grep -q needs_recovery "$PDIR/dumpe2fs.out"
}
# store_cat PATH: a file of the store copy, read by debugfs on the host.
store_cat() { debugfs -R "cat $1" "$PDIR/store.fsck" 2>/dev/null; }
store_file_is() { [ "$(store_cat "$1")" = "$2" ]; }

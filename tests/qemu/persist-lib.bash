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

# The kernel, initrd and command line the ISO's BIOS menu boots, taken from the ISO itself, so the
# direct-kernel boots below (which can add live.* keys) run exactly what is shipped.
iso_boot_files() {
	[ -f "$PDIR/kernel" ] && return 0
	local x=(xorriso -osirrox on -indev "$ISO" -extract)
	"${x[@]}" /isolinux/isolinux.cfg "$PDIR/isolinux.cfg" >/dev/null 2>&1 || return 1
	"${x[@]}" "$(awk 'tolower($1) == "linux" { print $2; exit }' "$PDIR/isolinux.cfg")" "$PDIR/kernel" >/dev/null 2>&1 &&
		"${x[@]}" "$(awk 'tolower($1) == "initrd" { print $2; exit }' "$PDIR/isolinux.cfg")" "$PDIR/initrd" \
			>/dev/null 2>&1 || return 1
	awk 'tolower($1) == "append" { $1 = ""; sub(/^ /, ""); print; exit }' "$PDIR/isolinux.cfg" >"$PDIR/cmdline"
	[ -s "$PDIR/cmdline" ]
}

# kvm_start NAME IMAGE "EXTRA KEYS" [qemu args...]: the ISO's kernel booted directly (no firmware
# menu: seconds saved per boot) with IMAGE as a writable USB stick and EXTRA KEYS on the command line.
kvm_start() {
	local name=$1 img=$2 keys=$3
	shift 3
	iso_boot_files || { vm_note "cannot extract the kernel and initrd from $ISO"; return 1; }
	# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
	vm_start "$name" kernel "" -kernel "$PDIR/kernel" -initrd "$PDIR/initrd" \
		-append "$(cat "$PDIR/cmdline") $keys" -device qemu-xhci,id=xhci \
		-drive "if=none,id=stick,format=raw,file=$img" -device usb-storage,bus=xhci.0,drive=stick "$@"
}

# modify_four TAG: the four changes every persistence scenario checks (a new file in /home and in /etc,
# a deleted lower file, a chmod of a lower file).
modify_four() {
	vm_run "echo home-$1 >/home/kept && echo etc-$1 >/etc/kept && rm /etc/shells && chmod 600 /etc/hosts && sync"
}
# four_kept TAG: after a reboot, all four are there.
four_kept() {
	vm_run "cat /home/kept /etc/kept; test ! -e /etc/shells && echo shells-gone; stat -c %a /etc/hosts" &&
		[ "$VM_OUT" = "home-$1"$'\n'"etc-$1"$'\n'"shells-gone"$'\n'"600" ]
}
# four_gone: none of the four survived (a volatile boot).
four_gone() {
	vm_run "test ! -e /home/kept && test ! -e /etc/kept && test -e /etc/shells && stat -c %a /etc/hosts" &&
		[ "$VM_OUT" != 600 ]
}

# file_store_fsck IMAGE: copy liveunion-rw.img out of the FAT partition 3 of IMAGE (mtools, nothing
# mounted) and check it like store_fsck does.
file_store_fsck() {
	local off size
	read -r off size < <(part_of "$1" 3) || return 1
	rm -f "$PDIR/store.fsck"
	mcopy -n -i "$1@@$off" ::liveunion-rw.img "$PDIR/store.fsck" || return 1
	e2fsck -fn "$PDIR/store.fsck" >"$PDIR/fsck.out" 2>&1
}

# store_copy IMAGE: partition 3 of IMAGE copied to $PDIR/store.fsck for debugfs (store_cat) and dumpe2fs.
store_copy() {
	local off size
	read -r off size < <(part_of "$1" 3) || return 1
	dd if="$1" of="$PDIR/store.fsck" bs=512 skip=$((off / 512)) count=$((size / 512)) status=none
}
# store_ls DIR: names in a directory of the store copy.
store_ls() { debugfs -R "ls -l $1" "$PDIR/store.fsck" 2>/dev/null; }
# part_sum IMAGE: sha256 of partition 3, to prove nothing wrote to it.
part_sum() {
	local off size
	read -r off size < <(part_of "$1" 3) || return 1
	dd if="$1" bs=512 skip=$((off / 512)) count=$((size / 512)) status=none | sha256sum | cut -d' ' -f1
}

# cd_kvm_start NAME DISK "EXTRA KEYS": the ISO on an IDE CD (the boot medium) plus DISK as a virtio disk.
cd_kvm_start() {
	iso_boot_files || return 1
	# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
	vm_start "$1" kernel "" -kernel "$PDIR/kernel" -initrd "$PDIR/initrd" \
		-append "$(cat "$PDIR/cmdline") $3" -drive "file=$ISO,if=ide,index=2,media=cdrom,readonly=on" \
		-drive "file=$2,if=virtio,format=raw"
}

# fat_clean IMAGE: the FAT of partition 3 needs no repair and its dirty bit is clear (it was never left
# mounted read-write).
fat_clean() {
	local off size
	read -r off size < <(part_of "$1" 3) || return 1
	dd if="$1" of="$PDIR/fat.fsck" bs=512 skip=$((off / 512)) count=$((size / 512)) status=none || return 1
	if fsck.fat -n "$PDIR/fat.fsck" >"$PDIR/fatfsck.out" 2>&1 && ! grep -qi 'dirty' "$PDIR/fatfsck.out"; then
		return 0
	fi
	sed 's/^/# fsck.fat: /' "$PDIR/fatfsck.out" >&2
	return 1
}

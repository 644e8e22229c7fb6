#!/usr/bin/env bash
# summary: the ISO with live/10-base.squashfs overwritten by garbage ends in a rescue shell that names the file and the error
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"

require iso-exists test -f "$ISO"
bad=$OUT/tests/qemu/bad-squashfs.iso
at_exit "rm -f '$bad'"
# Patch the file's bytes in place at its LBA: the boot loaders, kernel and initrd stay exactly as built.
read -r lba size < <(xorriso -indev "$ISO" -find /live/10-base.squashfs -exec report_lba 2>/dev/null |
	awk -F' *, *' '/^File data lba:/ { print $2, $4 }')
require squashfs-located test -n "${lba:-}" -a -n "${size:-}"
cp "$ISO" "$bad"
yes 'this is not a squashfs image' | head -c "$size" |
	dd of="$bad" bs=2048 seek="$lba" conv=notrunc status=none
require garbage-written cmp -s <(dd if="$bad" bs=2048 skip="$lba" count=1 status=none | head -c 4) <(printf 'this')

require qemu-starts vm_start bad-squashfs cd-bios "$bad"
require rescue-prompt vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
errno_text='Invalid argument|I/O error|Input/output error|Bad message|No such device|Structure needs cleaning|Wrong medium type|Not a directory|Operation not permitted|Exec format error|Value too large'
check message-names-file-and-errno log_has "^liveunion: .*10-base\.squashfs.*: ($errno_text)"
check no-kernel-panic log_lacks 'Kernel panic'
check no-login-prompt log_lacks 'login: *$'
require rescue-shell-quiet vm_quiet
# shellcheck disable=SC2016 # expanded by the guest shell, which is the point
check rescue-shell-answers vm_run 'echo "answer $((6 * 7))"; cat /proc/cmdline'
check rescue-shell-output out_has '^answer 42$'
check rescue-sees-the-medium vm_run "grep ' /run/live/medium ' /proc/mounts"
vm_stop
finish

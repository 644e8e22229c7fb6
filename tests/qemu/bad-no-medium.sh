#!/usr/bin/env bash
# summary: the ISO's kernel and initrd with no medium attached end in a rescue shell that lists every device and why it was rejected
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "$0")/lib/vm.bash"

require iso-exists test -f "$ISO"
work=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-nomedium.XXXXXX")
at_exit "rm -rf '$work'"
# The kernel and initrd the BIOS menu boots (vm_start --cmdline takes them from the ISO): what is shipped.
require extract-kernel-initrd iso_boot_files "$ISO"
# A blank disk as a decoy: the init must see it and say why it is not ours (the empty CD drive of the pc machine too).
truncate -s 4M "$work/blank.img"
uuid=1999123123595900 # a build identity no device here carries

require qemu-starts vm_start bad-no-medium none '' --cmdline "console=ttyS0,115200n8 live.timeout=5 live.medium=UUID=$uuid" \
	-drive "file=$work/blank.img,if=virtio,format=raw"
require rescue-prompt vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
check says-not-found log_has "^liveunion: .*$uuid.*not found"
check lists-blank-disk-with-reason log_has '^liveunion: +vda: [^ ].*'
check lists-empty-cd-with-reason log_has '^liveunion: +sr0: [^ ].*'
check no-kernel-panic log_lacks 'Kernel panic'
require rescue-shell-quiet vm_quiet
# shellcheck disable=SC2016 # expanded by the guest shell, which is the point
check rescue-shell-answers vm_run 'echo "answer $((6 * 7))"; ls /sys/block'
check rescue-shell-output out_has '^answer 42$'
check rescue-shell-sees-disks out_has 'vda'
vm_stop
finish

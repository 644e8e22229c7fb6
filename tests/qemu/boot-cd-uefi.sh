#!/usr/bin/env bash
# summary: boot the ISO as an IDE CD, UEFI (OVMF + GRUB); / is overlay, medium read-only, writes land in tmpfs and vanish after reboot
# shellcheck source=tests/qemu/lib/boot.bash
. "$(dirname "$0")/lib/boot.bash"
boot_scenario cd-uefi

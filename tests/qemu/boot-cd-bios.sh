#!/usr/bin/env bash
# summary: boot the ISO as an IDE CD, BIOS (SeaBIOS + isolinux), two CPUs (nproc is 2: the tiny kernel is SMP); / is overlay, medium read-only, writes land in tmpfs and vanish after reboot
VM_SMP=${VM_SMP:-2}
# shellcheck source=tests/qemu/lib/boot.bash
. "$(dirname "$0")/lib/boot.bash"
boot_scenario cd-bios

#!/usr/bin/env bash
# summary: boot the ISO as a raw usb-storage disk on xHCI, BIOS; / is overlay, medium read-only, writes land in tmpfs and vanish after reboot
# shellcheck source=tests/qemu/lib/boot.bash
. "$(dirname "$0")/lib/boot.bash"
boot_scenario usb-bios

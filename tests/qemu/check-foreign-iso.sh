#!/usr/bin/env bash
# summary: liveunion-check against an ISO that is not ours (Debian's GRUB rescue CD, no serial console of its own), as a user runs it (./build.sh check --iso FILE SCENARIO): tests/check/scenarios/grub-rescue.sh checks GRUB's menu on the screen, types keys on the VGA keyboard to move GRUB's terminal to the serial port, reads commands' output there and sees GRUB's halt power off; each of its checks counted here
# shellcheck source=tests/qemu/lib/check.bash
. "$(dirname "$0")/lib/check.bash"
iso=/usr/lib/grub-rescue/grub-rescue-cdrom.iso
require grub-rescue-iso-installed test -s "$iso" # package grub-rescue-pc (TEST_PKGS)
res=$OUT/tests/foreign
rc=0
"$TOP/build.sh" check --iso "$iso" --out "$res" "$TOP/tests/check/scenarios/grub-rescue.sh" >"$VM_WORK/tap" 2>"$VM_WORK/err" || rc=$?
sed 's/^/# stderr: /' "$VM_WORK/err" | tail -n 20 >&2
relay_tap "$VM_WORK/tap"
check command-exit-status-0 test "$rc" -eq 0
check screenshots-kept test -s "$res/tests/grub-rescue/grub-menu.png" -a -s "$res/tests/grub-rescue/grub-after.png"
check junit-lists-the-checks grep -q '<testcase classname="grub-rescue" name="halt-powers-off"' "$res/tests/junit.xml"
finish

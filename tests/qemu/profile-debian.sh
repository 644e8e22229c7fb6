#!/usr/bin/env bash
# summary: the debian profile's own scenarios (configs/profiles/debian.tests/*.sh: systemd boots with no failed unit, live user on the serial console with sudo, DHCP, python3 and perl run, / is the overlay, medium read-only, writes gone after reboot, a new machine-id each boot) run as a user runs them, by ./build.sh --profile debian check, each of their checks counted here; TAP, junit.xml and the console log where the command says
# test-timeout: 1500 (a profile build when its inputs changed, then a Debian boot, reboot and poweroff under TCG)
# shellcheck source=tests/qemu/lib/profile.bash
. "$(dirname "$0")/lib/profile.bash"
# shellcheck source=tests/qemu/lib/check.bash
. "$(dirname "$0")/lib/check.bash"

t0=$(now_ms)
require profile-built profile_iso debian
vm_note "profile build (or cache check): $((($(now_ms) - t0) / 1000)) s"
res=$OUT/tests/profiles/debian
rc=0
# the ISO just built (the command would build it again: the same stages, cached)
"$TOP/build.sh" --profile debian check --iso "$OUT/liveunion-debian.iso" --out "$res" >"$VM_WORK/tap" 2>"$VM_WORK/err" || rc=$?
sed 's/^/# stderr: /' "$VM_WORK/err" | tail -n 20 >&2
relay_tap "$VM_WORK/tap"
check command-exit-status-0 test "$rc" -eq 0
check command-ran-the-profiles-scenarios grep -q '^ok [0-9]* - live-system/no-failed-units-after-reboot$' "$VM_WORK/tap"
check junit-written test -s "$res/tests/junit.xml"
check console-log-kept test -s "$res/tests/live-system/live-system.log"
finish

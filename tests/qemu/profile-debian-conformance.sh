#!/usr/bin/env bash
# summary: the union conformance suite (tests/conformance) on the debian profile's live root: its 10-base + the 90-conformance layer, systemd running, BIOS CD; every check passes, only the overlayfs limits docs/tests.md documents are reported
VM_TIMEOUT=${VM_TIMEOUT:-600}
# shellcheck source=tests/qemu/lib/profile.bash
. "$(dirname "$0")/lib/profile.bash"
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash" # CONFORMANCE_KNOWN_LIMITS, the one list (tests/unit/known-limits.sh)
VM_MEM=${PROFILE_VM_MEM:-1024}

iso=$OUT/tests/conformance-debian.iso

# shellcheck disable=SC2317 # runs through require
# debian_conformance_iso: the profile's own 10-base (built or cached) under the test layer; no stage runs again.
debian_conformance_iso() {
	profile_iso debian && "$TOP/tests/conformance/mklayer.sh" >&2 &&
		ISO_BASE_LAYER=$OUT/profiles/debian/10-base.squashfs \
			"$TOP/build.sh" iso-with "$iso" "$OUT/tests/90-conformance.squashfs" >&2
}

require test-iso-built debian_conformance_iso
require qemu-starts vm_start profile-debian-conformance cd-bios "$iso"
require login profile_login
check systemd-is-pid-1 vm_run 'readlink /proc/1/exe'
vm_run "grep ' / ' /proc/mounts | tail -n 1"
check root-is-overlay-with-xino out_has '^[^ ]+ / overlay .*xino=on'
check test-layer-stacked vm_run "grep ' /run/live/layers/90-conformance squashfs ro' /proc/mounts"
vm_run '/usr/lib/liveunion/unionconf -v' 400
rc=$?
printf '%s\n' "$VM_OUT" >"$OUT/tests/qemu/profile-debian-conformance.unionconf.log"
printf '%s\n' "$VM_OUT" | grep -E '^(FAIL|known-limit) ' | sed 's/^/# guest: /' >&2
check unionconf-exit-0 test "$rc" -eq 0
check unionconf-0-failed conformance_passed
check readdir-20000-entries-once out_has '^ok readdir.big-once$'
check namemax-patched out_has '^ok namemax.reported$'
check one-st_dev out_has '^ok stdev.one-st_dev$'
check mv-of-lower-dir-works out_has '^ok rename.dir-mv$'
check only-documented-known-limits conformance_only_documented_limits
vm_stop
finish

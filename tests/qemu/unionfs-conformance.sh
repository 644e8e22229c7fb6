#!/usr/bin/env bash
# summary: the union conformance suite (tests/conformance) on the live root of a test ISO (our kernel, initramfs, 10-base + 90-conformance): every check passes, only documented overlayfs limits reported
VM_TIMEOUT=${VM_TIMEOUT:-420}
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"

# The overlayfs limits README.md (Tests) documents for the init's options; any other known-limit line is a failure.
KNOWN_LIMITS='links.hardlink-copyup mmap.shared-lower-then-write rename.dir-lower copyup.link.lower stdev.copyup-ino-after-eviction'

# shellcheck disable=SC2317 # these predicates run through check
summary_line() { printf '%s\n' "$VM_OUT" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1; }
# shellcheck disable=SC2317
suite_passed() { # every check passed, and enough of them ran for the run to mean something
	local s p f
	s=$(summary_line)
	[ -n "$s" ] || { vm_note "no 'N passed, N failed' line from unionconf"; return 1; }
	p=${s%% passed*} f=${s#*passed, } f=${f%% failed}
	vm_note "unionconf: $s"
	[ "$f" -eq 0 ] && [ "$p" -ge 90 ]
}
# shellcheck disable=SC2317
only_documented_limits() {
	local n bad=0
	while read -r n; do
		case " $KNOWN_LIMITS " in
		*" $n "*) vm_note "known limit (README.md): $n" ;;
		*) vm_note "known-limit $n is not a documented overlayfs limit"; bad=1 ;;
		esac
	done < <(printf '%s\n' "$VM_OUT" | sed -n 's/^known-limit \([^:]*\):.*/\1/p')
	return "$bad"
}

require test-iso-built conformance_iso
require qemu-starts vm_start unionfs-conformance cd-bios "$CONFORMANCE_ISO"
require login vm_login
vm_run "grep ' / ' /proc/mounts | tail -n 1"
check root-is-overlay-with-xino out_has '^[^ ]+ / overlay .*xino=on'
check test-layer-stacked vm_run "grep ' /run/live/layers/90-conformance squashfs ro' /proc/mounts"
check unionconf-is-in-the-union vm_run 'test -x /usr/lib/liveunion/unionconf && test -d /srv/unionconf'

t0=$(now_ms)
vm_run '/usr/lib/liveunion/unionconf -v' 300
rc=$?
t1=$(now_ms)
printf '%s\n' "$VM_OUT" >"$OUT/tests/qemu/unionfs-conformance.unionconf.log"
vm_note "unionconf ran $(((t1 - t0) / 1000)).$(((t1 - t0) % 1000 / 100))s in the guest; its output: $OUT/tests/qemu/unionfs-conformance.unionconf.log"
printf '%s\n' "$VM_OUT" | grep -E '^(FAIL|known-limit) |^# (big|union mount)' | sed 's/^/# guest: /' >&2
check unionconf-exit-0 test "$rc" -eq 0
check unionconf-0-failed suite_passed
check readdir-20000-entries-once out_has '^ok readdir.big-once$'
check readdir-seekdir-20000 out_has '^ok readdir.seekdir$'
check readdir-concurrent out_has '^ok readdir.concurrent$'
check copyup-fchmod-on-rdonly-fd out_has '^ok copyup.fchmod-rdonly.lower$'
check namemax-patched out_has '^ok namemax.reported$'
check namemax-lower-256-lookup out_has '^ok namemax.lower-256-lookup$'
check one-st_dev out_has '^ok stdev.one-st_dev$'
check copyup-keeps-st_ino out_has '^ok stdev.copyup-keeps-ino$'
check mv-of-lower-dir-works out_has '^ok rename.dir-mv$'
check only-documented-known-limits only_documented_limits
vm_stop
finish

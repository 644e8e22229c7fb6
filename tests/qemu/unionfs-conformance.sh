#!/usr/bin/env bash
# summary: the union conformance suite (tests/conformance) on the live root of a test ISO (our kernel, initramfs, three squashfs layers: 10-base, 50-middle, 90-conformance; tmpfs upper with index and redirect_dir): every check passes, only documented overlayfs limits reported
VM_TIMEOUT=${VM_TIMEOUT:-420}
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"

require test-iso-built conformance_iso
require qemu-starts vm_start unionfs-conformance cd-bios "$CONFORMANCE_ISO"
require login vm_login
vm_run "grep ' / ' /proc/mounts | tail -n 1"
check root-is-overlay-with-xino out_has '^[^ ]+ / overlay .*xino=on'
# the tmpfs upper's options (initramfs/init/stack.c); overlayfs would show index=off had it dropped index for a lower
# without a UUID (squashfs before kernel/patches/0003)
check root-has-index-on out_has '^[^ ]+ / overlay .*[,]index=on'
check root-has-redirect_dir-on out_has '^[^ ]+ / overlay .*[,]redirect_dir=on'
check no-null-uuid-fallback fails vm_run "dmesg | grep -i 'uuid detected'"
check test-layer-stacked vm_run "grep ' /run/live/layers/90-conformance squashfs ro' /proc/mounts"
check three-squashfs-layers-is-3 vm_fact "grep -c ' /run/live/layers/[^ ]* squashfs ro' /proc/mounts" 3
check unionconf-is-in-the-union vm_run 'test -x /usr/lib/liveunion/unionconf && test -d /srv/unionconf'

t0=$(now_ms)
vm_run '/usr/lib/liveunion/unionconf -v' 300
rc=$?
t1=$(now_ms)
printf '%s\n' "$VM_OUT" >"$OUT/tests/qemu/unionfs-conformance.unionconf.log"
vm_note "unionconf ran $(((t1 - t0) / 1000)).$(((t1 - t0) % 1000 / 100))s in the guest; its output: $OUT/tests/qemu/unionfs-conformance.unionconf.log"
printf '%s\n' "$VM_OUT" | grep -E '^(FAIL|known-limit) |^# (big|union mount)' | sed 's/^/# guest: /' >&2
check unionconf-exit-0 test "$rc" -eq 0
check unionconf-0-failed conformance_passed
check readdir-20000-entries-once out_has '^ok readdir.big-once$'
check readdir-seekdir-20000 out_has '^ok readdir.seekdir$'
check readdir-concurrent out_has '^ok readdir.concurrent$'
check copyup-fchmod-on-rdonly-fd out_has '^ok copyup.fchmod-rdonly.lower$'
check namemax-patched out_has '^ok namemax.reported$'
check namemax-lower-256-lookup out_has '^ok namemax.lower-256-lookup$'
check one-st_dev out_has '^ok stdev.one-st_dev$'
check copyup-keeps-st_ino out_has '^ok stdev.copyup-keeps-ino$'
check mv-of-lower-dir-works out_has '^ok rename.dir-mv$'
# kernel/patches/0003 (a UUID for each squashfs) with index=on: what three layers used to lose
check link-of-lower-keeps-ino out_has '^ok copyup.link.lower$'
check ino-kept-after-eviction out_has '^ok stdev.copyup-ino-after-eviction$'
check hardlinks-one-inode-after-copyup out_has '^ok links.hardlink-copyup$'
# redirect_dir=on: rename(2) of lower and merged directories, also to another parent
check rename-lower-dir out_has '^ok rename.dir-lower$'
check rename-lower-dir-across-parents out_has '^ok rename.dir-lower-across$'
check rename-merged-dir out_has '^ok rename.dir-merged$'
check rename-merged-dir-across-parents out_has '^ok rename.dir-merged-across$'
# kernel/patches/0002: every call on a missing 256-byte name fails ENAMETOOLONG
check missing-256-all-11-calls-pass test "$(printf '%s\n' "$VM_OUT" | grep -c '^ok namemax.missing-256\.')" -eq 11
check only-documented-known-limits conformance_only_documented_limits
vm_stop
finish

#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# Host test of the stacker entry (`liveunion-stack --root DIR`, initramfs/init/stacker.c): the init's steps up to
# the overlay inside another initramfs (dracut's), against a tiny ISO on a loop device found through a fake
# /sys/class/block. Both sides: a good medium leaves the finished root mounted at DIR, exit 0, the plan in
# run/live/plan, and nothing switched; a failure (no medium, no init, DIR already mounted) exits non-zero after
# the same report as the init's (the step, why, the plan), without a rescue shell and with no root at DIR; a
# wrong command line exits 2. The real binary (the host build of the init) is run too, by its three names.
# Needs root; runs in a private mount namespace and detaches every loop device it attached.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
needs_root loop devices, mounts
private_mounts "$@"

# shellcheck source=tests/unit/lib/stack.bash
. "$TOP/tests/unit/lib/stack.bash"
UUID=2026010112345617
stack_init init-stacker
gcc "${LIVE_CFLAGS[@]}" -I"$SRC" -o "$B/init-stacker-driver" "$TOP/tests/unit/init-stacker-driver.c" "${init_srcs[@]}"
# the same driver under ASan/UBSan (init-unit.sh's flags): the good medium and a failure run through it too
gcc "${LIVE_CFLAGS[@]}" -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	-I"$SRC" -o "$B/init-stacker-driver-asan" "$TOP/tests/unit/init-stacker-driver.c" "${init_srcs[@]}"
make -s -C "$SRC" O="$B" host # the real binary, main.c included

# The medium: two layers, 20-extra over 10-base; the base has an init.
mkdir -p "$tmp/base/sbin" "$tmp/base/etc" "$tmp/extra/etc" "$tmp/iso/live"
printf '#!/bin/sh\necho fake init\n' >"$tmp/base/sbin/init"
chmod 0755 "$tmp/base/sbin/init"
echo base >"$tmp/base/etc/who"
echo extra >"$tmp/extra/etc/who"
mksquashfs "$tmp/base" "$tmp/iso/live/10-base.squashfs" -noappend -quiet -all-root >/dev/null
mksquashfs "$tmp/extra" "$tmp/iso/live/20-extra.squashfs" -noappend -quiet -all-root >/dev/null
xorriso -as mkisofs -quiet -V LIVEUNION --modification-date="$UUID" -o "$tmp/medium.iso" "$tmp/iso" 2>/dev/null
sys=$tmp/sys dev=$tmp/dev
stack_medium "$tmp/medium.iso" "$tmp/iso"

run=$tmp/run/live
root=$tmp/sysroot
mkdir -p "$root"
# stack CMDLINE [STACKER ARGS...]: the stacker's exit status in $rc, its messages in $tmp/out ($driver: which build)
driver=init-stacker-driver
stack() {
	printf '%s\n' "$1" >"$tmp/cmdline"
	shift
	rc=0
	timeout 60 "$B/$driver" "$sys" "$dev" "$tmp/cmdline" "$run" "${stand_in:--}" -- "$@" </dev/null \
		>"$tmp/out" 2>&1 || rc=$?
}
mounted() { findmnt -n "$1" >/dev/null; }

# 1. A good medium: the root is left at --root, nothing else happens.
stack "live.medium=UUID=$UUID live.timeout=5 live.persist=off" --root "$root"
check "exit 0 with the root ready" test "$rc" = 0 || cat "$tmp/out"
check "says where the root is" grep -q "the live root is ready at $root (init /sbin/init): the caller switches to it" "$tmp/out"
check "the same messages as the init (the stack)" grep -q 'stack, bottom to top (2 layer(s), unverified): 10-base 20-extra$' "$tmp/out"
check "an overlay is mounted at --root" test "$(findmnt -n -o FSTYPE "$root")" = overlay
check "the top layer wins" test "$(cat "$root/etc/who")" = extra
check "the root is writable" sh -c "echo hi >'$root/new' && test \"\$(cat '$root/new')\" = hi"
check "the change lands in run/live/upper" test -f "$run/upper/upper/new"
check "the layers sit under run/live" test -d "$run/layers/10-base/etc"
check "run/live/plan: the steps up to the overlay done" grep -qx 'done=medium,layers,toram,store,upper,overlay' "$run/plan"
check "nothing switched: no switch in the plan" no_line 'done=.*switch' "$run/plan"
check "nothing switched: no 'switching to'" no_line 'switching to' "$tmp/out"
if [ -f "/lib/modules/$(uname -r)/modules.dep" ]; then
	check "device drivers left to the caller's udev: no coldplug" grep -q "device drivers are the caller's (udev)" "$tmp/out"
fi

# 2. The root is mounted already: a second run refuses before doing anything.
stack "live.medium=UUID=$UUID live.timeout=5 live.persist=off" --root "$root"
check "a second run on the mounted root exits 1" test "$rc" = 1
check "says something is mounted there" grep -q -- "--root $root: something is mounted there already" "$tmp/out"
check "the first root is still there" test "$(cat "$root/etc/who")" = extra
unstack

# 3. No medium: the report of the init, exit 1, no shell, no root.
stack "live.medium=UUID=1999-01-01-00-00-00-00 live.timeout=1" --root "$root"
check "no medium: exit 1" test "$rc" = 1
check "the listing of what was seen" grep -q "  $ln: label LIVEUNION, UUID $UUID != wanted UUID 1999010100000000" "$tmp/out"
check "the failed step is named" grep -q '^liveunion: step medium failed$' "$tmp/out"
check "the plan is printed" grep -q '^liveunion: the plan was:$' "$tmp/out"
check "says the stacker gives up" grep -q "the root is not ready at $root: the stacker exits with status 1" "$tmp/out"
check "no rescue shell" no_line 'rescue' "$tmp/out"
check "nothing mounted at --root" fails mounted "$root"
check "run/live/plan: nothing done" grep -qx 'done=' "$run/plan"
unstack

# 4. No init in the root: reported as the switch step's failure; the stack stays for inspection.
stack "live.medium=UUID=$UUID live.timeout=5 live.init=/sbin/missing" --root "$root"
check "no init: exit 1" test "$rc" = 1
check "the init is named" grep -q "find /sbin/missing in the new root $root: No such file or directory" "$tmp/out"
check "as the switch step" grep -q '^liveunion: step switch failed$' "$tmp/out"
unstack

# 5. A wrong command line: exit 2 and the usage.
stack "" --root
check "--root without a directory: exit 2" test "$rc" = 2
check "the usage is printed" grep -q 'usage: liveunion-stack --root DIR' "$tmp/out"
stack "" --root relative/dir
check "a relative --root: exit 1" test "$rc" = 1
check "says it is not absolute" grep -q -- '--root relative/dir: not an absolute path' "$tmp/out"
check "nothing mounted for a relative --root" absent "$tmp/" findmnt -rn -o TARGET

# 6. The same two runs (a good medium, no medium) under ASan/UBSan: any report fails them.
driver=init-stacker-driver-asan
stack "live.medium=UUID=$UUID live.timeout=5 live.persist=off" --root "$root"
check "ASan/UBSan: exit 0 with the root ready" test "$rc" = 0 || cat "$tmp/out"
check "ASan/UBSan: the top layer wins" test "$(cat "$root/etc/who")" = extra
check "ASan/UBSan: no sanitizer report" no_line 'Sanitizer|runtime error' "$tmp/out"
unstack
stack "live.medium=UUID=1999-01-01-00-00-00-00 live.timeout=1" --root "$root"
check "ASan/UBSan, no medium: exit 1 after the report" test "$rc" = 1
check "ASan/UBSan, no medium: no sanitizer report" no_line 'Sanitizer|runtime error' "$tmp/out"
unstack
driver=init-stacker-driver

# 7. The real binary (main.c's dispatch), by argv[0] and by --stack, as a process that is not PID 1: it reads the
# real /proc/cmdline (a file bind-mounted over it, in this private mount namespace) and writes /run/live (a tmpfs
# here). No medium with that UUID exists anywhere: the report and exit 1.
ln -sf init-host "$B/liveunion-stack"
ln -sf init-host "$B/mount.liveunion"
mkdir -p "$tmp/run-real"
mount -t tmpfs run "$tmp/run-real"
mount --bind "$tmp/run-real" /run
printf 'live.medium=UUID=1999-01-01-00-00-00-17 live.timeout=1\n' >"$tmp/cmdline-real"
mount --bind "$tmp/cmdline-real" /proc/cmdline
# by argv[0]; by --stack; as mount(8) runs a helper (systemd's sysroot.mount: mount -t liveunion liveunion DIR)
for how in "liveunion-stack --root ROOT" "init-host --stack --root ROOT" "mount.liveunion liveunion ROOT -o rw"; do
	read -ra args <<<"${how//ROOT/$root}"
	rc=0
	timeout 60 "$B/${args[0]}" "${args[@]:1}" </dev/null >"$tmp/out" 2>&1 || rc=$?
	check "real binary ($how): exit 1" test "$rc" = 1
	check "real binary ($how): the failed step" grep -q '^liveunion: step medium failed$' "$tmp/out"
	check "real binary ($how): the plan in /run/live/plan" grep -qx 'medium=UUID=1999-01-01-00-00-00-17' /run/live/plan
	check "real binary ($how): nothing mounted at --root" fails mounted "$root"
	rm -f /run/live/plan
done
rc=0
timeout 60 "$B/mount.liveunion" liveunion </dev/null >"$tmp/out" 2>&1 || rc=$?
check "mount.liveunion without a directory: exit 2" test "$rc" = 2
check "mount.liveunion says what mount(8) should give" grep -q 'mount.liveunion: expected SPEC DIR' "$tmp/out"
rc=0
timeout 60 "$B/init-host" </dev/null >"$tmp/out" 2>&1 || rc=$?
check "real binary as plain init, not PID 1: exit 2" test "$rc" = 2
check "and it names the stacker" grep -q -- '--stack --root DIR' "$tmp/out"
umount /proc/cmdline
umount /run

stack_detach
finish

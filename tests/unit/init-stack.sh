#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# Host test of the initramfs init's real stacking code: a tiny ISO (live/10-base + live/20-extra
# squashfs) on a loop device, found through a fake /sys/class/block, stacked under a tmpfs with
# overlayfs; checks both sides (medium and layers read-only, overlay writable), xino, layer order,
# live.layers=, live.toram, the "not found" listing and the init check inside the new root.
# Needs root; runs in a private mount namespace and detaches every loop device it attached.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
needs_root loop devices, mounts
private_mounts "$@"

# shellcheck source=tests/unit/lib/stack.bash
. "$TOP/tests/unit/lib/stack.bash"
UUID=2026010112345600
stack_init init-stack
gcc "${LIVE_CFLAGS[@]}" -I"$SRC" -o "$B/init-stack-driver" \
	"$TOP/tests/unit/init-stack-driver.c" "${init_srcs[@]}"

# The medium: two layers; 20-extra overrides a file of 10-base.
mkdir -p "$tmp/base/bin" "$tmp/base/sbin" "$tmp/base/etc" "$tmp/extra/etc" "$tmp/iso/live"
printf '#!/bin/sh\necho fake init\n' >"$tmp/base/bin/fake-init"
chmod 0755 "$tmp/base/bin/fake-init"
ln -s /bin/fake-init "$tmp/base/sbin/init" # absolute, like busybox's: must resolve inside the new root
echo base >"$tmp/base/etc/who"
echo base-only >"$tmp/base/etc/base-only"
echo extra >"$tmp/extra/etc/who"
# incompressible and more than one 4 MiB copy chunk: live.toram reads 10-base from the device directly, in chunks
head -c $((9 << 20)) /dev/urandom >"$tmp/base/blob"
mksquashfs "$tmp/base" "$tmp/iso/live/10-base.squashfs" -noappend -quiet -all-root >/dev/null
mksquashfs "$tmp/extra" "$tmp/iso/live/20-extra.squashfs" -noappend -quiet -all-root >/dev/null
echo "not a layer" >"$tmp/iso/live/README"
xorriso -as mkisofs -quiet -V LIVEUNION --modification-date="$UUID" -o "$tmp/medium.iso" "$tmp/iso" 2>/dev/null

# A fake /sys/class/block and /dev: our medium, an empty drive, a tiny disk, a non-ISO disk.
sys=$tmp/sys
dev=$tmp/dev
stack_medium "$tmp/medium.iso" "$tmp/iso"
medium_type=iso9660
[ -z "$stand_in" ] || medium_type=squashfs
mkdir -p "$sys/sr0" "$sys/vdb" "$sys/vdc"
truncate -s 4096 "$tmp/small.img"
truncate -s 1M "$tmp/zero.img"
ln -s "$tmp/small.img" "$dev/vdb"
ln -s "$tmp/zero.img" "$dev/vdc"

run=$tmp/run/live
root=$tmp/newroot
drive() { "$B/init-stack-driver" "$sys" "$dev" "$run" "$root" "$1" ${stand_in:+"$stand_in"} >"$tmp/out" 2>&1; }
same_dev() { local a b; a=$(stat -c %d "$1") && b=$(stat -c %d "$2") && [ -n "$a" ] && [ "$a" = "$b" ]; }

# 1. Wrong UUID: times out and says why each device was rejected.
if drive "live.medium=UUID=1999-01-01-00-00-00-00 live.timeout=1"; then
	bad "a wrong UUID must not boot"
else
	ok "a wrong UUID fails"
fi
o=$(cat "$tmp/out")
check "listing after the timeout" grep -q 'not found after 1 s; block devices seen:' <<<"$o"
check "empty drive: cannot open" grep -q '  sr0: cannot open: No such file or directory' <<<"$o"
check "tiny disk: too small" grep -q '  vdb: too small for ISO9660' <<<"$o"
check "other disk: not ISO9660" grep -q '  vdc: not ISO9660' <<<"$o"
check "our disk: label and UUID != wanted" \
	grep -q "  $ln: label LIVEUNION, UUID $UUID != wanted UUID 1999010100000000" <<<"$o"
unstack

# 2. The normal boot (UUID with hyphens).
if drive "live.medium=UUID=2026-01-01-12-34-56-00 live.timeout=5"; then
	ok "stack built"
else
	bad "stack built"
	cat "$tmp/out"
fi
check "medium found on the loop device" grep -q "medium UUID=2026-01-01-12-34-56-00 found on $dev/$ln" "$tmp/out"
check "overlay mounted on the new root" test "$(findmnt -n -o FSTYPE "$root")" = overlay
check "overlay has xino=on" grep -q 'xino=on' <<<"$(findmnt -n -o OPTIONS "$root")"
# a tmpfs upper gets redirect_dir and index (the host kernel drops index itself for two squashfs without a UUID)
check "overlay has redirect_dir=on (tmpfs upper)" grep -q 'redirect_dir=on' <<<"$(findmnt -n -o OPTIONS "$root")"
check "the init names the options" grep -q 'index=on, redirect_dir=on: tmpfs upper' "$tmp/out"
check "top layer wins" test "$(cat "$root/etc/who")" = extra
check "lower file readable" test "$(cat "$root/etc/base-only")" = base-only
check "medium is $medium_type read-only" grep -q "^$medium_type ro" <<<"$(findmnt -n -o FSTYPE,OPTIONS "$run/medium")"
for d in medium layers/10-base; do
	if err=$(touch "$run/$d/x" 2>&1); then
		bad "write to run/live/$d must fail"
	else
		check "write to run/live/$d fails with EROFS" grep -q 'Read-only file system' <<<"$err"
	fi
done
check "write to the overlay works" sh -c "echo hi >'$root/new-file' && test \"\$(cat '$root/new-file')\" = hi"
check "change lands in run/live/upper/upper" test -f "$run/upper/upper/new-file"
check "changing a lower file works (copy-up)" sh -c "echo changed >'$root/etc/base-only' && grep -q changed '$root/etc/base-only'"
check "the layer itself is unchanged" test "$(cat "$run/layers/10-base/etc/base-only")" = base-only
check "same st_dev for lower and new files (xino=on)" same_dev "$root/etc/who" "$root/new-file"
check "upper is a tmpfs" test "$(findmnt -n -o FSTYPE "$run/upper")" = tmpfs
for d in medium layers/10-base layers/20-extra upper/upper upper/work; do
	check "run/live/$d exists" test -d "$run/$d"
done
check "plan names the layers bottom first" grep -qx 'layers=10-base,20-extra' "$run/plan"
check "plan names the device" grep -qx "medium.device=${medium_sq_loop:-$dev/$ln}" "$run/plan"
check "plan says overlay done" grep -qx 'done=medium,layers,toram,store,upper,overlay' "$run/plan"
check "absolute /sbin/init symlink resolved inside the new root" grep -q 'init /sbin/init found' "$tmp/out"
check "README on the medium ignored" no_line README "$run/plan"
unstack

# 3. live.layers= picks layers; a missing init is reported.
if drive "live.layers=10-base live.init=/sbin/missing"; then
	bad "a missing init must be reported"
else
	ok "a missing init is reported"
fi
check "live.layers=10-base leaves out 20-extra" test "$(cat "$root/etc/who" 2>/dev/null)" = base
check "missing init named" grep -q 'find /sbin/missing in the new root .*: No such file or directory' "$tmp/out"
unstack

# 4. live.toram: layers copied to RAM, loop devices moved onto the copies, medium released.
if drive "live.toram live.debug live.timeout=5"; then ok "toram stack built"; else
	bad "toram stack built"
	cat "$tmp/out"
fi
check "toram progress line" grep -Eq 'toram: [0-9.]+ / [0-9.]+ MiB \(100%\), [0-9.]+ MB/s' "$tmp/out"
check "toram copy verified" grep -q 'live.toram: the RAM copy matches what was read' "$tmp/out"
if [ "$medium_type" = iso9660 ]; then
	check "toram reads the big layer from the device" \
		grep -q "live.toram: $run/medium/live/10-base.squashfs lies at byte [0-9]* of $dev/$ln: read from there with O_DIRECT" "$tmp/out"
else # squashfs has no block map: the big layer goes through the file system too
	check "toram reads the big layer through the file system (no block map)" \
		grep -q "live.toram: $run/medium/live/10-base.squashfs is read through the file system: no block map" "$tmp/out"
fi
check "toram reads the small layer through the file system" \
	grep -q "live.toram: $run/medium/live/20-extra.squashfs is read through the file system" "$tmp/out"
check "toram: the directly read layer is intact" cmp -s "$tmp/base/blob" "$root/blob"
check "medium released" grep -q 'the medium .* is released' "$tmp/out"
check "layers still mounted" test -d "$run/layers/10-base/etc"
check "medium no longer mounted" absent " $run/medium " cat /proc/self/mounts
check "layers still readable after the medium is gone" test "$(cat "$root/etc/who")" = extra
check "loop devices read the RAM copies" grep -q "$run/toram/10-base.squashfs" <<<"$(losetup -n -O BACK-FILE)"
check "plan records the toram result" grep -q '^toram.result=copied .*medium released' "$run/plan"
unstack

# 5. live.layers=-name leaves one out; the stack is printed bottom to top.
if drive "live.layers=-20-extra live.timeout=5"; then ok "stack without 20-extra built"; else
	bad "stack without 20-extra built"
	cat "$tmp/out"
fi
check "live.layers=-20-extra leaves it out" test "$(cat "$root/etc/who" 2>/dev/null)" = base
check "the exclusion is said" grep -q 'live.layers=-20-extra leaves out: 20-extra' "$tmp/out"
check "stack printed bottom to top" grep -q 'stack, bottom to top (1 layer(s), unverified): 10-base$' "$tmp/out"
check "unverified boot warns" grep -q 'WARNING: no live.verify= root hashes' "$tmp/out"
unstack
drive "live.timeout=5" || true
check "both layers printed bottom to top" grep -q 'stack, bottom to top (2 layer(s), unverified): 10-base 20-extra$' "$tmp/out"
unstack
stack_detach

# 6. Fifty layers, through the new mount API and through mount(2) (pre-6.8 kernels, one page of options):
# each adds a file, the top one wins /etc/who, and the stack is printed bottom to top.
mkdir -p "$tmp/iso50/live"
cp "$tmp/iso/live/10-base.squashfs" "$tmp/iso50/live/"
want50=10-base
for i in $(seq 11 59); do
	mkdir -p "$tmp/l$i/layers" "$tmp/l$i/etc"
	echo "$i" >"$tmp/l$i/layers/$i"
	echo "layer$i" >"$tmp/l$i/etc/who"
	mksquashfs "$tmp/l$i" "$tmp/iso50/live/$i-l$i.squashfs" -noappend -quiet -all-root >/dev/null
	want50="$want50 $i-l$i"
done
xorriso -as mkisofs -quiet -V LIVEUNION --modification-date=2026010112345650 -o "$tmp/m50.iso" "$tmp/iso50" 2>/dev/null
sys=$tmp/sys50 dev=$tmp/dev50
stack_medium "$tmp/m50.iso" "$tmp/iso50"
for driver in init-stack-driver init-stack-driver-legacy; do
	no_plus=0 # legacy: the kernel refuses "lowerdir+" as before 6.8 (a seccomp filter in the driver)
	[ "$driver" = init-stack-driver-legacy ] && no_plus=1
	if INIT_STACK_NO_LOWERDIR_PLUS=$no_plus "$B/init-stack-driver" "$sys" "$dev" "$run" "$root" \
		"live.medium=UUID=2026010112345650 live.timeout=5 live.debug" ${stand_in:+"$stand_in"} >"$tmp/out" 2>&1; then
		ok "$driver: 50 layers stacked"
	else
		bad "$driver: 50 layers stacked"
		tail -n 20 "$tmp/out"
	fi
	check "$driver: 50 layers printed bottom to top" grep -qF "stack, bottom to top (50 layer(s), unverified): $want50" "$tmp/out"
	check "$driver: top layer wins" test "$(cat "$root/etc/who" 2>/dev/null)" = layer59
	check "$driver: every layer's file is there" test "$(find "$root/layers" -mindepth 1 2>/dev/null | wc -l)" = 49
	check "$driver: base under them" test -x "$root/bin/fake-init"
	if [ "$driver" = init-stack-driver-legacy ]; then
		check "legacy: mount(2) was used" grep -q 'new mount API refused' "$tmp/out"
		check "legacy: lowerdir named relative" grep -q 'lowerdir=59-l59:58-l58:' <<<"$(findmnt -n -o OPTIONS "$root")"
	else
		check "new API: lowerdir+ used" grep -q 'lowerdir+=' <<<"$(findmnt -n -o OPTIONS "$root")"
	fi
	unstack
done
stack_detach
check "no loop device left pointing into the test" \
	test -z "$(losetup -n -O BACK-FILE | grep -F "$tmp/" || true)"

finish

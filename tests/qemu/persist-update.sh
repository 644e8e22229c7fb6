#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check and require
# summary: an A/B stick (./build.sh usb --slots) updated in place three times in a row (a changed layer each time): only the changed bytes copied, the new slot on trial then kept by a healthy boot, the store's file kept; a tampered image (named) and one too large for the stick refused with nothing written; a bad update (its boot never gets healthy) rolled back by GRUB within its tries, said at boot and by liveunion update; --rollback by hand
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img tag=$$

# variant N: $PDIR/vN.iso, the built ISO plus a layer 20-release holding /etc/release-n = N (the "new release").
variant() {
	rm -rf "$PDIR/l" && mkdir -p "$PDIR/l/etc" && echo "$1" >"$PDIR/l/etc/release-n" &&
		env -u SOURCE_DATE_EPOCH mksquashfs "$PDIR/l" "$PDIR/20-release.squashfs" -noappend -quiet -no-progress -all-root \
			-all-time 1700000000 -mkfs-time 1700000000 >/dev/null &&
		"$TOP/build.sh" iso-with "$PDIR/$1.iso" "$PDIR/20-release.squashfs" >"$PDIR/iso-with.out" 2>&1
}
# bad_variant: a release whose live system never gets healthy: its start-up restarts the machine at once.
bad_variant() {
	rm -rf "$PDIR/l" && mkdir -p "$PDIR/l/etc/init.d" &&
		printf '#!/bin/sh\necho "bad release: restarting" >/dev/console\nreboot -f\n' >"$PDIR/l/etc/init.d/rcS" &&
		chmod 755 "$PDIR/l/etc/init.d/rcS" &&
		env -u SOURCE_DATE_EPOCH mksquashfs "$PDIR/l" "$PDIR/20-release.squashfs" -noappend -quiet -no-progress -all-root \
			-all-time 1700000000 -mkfs-time 1700000000 >/dev/null &&
		"$TOP/build.sh" iso-with "$PDIR/bad.iso" "$PDIR/20-release.squashfs" >"$PDIR/iso-with.out" 2>&1
}
slots() { bash "$TOP/iso/mkusb.sh" "$@" >"$PDIR/slots.out" 2>&1; }
said() { grep -qE -- "$1" "$PDIR/slots.out"; }
# copied_little: the last update copied less than a quarter of the image (the copy figure is in the report)
copied_little() {
	local w n
	read -r w n < <(sed -n 's/.*copied \([0-9]*\) of \([0-9]*\) bytes.*/\1 \2/p' "$PDIR/slots.out")
	vm_note "update copied ${w:-?} of ${n:-?} bytes"
	[ -n "$w" ] && [ "$w" -gt 0 ] && [ $((w * 4)) -lt "$n" ]
}
# boot_release N: boot the stick, log in, the release is N and the store's file is there.
boot_release() {
	vm_start "persist-update-$1" stick-bios "$img" && vm_login && vm_fact "cat /etc/release-n" "$1" &&
		vm_fact "cat /root/kept" "$tag"
}

# the first boot: no store file yet
boot_release_first() { vm_start persist-update-v0 stick-bios "$img" && vm_login && vm_fact "cat /etc/release-n" v0; }
# store_fsck_slots: the stick's store copied out of its FAT and checked
store_fsck_slots() {
	rm -f "$PDIR/store.fsck" && mcopy -n -i "$img@@1M" ::/liveunion/liveunion-rw.img "$PDIR/store.fsck" &&
		e2fsck -fn "$PDIR/store.fsck" >"$PDIR/fsck.out" 2>&1
}

for v in v0 v1 v2 v3; do require "iso-$v-made" variant "$v"; done
require bad-iso-made bad_variant
require stick-made slots --slots --iso "$PDIR/v0.iso" -o "$img" --persist-size 16M
check status-slot-a slots --status "$img"
check status-says-a-boots said '^boots: slot a$'

require boot-v0 boot_release_first
check store-file-written vm_run "echo $tag >/root/kept && sync"
check booted-slot-a vm_fact "sed -n 's/^medium.iso=//p' /run/live/plan" /liveunion/a.iso
check tool-says-a-good vm_run "liveunion update --status"
check tool-a-good-out out_has '^slot a is good$'
require poweroff-v0 vm_poweroff

# Three updates in a row, each with a changed layer: a, b, a, b.
slot=a
for v in v1 v2 v3; do
	if [ $slot = a ]; then new=b; else new=a; fi
	check "update-$v" slots --update "$img" --iso "$PDIR/$v.iso"
	check "update-$v-checked-layers" said 'checked [^ ]+: 2 layer\(s\) match their root hashes'
	check "update-$v-switched" said "switched: slot $new boots next, with 3 tries"
	check "update-$v-copied-little" copied_little
	check "update-$v-on-trial" slots --status "$img"
	check "update-$v-status-trial" said "^boots: slot $new, on trial with 3 tries left$"
	check "update-$v-refused-while-on-trial" fails slots --update "$img" --iso "$PDIR/$v.iso"
	check "update-$v-says-on-trial" said "slot $new is on trial"
	require "boot-$v" boot_release "$v"
	check "boot-$v-grub-said-trial" log_has "liveunion: slot $new on trial, 2 tries left after this boot"
	check "boot-$v-kept" log_has "liveunion: slot $new came up healthy: kept \(slot $slot stays the way back\)"
	check "boot-$v-tool-good" vm_run "liveunion update --status"
	check "boot-$v-tool-good-out" out_has "^slot $new is good$"
	require "poweroff-$v" vm_poweroff
	check "update-$v-status-good" slots --status "$img"
	check "update-$v-good-on-host" said "^boots: slot $new$"
	slot=$new
done

# Refusals before anything is written: a tampered image (one byte of its layer flipped) and one the stick cannot hold.
sum=$(sha256sum <"$img")
tampered() {
	local lba
	cp "$PDIR/v1.iso" "$PDIR/tampered.iso" &&
		lba=$(xorriso -indev "$PDIR/tampered.iso" -find /live/20-release.squashfs -exec report_lba -- 2>/dev/null |
			awk -F' *, *' '/^File data lba:/ { print $2 }') && [ -n "$lba" ] &&
		printf 'X' | dd of="$PDIR/tampered.iso" bs=1 seek=$((lba * 2048 + 100)) conv=notrunc status=none
}
require tampered-made tampered
check tampered-refused fails slots --update "$img" --iso "$PDIR/tampered.iso"
check tampered-names-layer said 'layer 20-release does not match its root hash'
check big-made sh -c "cp '$PDIR/v1.iso' '$PDIR/big.iso' && truncate -s +400M '$PDIR/big.iso'"
check big-refused fails slots --update "$img" --iso "$PDIR/big.iso"
check big-says-sizes said 'the stick is too full for big.iso \([0-9]+ bytes, [0-9]+ with room to grow\) in slot [ab]: [0-9]+ bytes free'
check stick-unchanged-by-refusals test "$(sha256sum <"$img")" = "$sum"

# A bad update: one try; its boot restarts before it is healthy, GRUB then boots the previous slot for good.
if [ $slot = a ]; then new=b; else new=a; fi
check update-bad slots --update "$img" --iso "$PDIR/bad.iso" --tries 1
require boot-bad vm_start persist-update-bad stick-bios "$img"
check bad-slot-booted vm_wait "liveunion: slot $new on trial, 0 tries left after this boot" "$VM_BOOT_TIMEOUT"
check bad-release-restarted vm_wait 'bad release: restarting' "$VM_BOOT_TIMEOUT"
check grub-rolled-back vm_wait "liveunion: slot $new used its tries without a healthy boot: rolling back to slot $slot" "$VM_BOOT_TIMEOUT"
require login-after-rollback vm_login
check rollback-said-at-boot log_has "liveunion: slot $slot booted after slot $new did not come up healthy in its tries: rolled back"
check rollback-release-v3 vm_fact "cat /etc/release-n" v3
check rollback-store-kept vm_fact "cat /root/kept" "$tag"
check rollback-tool vm_run "liveunion update --status"
check rollback-tool-out out_has_all "^slot $slot is good$" "^rolled back: slot $new did not come up healthy in its tries$"
require poweroff-rollback vm_poweroff
check rollback-status slots --status "$img"
check rollback-status-host said "^failed: slot $new did not come up healthy"

# --rollback by hand: the other slot (the bad one here) boots from now on, and back again.
check rollback-by-hand slots --rollback "$img"
check rollback-by-hand-said said "rolled back: slot $new boots from now on"
check rollback-by-hand-back slots --rollback "$img"
check rollback-by-hand-status slots --status "$img"
check rollback-by-hand-boots said "^boots: slot $slot$"
check store-clean store_fsck_slots
finish

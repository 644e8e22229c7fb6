#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check and require
# summary: an A/B stick (./build.sh usb --slots) updated in place three times in a row (a changed layer each time): only the changed bytes copied, nothing written outside the inactive slot's clusters and grubenv's (the store and the active slot untouched), the new slot on trial then kept by a healthy boot (only once its services have started), a grubenv torn after the switch read from grubenv.bak by GRUB and the host and made whole by the kept boot, the store's file kept; a tampered image (named) and one too large for the stick refused with nothing written; a power cut halfway through writing the slot (replayed on the host) boots the old slot; a bad update (its boot never gets healthy) rolled back by GRUB within its tries, said at boot and by liveunion update; --rollback by hand
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img tag=$$

# variant N: $PDIR/vN.iso, the built ISO plus a layer 20-release holding /etc/release-n = N (the "new release") and
# a service (rc.d) that takes 2 s to start: the slot on trial must be kept only after it has started.
# shellcheck disable=SC2016 # the service's own script, in single quotes
variant() {
	rm -rf "$PDIR/l" && mkdir -p "$PDIR/l/etc/rc.d" && echo "$1" >"$PDIR/l/etc/release-n" &&
		printf '#!/bin/sh\n[ "$1" = start ] || exit 0\nsleep 2\necho "release service started" >/dev/console\n' \
			>"$PDIR/l/etc/rc.d/S90release" && chmod 755 "$PDIR/l/etc/rc.d/S90release" &&
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

# log_soon ERE: this boot's console has a line matching ERE within 60 s (the start-up's last step, the slot's state,
# runs once the services have started, beside the login prompt)
log_soon() {
	local i
	for i in $(seq 60); do log_has "$1" && return 0; sleep 1; done
	return 1
}
# kept_after_service NEW: the slot on trial was kept (said on the console) after the release's service had started
kept_after_service() {
	local a k
	log_soon "liveunion: slot $1 came up healthy: kept" || return 1
	a=$(vm_boot_log | grep -n -m1 'release service started' | cut -d: -f1)
	k=$(vm_boot_log | grep -n -m1 "liveunion: slot $1 came up healthy: kept" | cut -d: -f1)
	vm_note "service started at console line ${a:-?}, slot kept at ${k:-?}"
	[ -n "$a" ] && [ -n "$k" ] && [ "$a" -lt "$k" ]
}
# tear_grubenv: grubenv's first sector zeroed, as a power cut while it was written can leave it on a flash stick
tear_grubenv() {
	local from to
	read -r from to < <(clusters_of "$img" grubenv | head -n 1) && [ -n "$to" ] &&
		dd if=/dev/zero of="$img" bs=512 count=1 oflag=seek_bytes seek="$from" conv=notrunc status=none
}
# env_whole NAME: liveunion/NAME on the stick is a whole block with slot=
env_whole() { mtype -i "$img@@1M" "::/liveunion/$1" >"$PDIR/env" && head -n 1 "$PDIR/env" | grep -qx '# GRUB Environment Block' && grep -q '^slot=[ab]$' "$PDIR/env"; }

# the first boot: no store file yet
boot_release_first() { vm_start persist-update-v0 stick-bios "$img" && vm_login && vm_fact "cat /etc/release-n" v0; }
# store_fsck_slots: the stick's store copied out of its FAT and checked
store_fsck_slots() {
	rm -f "$PDIR/store.fsck" && mcopy -n -i "$img@@1M" ::/liveunion/liveunion-rw.img "$PDIR/store.fsck" &&
		e2fsck -fn "$PDIR/store.fsck" >"$PDIR/fsck.out" 2>&1
}

# clusters_of IMAGE NAME: "FIRST LAST" byte ranges (from the disk's start) of liveunion/NAME on the stick's FAT32
clusters_of() {
	local ss spc res fats fatlen data c
	minfo -i "$1@@1M" >"$PDIR/minfo" || return 1
	ss=$(sed -n 's/^sector size: \([0-9]*\) bytes/\1/p' "$PDIR/minfo")
	spc=$(sed -n 's/^cluster size: \([0-9]*\) sectors/\1/p' "$PDIR/minfo")
	res=$(sed -n 's/^reserved (boot) sectors: \([0-9]*\)/\1/p' "$PDIR/minfo")
	fats=$(sed -n 's/^fats: \([0-9]*\)/\1/p' "$PDIR/minfo")
	fatlen=$(sed -n 's/^Big fatlen=\([0-9]*\)/\1/p' "$PDIR/minfo")
	data=$((1048576 + (res + fats * fatlen) * ss)) c=$((ss * spc))
	mshowfat -i "$1@@1M" "::/liveunion/$2" | tr ' ' '\n' | sed -n 's/^<\([0-9]*\)\(-\([0-9]*\)\)\{0,1\}>$/\1 \3/p' |
		awk -v d="$data" -v c="$c" '{ e = ($2 == "") ? $1 : $2; print d + ($1 - 2) * c, d + (e - 1) * c - 1 }'
}
# only_slot_written BEFORE AFTER SLOT: every byte that differs lies in liveunion/SLOT.iso's clusters or the boot
# choice's (grubenv, grubenv.bak)
only_slot_written() {
	local n
	{ clusters_of "$2" "$3.iso" && clusters_of "$2" grubenv && clusters_of "$2" grubenv.bak; } >"$PDIR/ranges" || return 1
	n=$(cmp -l "$1" "$2" | awk 'NR == FNR { lo[NR] = $1; hi[NR] = $2; r = NR; next }
		{ o = $1 - 1; ok = 0; for (i = 1; i <= r; i++) if (o >= lo[i] && o <= hi[i]) { ok = 1; break }
		  if (!ok) { bad++; if (bad <= 3) printf "# written outside the slot: byte %d\n", o > "/dev/stderr" } }
		END { print bad + 0 }' "$PDIR/ranges" -)
	[ "$n" = 0 ]
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
	require "stick-copied-$v" cp --sparse=always "$img" "$PDIR/before.img"
	check "update-$v" slots --update "$img" --iso "$PDIR/$v.iso"
	check "update-$v-wrote-only-slot-$new-and-grubenv" only_slot_written "$PDIR/before.img" "$img" "$new"
	check "update-$v-checked-layers" said 'checked [^ ]+: 2 layer\(s\) match their root hashes'
	check "update-$v-switched" said "switched: slot $new boots next, with 3 tries"
	check "update-$v-copied-little" copied_little
	check "update-$v-on-trial" slots --status "$img"
	check "update-$v-status-trial" said "^boots: slot $new, on trial with 3 tries left$"
	check "update-$v-refused-while-on-trial" fails slots --update "$img" --iso "$PDIR/$v.iso"
	check "update-$v-says-on-trial" said "slot $new is on trial"
	if [ $v = v1 ]; then
		# a power cut tore grubenv's sector after the switch: the menu and the host read grubenv.bak (slot b)
		check torn-grubenv tear_grubenv
		check torn-grubenv-status slots --status "$img"
		check torn-grubenv-status-bak said "^boots: slot $new, on trial with 3 tries left$"
		check torn-grubenv-status-says said 'liveunion/grubenv is not a whole block \(torn\?\): read liveunion/grubenv.bak'
	fi
	require "boot-$v" boot_release "$v"
	[ $v != v1 ] || check torn-grubenv-grub-read-bak log_has 'liveunion: grubenv is not a whole block \(torn\?\): reading grubenv.bak'
	check "boot-$v-grub-said-trial" log_has "liveunion: slot $new on trial, 2 tries left after this boot"
	check "boot-$v-kept-after-service" kept_after_service "$new"
	check "boot-$v-kept" log_has "liveunion: slot $new came up healthy: kept \(slot $slot stays the way back\)"
	check "boot-$v-tool-good" vm_run "liveunion update --status"
	check "boot-$v-tool-good-out" out_has "^slot $new is good$"
	require "poweroff-$v" vm_poweroff
	check "update-$v-status-good" slots --status "$img"
	check "update-$v-good-on-host" said "^boots: slot $new$"
	check "update-$v-grubenv-whole" env_whole grubenv
	check "update-$v-grubenv-bak-whole" env_whole grubenv.bak
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

if [ $slot = a ]; then new=b; else new=a; fi
# A power cut in the middle of an update (replayed on the host): half of another release written into the inactive
# slot's clusters, grubenv not yet switched. The old slot boots with the store, and the next update still works.
half_written() {
	local from to
	read -r from to < <(clusters_of "$img" "$new.iso" | head -n 1) && [ -n "$to" ] &&
		dd if="$PDIR/v1.iso" of="$img" bs=64K iflag=count_bytes oflag=seek_bytes seek="$from" \
			count=$(($(stat -c %s "$PDIR/v1.iso") / 2)) conv=notrunc status=none
}
require cut-stick-copied cp --sparse=always "$img" "$PDIR/before.img"
require cut-half-written half_written
check cut-wrote-only-slot only_slot_written "$PDIR/before.img" "$img" "$new"
require boot-after-cut boot_release v3
check cut-old-slot-booted log_has "liveunion: slot $slot($|[^ ])"
check cut-old-slot-kept-good vm_run "liveunion update --status"
check cut-old-slot-good-out out_has "^slot $slot is good$"
require poweroff-after-cut vm_poweroff

# A bad update: one try; its boot restarts before it is healthy, GRUB then boots the previous slot for good.
check update-bad slots --update "$img" --iso "$PDIR/bad.iso" --tries 1
require boot-bad vm_start persist-update-bad stick-bios "$img"
check bad-slot-booted vm_wait "liveunion: slot $new on trial, 0 tries left after this boot" "$VM_BOOT_TIMEOUT"
check bad-release-restarted vm_wait 'bad release: restarting' "$VM_BOOT_TIMEOUT"
check grub-rolled-back vm_wait "liveunion: slot $new used its tries without a healthy boot: rolling back to slot $slot" "$VM_BOOT_TIMEOUT"
require login-after-rollback vm_login
check rollback-said-at-boot log_soon "liveunion: slot $slot booted after slot $new did not come up healthy in its tries: rolled back"
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

#!/usr/bin/env bash
# summary: a new ISO (another 10-base, so another squashfs UUID, and one more layer) on a stick whose store was made for another: the store still mounts (no index, no redirect_dir on a store), the four changes are kept, meta records the change and the init says so
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
tag=$$ old=$PDIR/old.img new=$PDIR/new.img
require stick-made make_stick "$old" --persist-size 16M
require boot-old vm_start persist-newimage stick-bios "$old" --direct
require login-old vm_login
check modify modify_four "$tag"
check old-image-recorded vm_run "sed -n 's/^image=//p' /run/live/store/liveunion-v1/meta"
old_id=$VM_OUT
require poweroff-old vm_poweroff

# The "new release": a changed 10-base (another superblock, so another UUID under kernel/patches/0003: the store's
# copy-up origins point at an image that is gone) plus one more layer, so another build identity.
# The build identity has two digits of content hash: vary a byte until it differs from the old one.
# shellcheck disable=SC2317 # called through require
new_release() {
	local n
	mkdir -p "$PDIR/layer/etc" && echo "release 2" >"$PDIR/layer/etc/release-2" || return 1
	rm -rf "$PDIR/base" && unsquashfs -q -n -d "$PDIR/base" "$OUT/rootfs/10-base.squashfs" >/dev/null &&
		echo "base of release 2" >"$PDIR/base/etc/release-base" &&
		env -u SOURCE_DATE_EPOCH mksquashfs "$PDIR/base" "$PDIR/10-base.squashfs" -noappend -quiet -no-progress \
			-comp zstd -xattrs -all-time 1700000000 -mkfs-time 1700000000 >/dev/null || return 1
	for n in 1 2 3 4 5 6 7 8; do
		echo "$n" >"$PDIR/layer/etc/build" &&
			env -u SOURCE_DATE_EPOCH mksquashfs "$PDIR/layer" "$PDIR/20-release2.squashfs" -noappend -quiet \
				-no-progress -all-root -all-time 1700000000 -mkfs-time 1700000000 >/dev/null &&
			ISO_BASE_LAYER=$PDIR/10-base.squashfs \
				"$TOP/build.sh" iso-with "$PDIR/new.iso" "$PDIR/20-release2.squashfs" >/dev/null 2>&1 || return 1
		[ "$(dd if="$PDIR/new.iso" bs=1 skip=$((32768 + 830)) count=16 status=none)" != "$old_id" ] && return 0
	done
	return 1
}
require new-iso-made new_release
ISO=$PDIR/new.iso
require new-stick-made make_stick "$new" --persist-size 16M
# the old stick's store moves onto the new stick, byte for byte (as when the ISO part of a stick is rewritten)
require old-store-read part_read "$old" 3 "$PDIR/old-store"
require old-store-on-new-stick part_write "$new" 3 "$PDIR/old-store"
require same-store-size test "$(stat -c %s "$PDIR/old-store")" = "$(part_read "$new" 3 | wc -c)"
require boot-new vm_start persist-newimage stick-bios "$new" --direct
require login-new vm_login
check says-image-changed log_has "liveunion: persistence: the store was made for image $old_id, this is [0-9]{16}: used anyway"
check store-used vm_run "grep -x 'upper.kind=store' /run/live/plan"
check new-layer-there vm_fact "cat /etc/release-2" "release 2"
check new-base-there vm_fact "cat /etc/release-base" "base of release 2"
vm_run "grep ' / ' /proc/mounts | tail -n 1"
check store-root-is-overlay out_has '^[^ ]+ / overlay .*upperdir=/run/live/upper/upper'
check store-root-no-index fails out_has '[,]index=on'
check store-root-no-redirect_dir fails out_has '[,]redirect_dir=on'
check no-overlay-error-in-dmesg vm_none "dmesg" 'overlayfs: .*(fail|stale|refus)'
check four-changes-kept four_kept "$tag"
check meta-records-change vm_run "grep -x 'previous_image=$old_id' /run/live/store/liveunion-v1/meta && grep -q '^image_changed=' /run/live/store/liveunion-v1/meta"
check meta-image-is-not-the-old vm_none 'cat /run/live/store/liveunion-v1/meta' "^image=$old_id\$"
require poweroff-new vm_poweroff
check store-clean store_fsck "$new"
finish

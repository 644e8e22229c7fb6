#!/usr/bin/env bash
# summary: liveunion save: changes (new, modified, deleted file, replaced directory) saved as a layer in the store come back with live.persist=off (tmpfs upper, store not written) and go with live.layers=-mine or an include list of the medium's layers (a store's layers outside the verified set never stacked then); from a CD (no store) save refuses and --to /tmp works
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img tag=$$

# saved_there: all four changes of boot 1 are in the live root
# shellcheck disable=SC2317 # called through check
saved_there() {
	vm_run "cat /etc/saved-new /etc/motd /usr/lib/replaced; test ! -e /etc/shells && echo shells-gone; ls -A /usr/lib" &&
		[ "$VM_OUT" = "new-$tag"$'\n'"motd-$tag"$'\n'"lib-$tag"$'\n'"shells-gone"$'\n'"replaced" ]
}
# saved_absent: none of them (the medium's files as they were)
# shellcheck disable=SC2317 # called through check
saved_absent() {
	vm_run "test ! -e /etc/saved-new && test -e /etc/shells && test -e /usr/lib/os-release && test ! -e /usr/lib/replaced && { grep -q motd-$tag /etc/motd; [ \$? -eq 1 ]; }"
}
mount_count() { dumpe2fs -h "$PDIR/store.fsck" 2>/dev/null | awk -F: '/^Mount count:/ { gsub(/ /, "", $2); print $2 }'; }

require stick-made make_stick "$img" --persist-size 32M

# 1. With persistence: change, save into the store
require boot1 vm_start save stick-bios "$img" --direct
require login1 vm_login
check changes vm_run "echo new-$tag >/etc/saved-new && echo motd-$tag >/etc/motd && rm /etc/shells && rm -rf /usr/lib && mkdir /usr/lib && echo lib-$tag >/usr/lib/replaced && sync"
check save-runs vm_run "liveunion save mine" 120
check save-says-where out_has '^saved 11-mine: /run/live/store/liveunion-v1/layers/11-mine\.squashfs \([0-9]+ bytes'
check save-says-which-boot out_has "next boot from this stick stacks it on top of the medium's layers as 11-mine"
check save-says-how-to-leave-out out_has 'live\.layers=-mine leaves it out'
check store-holds-only-the-layer vm_fact "ls -A /run/live/store/liveunion-v1/layers" 11-mine.squashfs
check same-name-refused fails vm_run "liveunion save mine"
check same-name-says-so out_has 'a layer called mine already exists: /run/live/store/liveunion-v1/layers/11-mine\.squashfs'
check bad-name-refused fails vm_run "liveunion save My.Layer"
check bad-name-says-so out_has "is not a layer name"
require poweroff1 vm_poweroff
check store-clean store_fsck "$img"
check store-has-layer-on-disk sh -c "debugfs -R 'ls /liveunion-v1/layers' '$PDIR/store.fsck' 2>/dev/null | grep -q '11-mine.squashfs'"
sum=$(part_sum "$img")
mc=$(mount_count)

# 2. Without persistence: the saved layer is stacked, the upper is a tmpfs, the store is not written
require boot2 vm_start save stick-bios "$img" --keys "live.persist=off"
require login2 vm_login
check off-says-saved-layers log_has 'liveunion: persistence: none: live\.persist=off; 1 saved layer\(s\) from /dev/sd[a-z]3 \(LABEL=liveunion-rw\), mounted read-only without journal replay; changes go to tmpfs'
check stack-names-saved-layer log_has 'liveunion: stack, bottom to top \(2 layer\(s\), dm-verity, not the store.s\): 10-base 11-mine\(store\)'
check no-verity-warning log_has 'liveunion: WARNING: saved layer 11-mine \(from the store /dev/sd[a-z]3 \(LABEL=liveunion-rw\)\) is not covered by dm-verity'
check changes-all-there saved_there
check deleted-is-in-the-medium vm_run "test -e /run/live/layers/10-base/etc/shells && test -e /run/live/layers/10-base/usr/lib/os-release"
check layer-mounted vm_run "grep ' /run/live/layers/11-mine squashfs ro' /proc/mounts"
check upper-is-tmpfs vm_run "grep ' /run/live/upper tmpfs ' /proc/mounts"
check plan-upper-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan && grep -x 'layers.saved=11-mine' /run/live/plan"
check store-mounted-ro vm_run "grep ' /run/live/store ext4 ro[,]' /proc/mounts"
check save-to-ro-store-refused fails vm_run "liveunion save more"
check save-to-ro-store-says-so out_has 'mounted read-only'
check volatile-write vm_run "echo volatile-$tag >/etc/volatile && sync"
require poweroff2 vm_poweroff
check store-partition-unchanged test "$(part_sum "$img")" = "$sum"
check store-still-clean store_fsck "$img"
check store-mount-count-unchanged test "$(mount_count)" = "$mc"

# 3. Without persistence, the saved layer left out: nothing of it
require boot3 vm_start save stick-bios "$img" --keys "live.persist=off live.layers=-mine"
require login3 vm_login
check leave-out-said log_has 'liveunion: live\.layers=-mine leaves out the saved layer\(s\): 11-mine'
check changes-absent saved_absent
check volatile-write-gone vm_run "test ! -e /etc/volatile"
check plan-layers-base-only vm_run "grep -x 'layers=10-base' /run/live/plan"
require poweroff3 vm_poweroff
check store-partition-still-unchanged test "$(part_sum "$img")" = "$sum"

# 3b. Whoever can write the stick can put a layer in its store: with an include list of the medium's layers on the
# menus (the kiosk profile's, signed with ISO_UKI=1) no saved layer is stacked; the plan says only the store's
# absence is outside the verified set
require boot3b vm_start save-include stick-bios "$img" --keys "live.persist=off live.layers=10-base"
require login3b vm_login
check include-leaves-out-saved log_has 'liveunion: live\.layers=10-base leaves out the saved layer\(s\): 11-mine'
check include-changes-absent saved_absent
check include-plan-covers vm_fact "grep -E '^verify\.(covers|outside)=' /run/live/plan" $'verify.covers=10-base\nverify.outside=upper:tmpfs'
require poweroff3b vm_poweroff

# 4. A store the kernel marked as damaged is not read at all without persistence (no e2fsck may run then)
store_copy "$img"
debugfs -w -R "ssv state 2" "$PDIR/store.fsck" >/dev/null 2>&1
require store-written-back store_put "$img"
sum=$(part_sum "$img")
require boot-damaged vm_start save stick-bios "$img" --keys "live.persist=off"
require login-damaged vm_login
check damaged-said log_has 'liveunion: persistence: none: live\.persist=off; the store /dev/sd[a-z]3 \(LABEL=liveunion-rw\) is marked as having errors \(run e2fsck /dev/sd[a-z]3 by hand\): no saved layers'
check damaged-no-saved-layer saved_absent
check damaged-store-not-mounted vm_none 'cat /proc/mounts' '/run/live/store '
require poweroff-damaged vm_poweroff
check damaged-store-unchanged test "$(part_sum "$img")" = "$sum"

# 5. From a CD: no store, so save refuses; --to /tmp works (and does not swallow its own output)
require boot-cd vm_start save cd-bios "$ISO" --direct
require login-cd vm_login
check cd-change vm_run "echo cd-$tag >/etc/cd-new"
check cd-save-refused fails vm_run "liveunion save x"
check cd-save-names-store out_has 'no persistence store is mounted at /run/live/store \(looked for /run/live/store/liveunion-v1/layers/\)'
check cd-save-suggests-to out_has 'Use --to DIR'
check cd-save-to-tmp vm_run "liveunion save x --to /tmp" 120
check cd-save-to-tmp-says out_has '^saved 11-x: /tmp/11-x\.squashfs'
check cd-save-says-how-to-use out_has 'liveunion-v1/layers/ of a persistence store'
check cd-only-the-layer-in-tmp vm_fact "ls -A /tmp" 11-x.squashfs
check cd-layer-holds-change vm_fact "mount -o loop,ro /tmp/11-x.squashfs /mnt && cat /mnt/etc/cd-new && ls -A /mnt/tmp; umount /mnt" "cd-$tag"
vm_stop
finish

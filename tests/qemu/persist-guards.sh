#!/usr/bin/env bash
# summary: a damaged store is refused, also when a journal replay marked it clean; a stranger's disk labelled liveunion-rw is not used under auto (only when named, also when it is plugged in while the init waits); two disks with the named label are both refused; a store e2fsck cannot fix boots on tmpfs and stays byte for byte; a full store or tmpfs is announced and the system keeps running; a store of a newer format is refused untouched, an older one upgraded; a write-protected stick's store is used read-only, or not at all with a journal to replay
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
tag=$$

# 1. Booted from the CD; a second disk carries an ext4 labelled liveunion-rw: auto must not take it.
# It is partitioned (MBR, one partition from 1 MiB) so that it also has a PARTUUID to name it by.
stranger=$PDIR/stranger.img
truncate -s 17M "$stranger"
printf 'start=2048, type=83\n' | sfdisk -q --label dos "$stranger" >/dev/null 2>&1
truncate -s 16M "$PDIR/stranger.p1"
require stranger-made mkfs.ext4 -q -L liveunion-rw "$PDIR/stranger.p1"
dd if="$PDIR/stranger.p1" of="$stranger" bs=1M seek=1 conv=notrunc status=none
partuuid=$(sfdisk --disk-id "$stranger" | sed 's/^0x//')-01
before=$(sha256sum <"$stranger")
require cd-boot vm_start persist-guards cd-bios "$ISO" --direct -drive "file=$stranger,if=virtio,format=raw"
require cd-login vm_login
check auto-says-why-none log_has 'liveunion: persistence: none: no partition labelled liveunion-rw and no liveunion-rw.img on /dev/sr0'
check auto-upper-is-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan"
check stranger-not-mounted vm_none 'cat /proc/mounts' '^/dev/vda'
require cd-poweroff vm_poweroff
check stranger-untouched test "$before" = "$(sha256sum <"$stranger")"
require cd-boot-named vm_start persist-guards cd-bios "$ISO" --keys "live.persist=LABEL=liveunion-rw" -drive "file=$stranger,if=virtio,format=raw"
require cd-login-named vm_login
check named-store-used log_has 'liveunion: persistence: store /dev/vda1 \(LABEL=liveunion-rw\), ext4'
check named-upper-is-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
require cd-poweroff-named vm_poweroff
require cd-boot-partuuid vm_start persist-guards cd-bios "$ISO" --keys "live.persist=PARTUUID=$partuuid" -drive "file=$stranger,if=virtio,format=raw"
require cd-login-partuuid vm_login
check partuuid-store-used log_has "liveunion: persistence: store /dev/vda1 \\(PARTUUID=$partuuid\\), ext4"
require cd-poweroff-partuuid vm_poweroff
require cd-boot-partuuid-wrong vm_start persist-guards cd-bios "$ISO" --keys "live.persist=PARTUUID=0badc0de-01 live.timeout=2" -drive "file=$stranger,if=virtio,format=raw"
require cd-login-partuuid-wrong vm_login
check wrong-partuuid-waited log_has 'liveunion: persistence: waiting up to 2 s for PARTUUID=0badc0de-01 to appear'
check wrong-partuuid-says-why log_has 'liveunion: persistence: none: no ext2/3/4 filesystem with PARTUUID=0badc0de-01 \(waited 2 s\)'
require cd-poweroff-partuuid-wrong vm_poweroff
# Two disks both labelled liveunion-rw, the label named: which holds the user's data is a guess, so neither is used.
twin=$PDIR/twin.img
truncate -s 16M "$twin"
require twin-made mkfs.ext4 -q -L liveunion-rw "$twin"
twin_before=$(sha256sum <"$twin")
before=$(sha256sum <"$stranger") # the named boots above used (and so wrote) it
require cd-boot-twins vm_start persist-guards cd-bios "$ISO" --keys "live.persist=LABEL=liveunion-rw" \
	-drive "file=$stranger,if=virtio,format=raw" -drive "file=$twin,if=virtio,format=raw"
require cd-login-twins vm_login
check twins-refused log_has 'liveunion: persistence: none: /dev/vda1 and /dev/vdb both carry LABEL=liveunion-rw; none used: name one by UUID= or PARTUUID='
check twins-upper-is-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan"
check twins-none-mounted vm_none 'cat /proc/mounts' '^/dev/vd'
require cd-poweroff-twins vm_poweroff
check twins-untouched test "$before$twin_before" = "$(sha256sum <"$stranger")$(sha256sum <"$twin")"
# A named stick plugged in while the init waits for it (a hub enumerating late): it is used when it appears.
# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
require cd-boot-late vm_start persist-guards cd-bios "$ISO" --keys "live.persist=LABEL=liveunion-rw live.timeout=60" \
	-device qemu-xhci,id=xhci \
	-qmp "unix:$PDIR/qmp.sock,server=on,wait=off"
check late-waits vm_wait 'liveunion: persistence: waiting up to 60 s for LABEL=liveunion-rw to appear' 120
check late-stick-plugged vm_qmp "$PDIR/qmp.sock" \
	"{\"execute\": \"blockdev-add\", \"arguments\": {\"node-name\": \"late\", \"driver\": \"raw\", \"file\": {\"driver\": \"file\", \"filename\": \"$stranger\"}}}" \
	'{"execute": "device_add", "arguments": {"driver": "usb-storage", "bus": "xhci.0", "drive": "late", "id": "late-stick"}}'
require cd-login-late vm_login
check late-store-used log_has 'liveunion: persistence: store /dev/sd[a-z]1 \(LABEL=liveunion-rw\), ext4'
check late-upper-is-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
require cd-poweroff-late vm_poweroff

# break_inode IMAGE: the store of IMAGE copied to $PDIR/store.fsck, with a file whose inode is cleared (an
# inconsistency only a human should repair); the caller writes it back.
break_inode() {
	local ino
	store_copy "$1" || return 1
	debugfs -w -R "mkdir liveunion-v1" "$PDIR/store.fsck" >/dev/null 2>&1
	debugfs -w -R "write /etc/hostname liveunion-v1/f" "$PDIR/store.fsck" >/dev/null 2>&1
	ino=$(debugfs -R "stat liveunion-v1/f" "$PDIR/store.fsck" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p')
	debugfs -w -R "clri <$ino>" "$PDIR/store.fsck" >/dev/null 2>&1
}

# 2. A store with an inconsistency only a human should repair: never mounted, never written.
img=$PDIR/stick.img
require stick-made make_stick "$img" --persist-size 16M
break_inode "$img"
# as the kernel leaves it once it has met the damage: state "errors" (a clean-marked store is not force-checked)
debugfs -w -R "ssv state 2" "$PDIR/store.fsck" >/dev/null 2>&1
require store-corrupted fails sh -c "e2fsck -n '$PDIR/store.fsck' >/dev/null 2>&1"
require store-written-back store_put "$img"
sum=$(part_sum "$img")
require bad-boot vm_start persist-guards stick-bios "$img" --direct
require bad-login vm_login
check bad-store-message log_has 'liveunion: persistence: /dev/sd[a-z]3 \(LABEL=liveunion-rw\): e2fsck -n exit [0-9]+: errors that need a human \(run e2fsck /dev/sd[a-z]3 by hand\); the store is left untouched and not mounted, changes go to tmpfs'
check bad-upper-is-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan"
check bad-root-writable vm_run "echo w >/etc/w && cat /etc/w"
check bad-store-not-mounted vm_none 'cat /proc/mounts' '/run/live/store '
require bad-poweroff vm_poweroff
check bad-store-byte-for-byte test "$sum" = "$(part_sum "$img")"

# 2b. Damage behind a journal replay: the store was not cleanly unmounted (a journal to replay) and an inode is
# broken. e2fsck -p only replays and calls the store clean; the init then checks all of it (-fn) and refuses it.
img3=$PDIR/stick3.img
require stick3-made make_stick "$img3" --persist-size 16M
break_inode "$img3"
require journal-to-replay debugfs -w -R "feature needs_recovery" "$PDIR/store.fsck"
require store3-damaged fails sh -c "e2fsck -fn '$PDIR/store.fsck' >/dev/null 2>&1"
require store3-written-back store_put "$img3"
require replay-boot vm_start persist-guards stick-bios "$img3" --direct
require replay-login vm_login
check replay-then-full-check log_has 'liveunion: persistence: /dev/sd[a-z]3 \(LABEL=liveunion-rw\): e2fsck -fn \(after the journal replay\) exit [0-9]+: errors that need a human \(run e2fsck /dev/sd[a-z]3 by hand\); the store is otherwise untouched and not mounted, changes go to tmpfs'
check replay-upper-is-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan"
check replay-store-not-mounted vm_none 'cat /proc/mounts' '/run/live/store '
require replay-poweroff vm_poweroff

# 3. Full: the store (16M), then a tmpfs upper; a warning each time, and the shell still answers.
img2=$PDIR/stick2.img
require stick2-made make_stick "$img2" --persist-size 16M
require full-boot vm_start persist-guards stick-bios "$img2" --direct
require full-login vm_login
check store-fill-fails fails vm_run "dd if=/dev/zero of=/home/big bs=1M count=32" 60
check store-fill-says-enospc out_has 'No space left on device'
check store-full-announced vm_wait 'liveunion: the upper layer /run/live/upper is FULL' 30
# the last blocks dd's buffered writes left free, one synced KiB at a time: the store is full to the block
check store-filled-to-the-block vm_run "i=0; while dd if=/dev/zero of=/home/fill.\$i bs=1k count=1 conv=fsync 2>/dev/null; do i=\$((i + 1)); done; sync" 120
require full-poweroff-full vm_poweroff
# booted again full: meta cannot be written, the store is used all the same and what was written is there
require full-again-boot vm_start persist-guards stick-bios "$img2" --direct
require full-again-login vm_login
check full-again-said log_has 'liveunion: persistence: (create|write) /run/live/store/liveunion-v1/meta[.]new: No space left on device: the meta file was not updated; the store is used as it is'
check full-again-upper-is-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
check full-again-kept vm_run "test -s /home/big"
check store-still-answers vm_fact "rm /home/big && sync && echo alive-$tag" "alive-$tag"
check store-back-announced vm_wait 'liveunion: the upper layer /run/live/upper is back to [0-9]+% used' 30
check store-full-in-syslog vm_run "grep -q 'upper layer /run/live/upper is FULL' /var/log/messages || logread | grep -q 'is FULL'"
require full-poweroff vm_poweroff
check store-clean-after-full store_fsck "$img2"
require tmpfs-boot vm_start persist-guards stick-bios "$img2" --keys "live.persist=off live.size=8M"
require tmpfs-login vm_login
check tmpfs-says-off log_has 'liveunion: persistence: none: live.persist=off'
check tmpfs-fill-to-93 vm_run "dd if=/dev/zero of=/big93 bs=1k count=\$((8192 * 93 / 100)) && sync"
check tmpfs-90-announced vm_wait 'liveunion: the upper layer /run/live/upper is 9[0-9]% full \([0-9]+ KiB left\)' 30
check tmpfs-fill-fails fails vm_run "dd if=/dev/zero of=/big bs=1M count=16" 60
check tmpfs-full-announced vm_wait 'liveunion: the upper layer /run/live/upper is FULL' 30
check tmpfs-still-answers vm_fact "echo alive-$tag" "alive-$tag"
vm_stop

# 4. Store format (meta's format=): a newer store is left exactly as found; a meta without format= is upgraded.
# meta_put TEXT: the store's liveunion-v1/meta replaced by TEXT, on the host.
# shellcheck disable=SC2317 # called through require
meta_put() {
	printf '%s' "$1" >"$PDIR/meta.new" && store_copy "$img2" &&
		debugfs -w -R "rm liveunion-v1/meta" "$PDIR/store.fsck" >/dev/null 2>&1 &&
		debugfs -w -R "write $PDIR/meta.new liveunion-v1/meta" "$PDIR/store.fsck" >/dev/null 2>&1 &&
		store_put "$img2"
}
require newer-meta-written meta_put $'format=7\nimage=from-the-future\n'
sum2=$(part_sum "$img2")
require newer-boot vm_start persist-guards stick-bios "$img2" --direct
require newer-login vm_login
check newer-refused log_has 'liveunion: persistence: /dev/sd[a-z]3 \(LABEL=liveunion-rw\): store format 7, made by a newer liveunion; this one knows formats up to 1: not used, nothing written to it; changes go to tmpfs'
check newer-upper-is-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan"
check newer-store-not-mounted vm_none 'cat /proc/mounts' '/run/live/store '
require newer-poweroff vm_poweroff
check newer-store-byte-for-byte test "$sum2" = "$(part_sum "$img2")"
require old-meta-written meta_put $'image=x\ncreated=2020-01-01T00:00:00Z\n'
require old-boot vm_start persist-guards stick-bios "$img2" --direct
require old-login vm_login
check old-upgrade-said log_has 'liveunion: persistence: /dev/sd[a-z]3 \(LABEL=liveunion-rw\): store format 0 \(meta has no format= line\), upgraded to format 1'
check old-upper-is-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
require old-poweroff vm_poweroff
check old-meta-upgraded store_fsck "$img2"
# shellcheck disable=SC2317 # called through check
meta_has() { grep -qx -- "$1" <<<"$(store_cat liveunion-v1/meta)"; } # a line of the store copy's meta
check old-meta-has-format meta_has format=1
check old-meta-keeps-created meta_has created=2020-01-01T00:00:00Z

# 5. A write-protected stick (qemu readonly=on: the disk reports Write Protect): a clean store is used read-only; a
# journal to replay is reported as such, not as damage; either way nothing is written.
# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
wp_stick=(-device qemu-xhci,id=xhci -drive "if=none,id=stick,format=raw,file=$img2,readonly=on"
	-device usb-storage,bus=xhci.0,drive=stick)
sum2=$(part_sum "$img2")
require wp-boot vm_start persist-guards none "" --direct "${wp_stick[@]}"
require wp-login vm_login
check wp-said log_has 'liveunion: persistence: /dev/sd[a-z]3 is a read-only device \(write-protected\?\): its store can only be used read-only'
check wp-store-read-only log_has 'liveunion: persistence: read-only /dev/sd[a-z]3 \(LABEL=liveunion-rw\), ext4'
check wp-upper-is-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan"
check wp-root-writable vm_run "echo w >/etc/w && cat /etc/w"
require wp-poweroff vm_poweroff
check wp-store-byte-for-byte test "$sum2" = "$(part_sum "$img2")"
store_copy "$img2"
require journal-pending debugfs -w -R "feature needs_recovery" "$PDIR/store.fsck"
require journal-pending-put store_put "$img2"
sum2=$(part_sum "$img2")
require wp-journal-boot vm_start persist-guards none "" --direct "${wp_stick[@]}"
require wp-journal-login vm_login
check wp-journal-said log_has 'liveunion: persistence: /dev/sd[a-z]3 \(LABEL=liveunion-rw\): its journal needs replaying \(the store was not cleanly unmounted\), which a read-only device cannot have; the store is left untouched and not mounted'
check wp-journal-not-damage log_lacks 'errors that need a human'
check wp-journal-upper-is-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan"
require wp-journal-poweroff vm_poweroff
check wp-journal-byte-for-byte test "$sum2" = "$(part_sum "$img2")"
finish

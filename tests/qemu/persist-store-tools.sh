#!/usr/bin/env bash
# summary: liveunion store in a booted stick: status (format, size, last image, what fills it), backup while running (frozen: clean, with an unsynced file) restored onto another disk, grow into the rest of the stick (partition and ext4, online; a file store in place: the file, then its ext4 after a reboot), reset for the next boot (done by the init, the mark gone), a 100% full store still boots to a login prompt and says so; an encrypted stick: passphrase changed, a recovery key added, a backup still encrypted; each checked on the host afterwards
# shellcheck disable=SC2317 # functions run through check and require
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img other=$PDIR/other.img tag=$$
require stick-made make_stick "$img" --persist-size 32M
# the stick is 48 MiB larger than what ./build.sh usb wrote: room for `store grow`
truncate -s +48M "$img"
truncate -s 40M "$other" # another stick, written whole by `store restore`
sectors_of() { partx -g -o SECTORS -n "$2" "$1" | tr -d ' '; }
p3_start=$(partx -g -o START -n 3 "$img" | tr -d ' ')
disk_sectors=$(($(stat -c %s "$img") / 512))

require qemu-starts vm_start persist-store-tools stick-bios "$img" --direct \
	-drive "file=$other,if=virtio,format=raw"
require login vm_login
# status: what the store is, made of and filled with
check status vm_run "liveunion store status"
check status-format out_has '^  format +ext4 partition /dev/sd[a-z]3$'
check status-not-encrypted out_has '^  encrypted +no$'
check status-size out_has '^  size +[23][0-9]\.[0-9] MiB of ext4 \(32\.0 MiB device\)$'
check status-last-image out_has '^  last image +[0-9]{16}$'
check write-files vm_run "head -c 4194304 /dev/urandom >/home/big && echo kept-$tag >/home/kept && echo etc-$tag >/etc/kept && sync"
check status-fills vm_run "liveunion store status | sed -n '/what fills it/{n;p}'"
check status-home-fills-most out_has '^ +4\.[0-9] MiB +upper/home$'
check passphrase-plain-refused vm_run "liveunion store passphrase 2>&1; echo exit=\$?"
check passphrase-plain-said out_has 'the store is not encrypted \(ext4 partition /dev/sd[a-z]3\): it has no passphrase'
check passphrase-plain-exit out_has '^exit=1$'
check bad-subcommand vm_run "liveunion store shrink 2>&1; echo exit=\$?"
check bad-subcommand-said out_has "unknown command 'shrink'"

# backup while running: a file in RAM (/run), then onto the other disk; an unsynced file is in it (the freeze)
check run-is-tmpfs vm_run "grep -q ' /run tmpfs ' /proc/mounts"
check backup vm_run "echo unsynced-$tag >/home/unsynced; liveunion store backup /run/store.img"
check backup-said-frozen out_has "^backup: /dev/sd[a-z]3 \(ext4, 32\.0 MiB\) -> /run/store.img: .* frozen for [0-9.]+ s"
check backup-onto-live-root-refused vm_run "liveunion store backup /root/store.img 2>&1; test ! -e /root/store.img.partial"
check backup-onto-live-root-said out_has 'is on the live root, whose writes go to the store'
check restore-onto-store-refused vm_run "liveunion store restore /run/store.img --to /dev/sda3 2>&1; echo exit=\$?"
check restore-onto-store-said out_has 'is in use \(/dev/sda3 is mounted on /run/live/store\)'
check restore-onto-store-exit out_has '^exit=1$'
check restore vm_run "liveunion store restore /run/store.img --to /dev/vda"
check restore-said out_has '^restore: /run/store.img \(ext4, label liveunion-rw, 32\.0 MiB\) -> /dev/vda \(40\.0 MiB\): done'

# grow: partition 3 to the end of the stick, the ext4 with it, online
check grow vm_run "liveunion store grow"
check grow-said-partition out_has '^grow: partition /dev/sd[a-z]3 32\.0 MiB -> 80\.0 MiB'
check grow-said-ext4 out_has '^grow: ext4 on /dev/sd[a-z]3 32\.0 MiB -> 80\.0 MiB, online'
check grow-df vm_run "df -k /run/live/store | awk 'NR == 2 { print (\$2 > 70000) }'"
check grow-df-bigger out_is 1
check grow-again-refused vm_run "liveunion store grow 2>&1; echo exit=\$?"
check grow-again-said out_has 'already reaches the end of /dev/sd[a-z]'

# reset for the next boot
check reset vm_run "liveunion store reset"
check reset-marked vm_run "cat /run/live/store/liveunion-v1/reset"
check reset-mark-content out_has '^asked=20[0-9-]+T[0-9:]+Z$'
check still-here-until-reboot vm_fact "cat /home/kept" "kept-$tag"
require reboot vm_reboot
check reset-done-said log_has 'liveunion: persistence: a reset was asked for from the running system \(liveunion-v1/reset\): done as live.persist.reset'
check reset-moved-aside log_has 'liveunion: persistence: live.persist.reset: previous changes kept in liveunion-v1/upper.reset-[0-9]{8}-[0-9]{6}'
check reset-fresh-upper vm_run "test ! -e /home/kept && test ! -e /etc/kept"
check reset-mark-gone vm_run "test ! -e /run/live/store/liveunion-v1/reset"
check reset-old-kept vm_fact "cat /run/live/store/liveunion-v1/upper.reset-*/home/kept" "kept-$tag"
check status-reset-fills vm_run "liveunion store status | grep -A3 'what fills it'"
check status-names-reset-aside out_has 'upper\.reset-[0-9]{8}-[0-9]{6}$'

# 100% full: written until the store refuses, then a boot: it reaches the login prompt and says it is full
check fill vm_run "dd if=/dev/zero of=/home/fill bs=1M 2>/dev/null; sync; df -k /run/live/store | awk 'NR == 2 { print \$4 }'"
check filled-to-0 out_has '^0$' # the space watch may say FULL in between
check status-full vm_run "liveunion store status"
check status-says-full out_has '^  free +0 B \(100% used\): FULL, writes fail'
require reboot-full vm_reboot
check full-booted-to-login true
check full-said-by-init log_has 'liveunion: persistence: .*: the meta file was not updated; the store is used as it is'
# the live system's space watch (rc.d/S50spacewatch) says it at its first look, around the login prompt
full_said() { local i; for i in 1 2 3 4 5 6; do log_has 'liveunion: .* is FULL' && return 0; sleep 5; done; return 1; }
check full-said-by-spacewatch full_said
check full-files-there vm_run "test -s /home/fill && echo ok"
check full-freed vm_run "rm /home/fill && sync && liveunion store status | grep '^  free'"
check full-freed-status out_has '^  free +[0-9.]+ MiB \([0-9]+% used\)$'
check poweroff vm_poweroff

# on the host: the stick's partition table and store, and the other disk
fact grown-partition-on-disk $((disk_sectors - disk_sectors % 2048 - p3_start)) sectors_of "$img" 3
check store-clean store_fsck "$img"
check store-unmounted-cleanly store_clean
check grown-ext4 sh -c "dumpe2fs -h '$PDIR/store.fsck' 2>/dev/null | awk -F: '/^Block count/ { n = \$2 } /^Block size/ { s = \$2 } END { exit !(n * s > 79 * 1048576) }'"
check reset-aside-on-disk sh -c "debugfs -R 'ls /liveunion-v1' '$PDIR/store.fsck' 2>/dev/null | grep -q 'upper.reset-'"
check other-disk-clean e2fsck -fn "$other"
fact other-disk-holds-file "kept-$tag" debugfs -R 'cat /liveunion-v1/upper/home/kept' "$other"
fact other-disk-holds-unsynced "unsynced-$tag" debugfs -R 'cat /liveunion-v1/upper/home/unsynced' "$other"

# --- a file store used in place on the stick's FAT32: the file grown now (its FAT mounted for a moment, clean
# again), its ext4 after a reboot ---------------------------------------------------------------------------------
fimg=$PDIR/file.img
require file-stick-made make_stick "$fimg" --persist-size 32M --file
require file-starts vm_start persist-store-tools-file stick-bios "$fimg" --direct
require file-login vm_login
check file-status vm_run "liveunion store status"
check file-status-format out_has '^  format +ext4 file liveunion-rw.img on vfat partition /dev/sd[a-z]3, used in place through /dev/loop[0-9]+$'
check file-grow vm_run "liveunion store grow"
check file-grow-said out_has '^grow: file /liveunion-rw.img on /dev/sd[a-z]3 32\.0 MiB -> 3[5-9]\.0 MiB$'
check file-grow-next-boot out_has "reboot, then run 'liveunion store grow' again"
check file-fat-not-left-mounted vm_run "! grep -q liveunion-grow /proc/mounts"
require file-reboot vm_reboot
check file-in-place-again log_has 'liveunion-rw.img on /dev/sd[a-z]3 \(vfat, in one piece at byte [0-9]+\)'
check file-grow-ext4 vm_run "liveunion store grow"
check file-grow-ext4-said out_has '^grow: ext4 on /dev/loop[0-9]+ 32\.0 MiB -> 3[5-9]\.0 MiB, online$'
check file-poweroff vm_poweroff
check file-fat-clean fat_clean "$fimg"
check file-store-clean file_store_fsck "$fimg"
check file-store-grown test "$(stat -c %s "$PDIR/store.fsck")" -gt $((34 << 20))

# --- an encrypted stick: passphrase changed, a recovery key added, a backup that stays encrypted -----------------
limg=$PDIR/luks.img pass='old horse battery' new='new staple horse'
printf '%s\n' "$pass" >"$PDIR/pass"
truncate -s 0 "$other" && truncate -s 64M "$other" # room for the container and its LUKS2 header
require luks-stick-made make_stick "$limg" --persist-size 32M --encrypt --passphrase-file "$PDIR/pass"
require luks-starts vm_start persist-store-tools-luks stick-bios "$limg" --direct \
	-drive "file=$other,if=virtio,format=raw"
require luks-asked vm_wait 'Passphrase for the persistence store /dev/sd[a-z]3 ' "$VM_BOOT_TIMEOUT"
vm_send "$pass"
require luks-login vm_login
check luks-status vm_run "liveunion store status"
check luks-status-format out_has '^  format +ext4 in LUKS2 \(/dev/mapper/liveunion-rw\), partition /dev/sd[a-z]3$'
check luks-status-encrypted out_has '^  encrypted +yes \(LUKS2\)$'
check luks-keys-written vm_run "printf %s '$pass' >/run/old && printf %s '$new' >/run/new"
check luks-change vm_run "liveunion store passphrase --key-file /run/old --new-key-file /run/new 2>&1; echo exit=\$?"
check luks-change-said out_has '^passphrase: changed; the old one no longer opens /dev/sd[a-z]3$'
check luks-recovery vm_run "liveunion store passphrase --recovery-key --key-file /run/new 2>&1"
recovery=$(sed -n 's/^recovery key: \([a-z0-9-]*\)$/\1/p' <<<"$VM_OUT")
check luks-recovery-printed test "${#recovery}" -eq 53
check luks-marker vm_run "echo luks-secret-$tag >/home/luksmark && sync"
check luks-backup vm_run "liveunion store backup /dev/vda"
check luks-backup-said out_has '^backup: /dev/sd[a-z]3 \(LUKS2, still encrypted, [0-9.]+ MiB\) -> /dev/vda'
check luks-poweroff vm_poweroff
part_read "$limg" 3 "$PDIR/lp3"
opens() { cryptsetup open --test-passphrase --key-file <(printf %s "$2") "$1" >/dev/null 2>&1; }
check luks-new-passphrase-opens opens "$PDIR/lp3" "$new"
check luks-old-passphrase-refused fails opens "$PDIR/lp3" "$pass"
check luks-recovery-key-opens opens "$PDIR/lp3" "$recovery"
check luks-recovery-slot-cost sh -c "cryptsetup luksDump '$PDIR/lp3' | grep -c 'Memory: *65536' | grep -qx 2"
check luks-backup-is-luks2 opens "$other" "$new"
check luks-backup-same-uuid test "$(cryptsetup luksUUID "$other")" = "$(cryptsetup luksUUID "$PDIR/lp3")"
check luks-backup-not-plain fails grep -aqF "luks-secret-$tag" "$other"
finish

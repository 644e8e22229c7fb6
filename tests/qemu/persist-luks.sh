#!/usr/bin/env bash
# summary: an encrypted stick (./build.sh usb --encrypt: LUKS2, argon2id 64 MiB): the init asks for the passphrase on the serial console and the screen; the right one unlocks the store and the four changes survive a reboot, a marker written inside is nowhere in the raw image; three wrong ones, or live.persist.timeout without an answer, boot with tmpfs saying so, the stick byte for byte unchanged; a second LUKS2 disk labelled liveunion-rw is never asked for; a synced file survives a power cut inside LUKS; an encrypted liveunion-rw.img on FAT unlocks too
# shellcheck disable=SC2317 # functions run through check and require
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img tag=$$ pass='correct horse battery'
printf '%s\n' "$pass" >"$PDIR/pass"
PROMPT='Passphrase for the persistence store '
require stick-made make_stick "$img" --persist-size 32M --encrypt --passphrase-file "$PDIR/pass"
is_luks2() { part_read "$1" 3 "$PDIR/p3" && [ "$(cryptsetup luksDump "$PDIR/p3" | awk '$1 == "Version:" { print $2 }')" = 2 ]; }
require store-is-luks2 is_luks2 "$img"
# kdf_of IMAGE: the KDF and memory of partition 3's key slots, as luksDump names them (one line a distinct pair)
kdf_of() {
	part_read "$1" 3 "$PDIR/p3" &&
		cryptsetup luksDump "$PDIR/p3" | awk '$1 == "PBKDF:" { k = $2 } $1 == "Memory:" { k = k " " $2 } $1 == "Salt:" && k { print k; k = "" }' | sort -u
}
fact store-kdf-is-argon2id-64mib "argon2id 65536" kdf_of "$img"

# shellcheck source=tests/qemu/lib/screen.bash
. "$(dirname "$0")/lib/screen.bash"
# luks_store_clean IMAGE: partition 3 of IMAGE as the host reads it after the poweroff: the volume key from
# cryptsetup (the passphrase opens a key slot), the data segment decrypted by iso/luks-fill -d (this host's kernel
# has no device-mapper for cryptsetup open; the power-loss scenario reads its stores the same way), then e2fsck -fn
# and dumpe2fs: clean, no journal to replay. The host's word, not a console line.
luks_store_clean() {
	local seg size
	[ -x "$PDIR/luks-fill" ] || make -s -C "$TOP/iso" O="$PDIR" luks-fill || return 1
	part_read "$1" 3 "$PDIR/p3" || return 1
	seg=$(cryptsetup luksDump "$PDIR/p3" | awk '/^Data segments:/ { d = 1 } d && $1 == "offset:" { print $2; exit }')
	size=$(stat -c %s "$PDIR/p3")
	[ -n "$seg" ] && [ "$seg" -lt "$size" ] || return 1
	rm -f "$PDIR/volume.key"
	cryptsetup luksDump --batch-mode --dump-volume-key --volume-key-file "$PDIR/volume.key" \
		--key-file "$PDIR/pass.raw" "$PDIR/p3" >/dev/null || return 1
	"$PDIR/luks-fill" -d "$PDIR/volume.key" "$PDIR/p3" "$seg" $((size - seg)) "$PDIR/store.plain" || return 1
	e2fsck -fn "$PDIR/store.plain" >"$PDIR/fsck.out" 2>&1 ||
		{ vm_note "luks_store_clean: e2fsck: $(tail -n 3 "$PDIR/fsck.out")"; return 1; }
	dumpe2fs -h "$PDIR/store.plain" 2>/dev/null >"$PDIR/dumpe2fs.out" || return 1
	grep -q '^Filesystem state: *clean$' "$PDIR/dumpe2fs.out" && ! grep -q needs_recovery "$PDIR/dumpe2fs.out"
}
printf '%s' "$pass" >"$PDIR/pass.raw"
# screen_text_shown NAME: a screenshot NAME of the VGA text console (kept as a PNG) with text on it: what the
# visitor sees while the keyboard answer below unlocks the store
screen_text_shown() {
	screen_shot "$1" || return 1
	[ "$(screen_foreign "$SCREEN_LAST" 000000 || echo 0)" -ge 50 ]
}
# unlock WHAT-ERE PASSPHRASE: the prompt for the store WHAT, answered
unlock() { vm_wait "$PROMPT$1" "$VM_BOOT_TIMEOUT" && vm_send "$2"; }
# stick_unchanged SUM: partition 3 is byte for byte as it was; prompts_are N: the console asked N times
stick_unchanged() { [ "$(part_sum "$img")" = "$1" ]; }
prompts_are() { [ "$(tr -d '\r' <"$VM_LOG" | grep -c "$PROMPT")" = "$1" ]; }

# --- the right passphrase: the store is used, changes persist, nothing readable on the stick --------------------
require qemu-starts vm_start persist-luks stick-bios "$img" --direct
require asked-for-the-stick unlock '/dev/sd[a-z]3 \(LUKS2 LABEL=liveunion-rw\): ' "$pass"
require login vm_login
check asked-on-every-console vm_fact 'cat /sys/class/tty/console/active' 'tty0 ttyS0'
# the init ignored SIGPIPE while it wrote the passphrase: not inherited by the live system (bit 13 of SigIgn)
# shellcheck disable=SC2016 # expanded by the guest's shell
check sigpipe-not-ignored-after vm_run 'm=$(sed -n "s/^SigIgn:[[:space:]]*//p" /proc/self/status) && [ $((0x$m & 4096)) -eq 0 ]'
check unlocked log_has '^liveunion: persistence: /dev/sd[a-z]3 \(LUKS2 LABEL=liveunion-rw\) unlocked in [0-9.]+ s'
unlock_s=$(tr -d '\r' <"$VM_LOG" | sed -n 's/^liveunion: persistence: .* unlocked in \([0-9.]*\) s.*/\1/p' | head -n 1)
vm_note "unlock (argon2id 64 MiB, 4 passes, under TCG): ${unlock_s:-?} s"
check store-used log_has '^liveunion: persistence: store /dev/sd[a-z]3 \(LUKS2 LABEL=liveunion-rw\) unlocked as /dev/mapper/liveunion-rw, ext4, [0-9]+ MiB free'
check upper-is-the-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
check modify modify_four "$tag"
marker="liveunion-secret-marker-$tag"
check marker-written vm_run "echo $marker >/home/marker && head -c 65536 /dev/zero | tr '\\0' x >>/home/marker && sync"
vm_mark
require reboot vm_reboot_begin
require asked-again unlock '/dev/sd[a-z]3 ' "$pass"
require login-again vm_login
check four-changes-kept four_kept "$tag"
check marker-content vm_fact "head -n 1 /home/marker" "$marker"
check poweroff vm_poweroff
check rcK-said-clean log_has 'liveunion rcK: persistence store clean'
check marker-not-in-the-raw-image fails grep -aqF "$marker" "$img"
# the store as the host sees it after the poweroff: unlocked read-only with the passphrase, a clean ext4
check store-clean-after-poweroff luks_store_clean "$img"
# typed twice (both boots), echoed never: the serial console shows no passphrase (the screen's side: below)
check passphrase-never-echoed fails grep -aqF "$pass" "$VM_LOG"
check planted-marker-would-be-found grep -aqF liveunion-rw "$img" # the LUKS2 label is plain text: grep sees the image

# --- the key slot made cheap for the rest -------------------------------------------------------------------------
# What follows is about the answers (wrong, empty, typed on the screen, none), which disk is asked for and a power
# cut: not the KDF, which the boots above unlocked as the tool makes it. Each try costs a full argon2id run (64 MiB,
# 4 passes: 4-19 s under TCG on a loaded host), eight of them below: the stick's one key slot is converted to PBKDF2
# with 1000 iterations on the host (the same passphrase, the volume key and the data untouched).
cheap_kdf() {
	part_read "$img" 3 "$PDIR/p3" &&
		cryptsetup luksConvertKey --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
			--key-file "$PDIR/pass.raw" "$PDIR/p3" &&
		part_write "$img" 3 "$PDIR/p3"
}
require kdf-made-cheap cheap_kdf
fact kdf-is-pbkdf2-now pbkdf2 kdf_of "$img"

# --- three wrong passphrases: tmpfs, said, nothing written -------------------------------------------------------
sum=$(part_sum "$img")
require wrong-starts vm_start persist-luks-wrong stick-bios "$img" --direct
require wrong-1 unlock '/dev/sd[a-z]3 ' 'not it 1'
require wrong-2 unlock '/dev/sd[a-z]3 ' 'not it 2'
require wrong-3 unlock '/dev/sd[a-z]3 ' 'not it 3'
require wrong-login vm_login
check says-each-wrong log_has '^liveunion: persistence: wrong passphrase for /dev/sd[a-z]3 .*\(3 of 3 tries\)'
check says-tmpfs log_has '^liveunion: persistence: 3 wrong passphrases for /dev/sd[a-z]3 .*: not unlocked, nothing written to it; changes go to tmpfs'
check wrong-upper-is-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan"
check wrong-changes-not-there four_gone
check wrong-poweroff vm_poweroff
check wrong-stick-unchanged stick_unchanged "$sum"

# --- an empty answer, a wrong one, then the right one on the VGA screen's keyboard (QMP send-key): unlocked ------
mapfile -t qmp < <(screen_start_args)
require keys-starts vm_start persist-luks-keys stick-bios "$img" --direct "${qmp[@]}"
require keys-empty unlock '/dev/sd[a-z]3 ' ''
check keys-empty-is-a-try vm_wait '^liveunion: persistence: empty passphrase for /dev/sd[a-z]3 .*\(1 of 3 tries\)' 60
require keys-wrong unlock '/dev/sd[a-z]3 ' 'not it'
check keys-wrong-is-a-try vm_wait '^liveunion: persistence: wrong passphrase for /dev/sd[a-z]3 .*\(2 of 3 tries\)' 120
require keys-asked-third-time vm_wait "$PROMPT/dev/sd[a-z]3 " 60
sleep 1
check keys-prompt-on-screen screen_text_shown luks-prompt-on-vga
check keys-right-typed screen_type "$pass"
check keys-right-enter screen_keys ret
check keys-unlocked vm_wait '^liveunion: persistence: /dev/sd[a-z]3 \(LUKS2 LABEL=liveunion-rw\) unlocked in' 120
require keys-login vm_login
check keys-store-used vm_run "grep -x 'upper.kind=store' /run/live/plan"
check keys-poweroff vm_poweroff
check keys-passphrase-never-echoed fails grep -aqF "$pass" "$VM_LOG"
check keys-store-clean luks_store_clean "$img"

sum=$(part_sum "$img")
# --- no answer within live.persist.timeout: the same, unattended ----------------------------------------------
require timeout-starts vm_start persist-luks-timeout stick-bios "$img" --keys live.persist.timeout=3
require timeout-login vm_login
check timeout-says-why log_has '^liveunion: persistence: no passphrase given within live.persist.timeout=3 s: not unlocked, nothing written to it; changes go to tmpfs'
check timeout-poweroff vm_poweroff
check timeout-stick-unchanged stick_unchanged "$sum"

# --- another encrypted disk (labelled liveunion-rw too): only the boot stick's store is asked for -----------------
truncate -s 24M "$PDIR/other.img"
printf 'other' >"$PDIR/other.key"
require other-disk-made cryptsetup luksFormat --batch-mode --type luks2 --label liveunion-rw --pbkdf pbkdf2 \
	--pbkdf-force-iterations 1000 --key-file "$PDIR/other.key" "$PDIR/other.img"
osum=$(sha256sum <"$PDIR/other.img")
require other-starts vm_start persist-luks-other stick-bios "$img" --direct \
	-drive "file=$PDIR/other.img,if=virtio,format=raw"
require other-asked-for-the-stick unlock '/dev/sd[a-z]3 ' "$pass"
require other-login vm_login
check other-disk-there vm_fact 'test -b /dev/vda && echo seen' seen
check asked-once-only prompts_are 1
check never-asked-for-vda log_lacks "$PROMPT/dev/vda"
check other-poweroff vm_poweroff
check other-disk-unchanged test "$(sha256sum <"$PDIR/other.img")" = "$osum"

# --- a power cut inside LUKS: a synced file is there after the next unlock -------------------------------------
require cut-starts vm_start persist-luks-cut stick-bios "$img" --direct
require cut-asked unlock '/dev/sd[a-z]3 ' "$pass"
require cut-login vm_login
check cut-wrote vm_fact "echo synced-$tag >/home/synced && sync && echo synced" synced
vm_powercut
require cut-again-starts vm_start persist-luks-cut2 stick-bios "$img" --direct
require cut-again-asked unlock '/dev/sd[a-z]3 ' "$pass"
require cut-again-login vm_login
check cut-synced-file-kept vm_fact 'cat /home/synced' "synced-$tag"
check cut-journal-replayed-only log_lacks 'e2fsck -p exit [1-9]|errors that need a human'
check cut-poweroff vm_poweroff

# --- an encrypted liveunion-rw.img on the stick's FAT32 -------------------------------------------------------
fimg=$PDIR/file.img
require file-stick-made make_stick "$fimg" --persist-size 32M --file --encrypt --passphrase-file "$PDIR/pass"
require file-starts vm_start persist-luks-file stick-bios "$fimg" --direct
require file-asked unlock 'liveunion-rw.img on /dev/sd[a-z]3 \(vfat, in one piece at byte [0-9]+\) via /dev/loop[0-9]+, LUKS2: ' "$pass"
require file-login vm_login
check file-store-used vm_run "grep -x 'upper.kind=store' /run/live/plan"
check file-poweroff vm_poweroff
check file-fat-clean fat_clean "$fimg"
finish

#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# Host test of `liveunion store` (status, reset, backup, restore, grow, passphrase's refusal) on stores made as
# ./build.sh usb makes them, attached as loop devices: a partition store (MBR, last partition) on a disk with room
# after it, a file store reached through a mounted FAT32, and one used in place on its FAT32 partition (a loop
# device with an offset, as the init sets it up). LUKS needs device-mapper, which this host lacks: it is tested
# in tests/qemu/persist-store-tools.sh. The command runs under ASan/UBSan. Needs root; runs in a private mount namespace and detaches its loops.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
needs_root mounts, loop devices, partition tables
private_mounts "$@"

tmp=$(mktemp -d /tmp/store-tools-test.XXXXXX)
cleanup() {
	local m l loops
	# the loops on our files, those on them (in place) first, listed while the file systems holding their files are
	# still mounted (once unmounted, a loop's file is named from its own mount's root, /liveunion-rw.img, and was
	# left attached); the partition nodes made below
	loops=$(losetup -n -O NAME,BACK-FILE | awk -v t="$tmp/" 'index($2, t) != 1 && $2 ~ /^\/dev\/loop/ {print $1}')
	loops="$loops $(losetup -n -O NAME,BACK-FILE | awk -v t="$tmp/" 'index($2, t) == 1 {print $1}')"
	for m in $(findmnt -rn -o TARGET | grep -E "^$tmp/" | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
	for l in $loops; do
		losetup -d "$l" 2>/dev/null || true
	done
	# shellcheck disable=SC2086 # a list of node paths, none with a space
	[ -z "${made_nodes:-}" ] || rm -f $made_nodes
	rm -rf "$tmp"
}
at_exit cleanup
# the command built with ASan/UBSan (the flags and the library of liveunion/Makefile's san flavour)
make -s -C "$TOP/liveunion" OUT="$OUT" san >/dev/null
LU=$tmp/liveunion-san
# shellcheck disable=SC2046 # the flags are words
cc $(make -s -C "$TOP/liveunion" OUT="$OUT" print-cflags-san) -o "$LU" "$TOP"/liveunion/cmd/*.c \
	"$OUT/liveunion/san/libliveunion.a"

# lu ARGS...: runs liveunion, output (both streams) in $out, status in $rc
lu() {
	rc=0
	out=$("$LU" "$@" 2>&1) || rc=$?
}
shown() { printf '%s\n' "$out" | sed 's/^/#   | /' >&2; }
said() { grep -Eq -- "$1" <<<"$out" || { printf '#   not said: %s\n' "$1" >&2; shown; return 1; }; }
exit_is() { [ "$rc" = "$1" ] || { printf '#   exit %s, not %s\n' "$rc" "$1" >&2; shown; return 1; }; }
attach() { losetup -f --show "$@"; } # [losetup options] FILE: the loop device (the cleanup finds it by its file)
# part_nodes LOOP: /dev nodes of its partitions where nothing (no udev here) made them, removed by the cleanup
made_nodes=''
part_nodes() {
	local p n
	for p in /sys/block/"${1#/dev/}"/"${1#/dev/}"p*; do
		n=/dev/$(basename "$p")
		[ -e "$n" ] && continue
		mknod "$n" b "$(cut -d: -f1 "$p/dev")" "$(cut -d: -f2 "$p/dev")" && made_nodes="$made_nodes $n"
	done
}
# a store's content: liveunion-v1 with meta, an upper with a big /home and a small /etc, a saved layer
fill_store() {
	mkdir -p "$1/liveunion-v1/upper/home" "$1/liveunion-v1/upper/etc" "$1/liveunion-v1/work" "$1/liveunion-v1/layers"
	printf 'format=1\nimage=2026120711000000\ncreated=2026-12-01T10:00:00Z\nlast_used=2026-12-07T11:00:00Z\n' \
		>"$1/liveunion-v1/meta"
	head -c 3M /dev/urandom >"$1/liveunion-v1/upper/home/big"
	echo kept >"$1/liveunion-v1/upper/etc/kept"
	head -c 1M /dev/urandom >"$1/liveunion-v1/layers/20-mine.squashfs"
	sync
}

# --- a partition store: the last partition of a 64 MiB disk, 16 MiB, room after it ------------------------------
disk=$tmp/disk.img
truncate -s 64M "$disk"
printf 'start=2048, size=8192, type=83\nstart=10240, size=32768, type=83\n' | sfdisk -q "$disk" >/dev/null
dl=$(attach -P "$disk")
partx -a "$dl" 2>/dev/null || true # -P scans in the background: this waits for it
part_nodes "$dl"
p2=${dl}p2
mkfs.ext4 -q -L liveunion-rw "$p2"
mkdir "$tmp/store"
mount "$p2" "$tmp/store"
fill_store "$tmp/store"
S=(--store "$tmp/store")

lu store status "${S[@]}"
check status-runs exit_is 0
check status-format said "format +ext4 partition $p2\$"
check status-not-encrypted said '^  encrypted +no$'
check status-size said '^  size +1[0-9]\.[0-9] MiB of ext4 \(16\.0 MiB device\)$'
check status-free said '^  free +[0-9.]+ MiB \([0-9]+% used\)$'
check status-last-image said '^  last image +2026120711000000$'
check status-last-used said '^  last used +2026-12-07T11:00:00Z$'
check status-no-reset said '^  reset +no$'
# what fills it, largest first: the 3 MiB /home, then the 1 MiB saved layer, then /etc
# shellcheck disable=SC2016 # expanded by the inner bash
check status-fills-largest-first bash -c 'grep -A3 "what fills it" <<<"$1" | sed -n 2,4p | awk "{print \$3}" |
	tr "\n" " " | grep -qx "upper/home layers/20-mine.squashfs upper/etc "' _ "$out"
lu store status --store "$tmp"
check status-not-a-store said "no store mounted on $tmp"
check status-not-a-store-exit exit_is 1
lu store status --bogus
check status-bad-option said "unknown option '--bogus'"
check status-bad-option-exit exit_is 2
lu store frobnicate
check unknown-subcommand said "unknown command 'frobnicate'"
check unknown-subcommand-exit exit_is 2

# reset: the mark the init reads (contract.h STORE_RESET), written whole; --cancel removes it
lu store reset "${S[@]}"
check reset-runs exit_is 0
check reset-marked grep -q '^asked=20[0-9-]*T[0-9:]*Z$' "$tmp/store/liveunion-v1/reset"
check reset-no-temp-left fails test -e "$tmp/store/liveunion-v1/reset.new"
check reset-upper-untouched test -f "$tmp/store/liveunion-v1/upper/home/big"
lu store status "${S[@]}"
check status-says-reset said '^  reset +asked for'
lu store reset --cancel "${S[@]}"
check reset-cancelled fails test -e "$tmp/store/liveunion-v1/reset"
check reset-cancel-said said 'request taken back'
lu store reset extra "${S[@]}"
check reset-extra-argument said "unexpected argument 'extra'"

# passphrase: a plain store has none, and says so
lu store passphrase "${S[@]}"
check passphrase-plain-refused said 'the store is not encrypted \(ext4 partition .*\): it has no passphrase'
check passphrase-plain-exit exit_is 1

# backup: a file that is the store, clean (the freeze committed the journal), sparse
echo during >"$tmp/store/liveunion-v1/upper/etc/during" # not synced: the freeze writes it out
lu store backup "$tmp/backup.img" "${S[@]}"
check backup-runs exit_is 0
check backup-said-frozen said "^backup: $p2 \(ext4, 16\.0 MiB\) -> $tmp/backup.img: .* frozen for [0-9.]+ s"
fact backup-size "$(blockdev --getsize64 "$p2")" stat -c %s "$tmp/backup.img"
check backup-clean e2fsck -fn "$tmp/backup.img"
fact backup-holds-unsynced-file during debugfs -R 'cat /liveunion-v1/upper/etc/during' "$tmp/backup.img"
check backup-sparse test "$(du -k "$tmp/backup.img" | cut -f1)" -lt 12000
check backup-no-partial-left fails test -e "$tmp/backup.img.partial"
check store-thawed touch "$tmp/store/after-backup"
lu store backup "$tmp/backup.img" "${S[@]}"
check backup-existing-refused said 'exists: not overwritten'
lu store backup "$tmp/store/inside.img" "${S[@]}"
check backup-onto-store-refused said 'whose writes go to the store'
check backup-onto-store-nothing-left fails test -e "$tmp/store/inside.img.partial"
lu store backup "${S[@]}"
check backup-needs-dest said 'name the destination'
check backup-needs-dest-exit exit_is 2
lu store backup "$dl" "${S[@]}"
check backup-onto-own-disk-refused said 'is the store itself \(or its disk\)'

# restore: onto another "stick" (a loop device), byte for byte; every refusal first
truncate -s 8M "$tmp/small.img"
small=$(attach "$tmp/small.img")
truncate -s 24M "$tmp/other.img"
other=$(attach "$tmp/other.img")
head -c 1M /dev/urandom >"$tmp/junk"
lu store restore "$tmp/junk" --to "$other"
check restore-junk-refused said 'is not a store backup: neither an ext4'
lu store restore "$tmp/backup.img" --to "$small"
check restore-too-small-refused said "holds 8\.0 MiB \(8388608 bytes\), the store needs 16\.0 MiB"
lu store restore "$tmp/backup.img" --to "$p2"
check restore-mounted-refused said "is in use \($p2 is mounted on $tmp/store\)"
lu store restore "$tmp/backup.img"
check restore-needs-to said 'name the device to write with --to DEVICE'
check restore-needs-to-exit exit_is 2
lu store restore "$tmp/backup.img" --to "$tmp/other.img"
check restore-not-a-device said 'name a store partition'
lu store restore "$tmp/backup.img" --to "$other"
check restore-runs exit_is 0
check restore-said said "^restore: $tmp/backup.img \(ext4, label liveunion-rw, 16\.0 MiB\) -> $other \(24\.0 MiB\): done"
check restore-says-grow said 'store grow. uses the rest'
check restore-bytes cmp -n "$(stat -c %s "$tmp/backup.img")" "$tmp/backup.img" "$other"

# grow: the partition to the end of the disk, then the ext4, online; then nothing left to grow into
blocks_before=$(df -k --output=size "$tmp/store" | tail -n 1)
lu store grow "${S[@]}"
check grow-said-partition said "^grow: partition $p2 16\.0 MiB -> 59\.0 MiB \(MBR entry 2, to the end of $dl\)"
sectors_of() { partx -g -o SECTORS -n "$2" "$1" | tr -d ' '; } # IMAGE N: partition N's size in the table
fact grow-mbr-on-disk 120832 sectors_of "$disk" 2
fact grow-kernel-told $((120832 * 512)) blockdev --getsize64 "$p2"
# Growing a mounted ext4 needs CAP_SYS_RESOURCE, which this host's root may lack (a container): then the refusal
# is what is checked here; tests/qemu/persist-store-tools.sh checks the grown ext4 in the live system.
has_sys_resource() { # bit 24 of the effective capabilities
	local eff
	eff=$(awk '$1 == "CapEff:" { print $2 }' /proc/self/status)
	[ $((0x$eff >> 24 & 1)) -eq 1 ]
}
if has_sys_resource; then
	check grow-runs exit_is 0
	check grow-said-ext4 said "^grow: ext4 on $p2 16\.0 MiB -> 59\.0 MiB, online"
	check grow-ext4-bigger test "$(df -k --output=size "$tmp/store" | tail -n 1)" -gt $((blocks_before + 20000))
else
	printf '# no CAP_SYS_RESOURCE here: the online ext4 grow is checked in qemu\n'
	check grow-ext4-refused-said said "EXT4_IOC_RESIZE_FS\): Operation not permitted: the partition grew, the ext4 did not"
	check grow-ext4-refused-exit exit_is 1
fi
check grow-files-kept cmp -s <(debugfs -R 'cat /liveunion-v1/upper/home/big' "$tmp/backup.img" 2>/dev/null) \
	"$tmp/store/liveunion-v1/upper/home/big"
lu store grow "${S[@]}"
check grow-again-nothing said 'already reaches the end of'
check grow-again-exit exit_is 1
umount "$tmp/store"
check grown-store-clean e2fsck -fn "$p2"

# --- a file store through a mounted file system (the init's way for a fragmented one; FAT there, and FAT32's 4 GiB
# limit; a 48 MiB tmpfs here: this host's kernel may lack vfat) --------------------------------------------------
mkdir "$tmp/fat" "$tmp/fstore"
mount -t tmpfs -o size=48m tmpfs "$tmp/fat"
truncate -s 8M "$tmp/fat/liveunion-rw.img"
mkfs.ext4 -q "$tmp/fat/liveunion-rw.img"
fl=$(attach "$tmp/fat/liveunion-rw.img")
mount "$fl" "$tmp/fstore"
fill_store "$tmp/fstore"
F=(--store "$tmp/fstore")
lu store status "${F[@]}"
check file-status-format said "format +ext4 file liveunion-rw.img \(on a mounted file system\), through $fl\$"
lu store grow "${F[@]}"
check file-grow-said said "^grow: file $tmp/fat/liveunion-rw.img 8\.0 MiB -> 4[0-9]\.0 MiB"
# shellcheck disable=SC2016 # expanded by the inner bash
fact file-grown-size 1 bash -c 'echo $(($(stat -c %s "$1") > 40 * 1048576))' _ "$tmp/fat/liveunion-rw.img"
fact file-loop-told "$(stat -c %s "$tmp/fat/liveunion-rw.img")" blockdev --getsize64 "$fl"
lu store grow "${F[@]}"
check file-grow-no-room said 'no room: .* has [0-9.]+ ([KM]iB|B) free'
check file-grow-no-room-exit exit_is 1
umount "$tmp/fstore"
check file-store-clean e2fsck -fn "$fl"

# --- a file store used in place: a loop device with an offset on a FAT32 partition that is not mounted ------------
truncate -s 40M "$tmp/fat.img"
mkfs.vfat -F 32 "$tmp/fat.img" >/dev/null
truncate -s 8M "$tmp/inplace.img"
mkfs.ext4 -q "$tmp/inplace.img"
dd if="$tmp/inplace.img" of="$tmp/fat.img" bs=1M seek=16 conv=notrunc status=none
fatdev=$(attach "$tmp/fat.img")
il=$(losetup -f --show -o $((16 << 20)) --sizelimit $((8 << 20)) "$fatdev")
mount "$il" "$tmp/fstore"
lu store status "${F[@]}"
check inplace-status-format said "format +ext4 file liveunion-rw.img on vfat partition $fatdev, used in place through $il\$"
# grow mounts the FAT for a moment to extend /liveunion-rw.img: here the ext4 is no file of the FAT, which is
# refused (tests/qemu/persist-store-tools.sh grows a real one); a kernel without vfat cannot mount it at all
lu store grow "${F[@]}"
if grep -qw vfat /proc/filesystems || modprobe -q vfat 2>/dev/null; then
	check inplace-not-the-file said "the store is not /liveunion-rw.img of $fatdev"
else
	check inplace-no-vfat said "mount $fatdev \(vfat\) to grow the file on it: No such device"
fi
check inplace-grow-exit exit_is 1
check inplace-fat-unmounted fails grep -q "^$fatdev " /proc/mounts
umount "$tmp/fstore"
finish

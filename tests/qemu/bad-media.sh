#!/usr/bin/env bash
# summary: damaged and unstable media: an ISO cut in the middle of a layer, a corrupted dm-verity hash tree, read errors on the medium and on the store and write errors on the store in the middle of a session (qemu blkdebug: the store made read-only by the kernel, said, what was synced before kept for the next boot), and the stick pulled mid-session each end in a message naming the device or layer and what failed; the rescue shell or the running system still answers; nothing is written to another disk
# shellcheck disable=SC2016 # the guest's arithmetic and the host's eval'd checks expand later, on purpose
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"

require iso-exists test -f "$ISO"
read -r off size < <(iso_file_offset "$ISO" /live/10-base.squashfs)
require layer-located test -n "${off:-}" -a "${size:-0}" -gt $((1 << 20))
read -r voff vsize < <(iso_file_offset "$ISO" /live/10-base.verity)
require hash-tree-located test -n "${voff:-}" -a "${vsize:-0}" -gt 8192

# A bystander: a disk of the user's (ext4 with a file) attached to
# every boot below; whatever fails, it is byte for byte the same afterwards.
bystander=$PDIR/bystander.img
mkdir -p "$PDIR/bystander.d" && echo "the user's own file" >"$PDIR/bystander.d/mine" || exit 1
# shellcheck disable=SC2317 # called through require
make_bystander() { mkfs.ext4 -q -F -L userdata -d "$PDIR/bystander.d" "$bystander" 8M >/dev/null; }
require bystander-made make_bystander
bsum=$(sha256sum <"$bystander")
BYSTANDER=(-drive "file=$bystander,if=virtio,format=raw")
# shellcheck disable=SC2317 # called through check
bystander_untouched() { [ "$(sha256sum <"$bystander")" = "$bsum" ]; }

# rescue_answers: the rescue shell is there and runs commands.
# shellcheck disable=SC2317 # called through check
rescue_answers() { vm_quiet && vm_fact 'echo "rescue $((6 * 7))"' 'rescue 42'; }
# stops_in_rescue NAME ERE VM_START_ARGS...: that boot ends in the rescue shell after a console line matching ERE,
# without a kernel panic, and the shell answers.
stops_in_rescue() {
	local n=$1 re=$2
	shift 2
	require "$n-boot" vm_start "bad-media-$n" "$@" "${BYSTANDER[@]}"
	require "$n-rescue" vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
	check "$n-names-layer" log_has "$re"
	check "$n-no-panic" log_lacks 'Kernel panic'
	check "$n-rescue-answers" rescue_answers
	check "$n-bystander-seen" vm_run "grep -qx $((8 * 2048)) /sys/class/block/vd*/size"
	vm_stop
	check "$n-bystander-untouched" bystander_untouched
}

# 1. The ISO cut in the middle of 10-base (a download or a copy that stopped): the layer cannot be read.
cut=$PDIR/cut.iso
head -c $(((off + size / 2) / 2048 * 2048)) "$ISO" >"$cut"
# the kernel and initrd come from the whole ISO (a cut one may have lost them), the CD is the cut copy
stops_in_rescue cut '^liveunion: layer 10-base[: ].*(I/O error|Input/output error|short|beyond|truncat)' \
	none "" --keys "loglevel=4" -drive "file=$cut,if=ide,index=2,media=cdrom,readonly=on"
check cut-step-failed log_has '^liveunion: step layers failed'
rm -f "$cut"

# 2. One byte of 10-base's hash tree flipped (after its 4 KiB verity superblock): the top hash block no longer
# matches the root hash on the command line, so nothing of the layer is trusted.
tree=$PDIR/tree.iso
cp "$ISO" "$tree"
require tree-byte-flipped flip_byte "$tree" $((voff + 4096 + 100))
stops_in_rescue tree '^liveunion: layer 10-base \([^)]*10-base\.squashfs\): .*root hash.*(I/O error|Input/output error)' \
	cd-bios "$tree" --keys "loglevel=4"
rm -f "$tree"

# 3. Read errors on the medium (the ISO as a disk through blkdebug: EIO for every read of 10-base's third 4 KiB
# block, which the init reads through dm-verity when it mounts the layer).
cat >"$PDIR/medium-eio.conf" <<CONF
[inject-error]
event = "read_aio"
errno = "5"
sector = "$(((off + 8192) / 512))"
once = "off"
CONF
stops_in_rescue eio '^liveunion: layer 10-base .*(I/O error|Input/output error)' none "" --keys "loglevel=4" \
	-drive "file=blkdebug:$PDIR/medium-eio.conf:$ISO,if=virtio,format=raw,readonly=on"
check eio-medium-found log_has 'medium .*/dev/vda'

# 4. Read errors on the store's superblock: the store is not used, and the message says which device could not
# be read (not just "no store"); the system boots on tmpfs and nothing is written to the stick.
img=$PDIR/stick.img
require stick-made make_stick "$img" --persist-size 16M
read -r p3 _ < <(part_of "$img" 3)
require store-located test -n "${p3:-}"
cat >"$PDIR/store-eio.conf" <<CONF
[inject-error]
event = "read_aio"
errno = "5"
sector = "$((p3 / 512 + 2))"
once = "off"
CONF
sum=$(part_sum "$img")
# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
require store-eio-boot vm_start bad-media-store none "" --direct -device qemu-xhci,id=xhci \
	-drive "if=none,id=stick,format=raw,file=blkdebug:$PDIR/store-eio.conf:$img" \
	-device usb-storage,bus=xhci.0,drive=stick "${BYSTANDER[@]}"
require store-eio-login vm_login
check store-eio-said log_has 'liveunion: persistence: none: no partition labelled liveunion-rw and no liveunion-rw.img on /dev/sd[a-z]; could not read /dev/sd[a-z]3'
check store-eio-upper-is-tmpfs vm_run "grep -x 'upper.kind=tmpfs' /run/live/plan"
require store-eio-poweroff vm_poweroff
check store-eio-untouched test "$sum" = "$(part_sum "$img")"
check store-eio-bystander-untouched bystander_untouched

# 4b. Write errors on the store in the middle of a session (a stick wearing out): EIO for every write that touches
# one sector of the store's journal, 600 blocks in (the boot's own commits stay below it; the session's synced
# changes wrap round the journal into it). The kernel aborts the journal and makes the store read-only
# (errors=remount-ro); the live system says so naming the device, keeps running, and what was synced before the
# error is on the stick; the next boot, without the errors, uses the store with it.
require store-copied store_copy "$img"
jblock=$(debugfs -R 'bmap <8> 600' "$PDIR/store.fsck" 2>/dev/null)
bsize=$(dumpe2fs -h "$PDIR/store.fsck" 2>/dev/null | awk -F: '/^Block size:/ { print $2 + 0 }')
require journal-block-located test -n "$jblock" -a -n "$bsize"
cat >"$PDIR/store-weio.conf" <<CONF
[inject-error]
event = "write_aio"
errno = "5"
sector = "$((p3 / 512 + jblock * bsize / 512))"
once = "off"
CONF
# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
require store-weio-boot vm_start bad-media-store-weio none "" --direct -device qemu-xhci,id=xhci \
	-drive "if=none,id=stick,format=raw,file=blkdebug:$PDIR/store-weio.conf:$img" \
	-device usb-storage,bus=xhci.0,drive=stick "${BYSTANDER[@]}"
require store-weio-login vm_login
check store-weio-store-used vm_run "grep -x 'upper.kind=store' /run/live/plan"
check store-weio-synced-before vm_run 'echo before-errors >/home/kept && sync'
# small synced changes, one journal commit each, until the store stops taking them (at most 400)
check store-weio-writes-fail vm_run 'i=0; while [ $i -lt 400 ]; do echo $i >/home/f-$i && sync /home/f-$i || break; i=$((i + 1)); done; echo "stopped at $i"; [ $i -lt 400 ]' 600
# (the kernel notices its aborted journal at the next write; since Linux 6.7 ext4's read-only state after errors is
# its own: /proc/mounts still says rw, and writes fail)
check store-weio-store-takes-no-writes vm_run '! touch /run/live/store/liveunion-v1/probe'
# said within the watch's 5 s (waited for in the kernel's log, which the message also goes to), on the console too
said='liveunion: /dev/sd[a-z]3, the persistence store (/run/live/store), was made read-only by the kernel after I/O errors'
check store-weio-said vm_run "i=0; while [ \$i -lt 30 ] && ! dmesg | grep -q '$said'; do sleep 2; i=\$((i + 1)); done; dmesg | grep -q '$said'" 120
check store-weio-said-on-console log_has 'liveunion: /dev/sd[a-z]3, the persistence store \(/run/live/store\), was made read-only by the kernel after I/O errors'
check store-weio-kernel-says-why vm_run 'dmesg | grep -E "Aborting journal on device sd[a-z]3|EXT4-fs \(sd[a-z]3\): Remounting filesystem read-only"'
check store-weio-shell-answers vm_fact 'echo "still $((6 * 7))"' 'still 42'
vm_stop
check store-weio-bystander-untouched bystander_untouched
require store-weio-next-boot vm_start bad-media-store-after stick-bios "$img" --direct "${BYSTANDER[@]}"
require store-weio-next-login vm_login
check store-weio-next-store-used vm_run "grep -x 'upper.kind=store' /run/live/plan"
check store-weio-next-kept-synced-before vm_fact 'cat /home/kept' before-errors
require store-weio-next-poweroff vm_poweroff
check store-weio-next-bystander-untouched bystander_untouched

# 5. The stick (medium and store) pulled mid-session: the live system says which device is gone; its shell still
# answers; what was synced before is on the store.
# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
require pull-boot vm_start bad-media-pull none "" --direct -device qemu-xhci,id=xhci \
	-drive "if=none,id=stick,format=raw,file=$img" -device usb-storage,bus=xhci.0,drive=stick,id=stick-dev \
	-qmp "unix:$PDIR/qmp.sock,server=on,wait=off" "${BYSTANDER[@]}"
require pull-login vm_login
check pull-store-used vm_run "grep -x 'upper.kind=store' /run/live/plan"
check pull-synced-before vm_run "echo before-pull >/home/kept && sync"
check pull-device-del vm_qmp "$PDIR/qmp.sock" '{"execute": "device_del", "arguments": {"id": "stick-dev"}}'
check pull-said vm_wait 'liveunion: /dev/sd[a-z]3, the persistence store \(/run/live/store\), is gone \(unplugged or failed\)' 60
check pull-shell-answers vm_fact 'echo "still $((6 * 7))"' 'still 42'
vm_stop
check pull-bystander-untouched bystander_untouched
# the stick was pulled, not unmounted: its journal is replayed on the copy first, as the next boot's e2fsck -p would
check pull-synced-file-kept eval 'store_copy "$img" && e2fsck -p -E journal_only "$PDIR/store.fsck" >/dev/null &&
	store_file_is liveunion-v1/upper/home/kept before-pull'
finish

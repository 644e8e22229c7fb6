# shellcheck shell=bash
# Sourced by tests/qemu/persist-powerloss*.sh with PL_KIND set: part (the store is partition 3, LABEL=liveunion-rw),
# fat or exfat (the store is liveunion-rw.img on a FAT32 or exFAT partition 3, as ./build.sh usb --file makes it, used
# in place by the init: a loop device on the partition at the file's offset), luks (partition 3 is a LUKS2 container,
# as ./build.sh usb --encrypt makes it: the guest's dm-crypt writes ciphertext; the host reads each crash point's store
# out through iso/luks-fill -d with the volume key cryptsetup dumps from the header, no device-mapper needed).
# Power loss that loses the volatile cache. The quick one is persist-powercut.sh (a killed qemu keeps every
# completed write in the host's page cache). Here a
# crash point is any prefix of the log ending at a flush (what the stick holds when power goes right after the
# flush), plus a random subset of the writes between that flush and the next (a drive's volatile cache may have
# written back any of them; the kept ones are applied in log order), and with the last kept write torn (the power
# went while it was being written: only a prefix of its sectors is there). Tunables: POWERLOSS_RANDOM (windows
# between flushes drawn from, default 24), POWERLOSS_SEEDS (draws in each, default 3: the first keeps or drops whole
# writes, the others tear too), POWERLOSS_BLOCK_SIZE (the store's ext4 block size, default 4096 as on real sticks;
# 0 keeps mkusb's own).
# shellcheck disable=SC2317,SC2016 # functions run through check and require; guest commands in single quotes
VM_TIMEOUT=${VM_TIMEOUT:-900} # one qemu runs the boot and the whole workload
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "${BASH_SOURCE[0]}")/persist.bash"
img=$PDIR/stick.img pristine=$PDIR/pristine.img wlog=$PDIR/writes.log RL=$PDIR/replay-log
NRANDOM=${POWERLOSS_RANDOM:-24}
NSEEDS=${POWERLOSS_SEEDS:-3}
BSIZE=${POWERLOSS_BLOCK_SIZE:-4096}
UPPER=/liveunion-v1/upper

build_rl() { make -s -C "$TOP/iso" O="$PDIR" replay-log; }
require replay-log-built build_rl
LF=$PDIR/luks-fill PASS='power loss inside'
if [ "$PL_KIND" = luks ]; then
	build_lf() { make -s -C "$TOP/iso" O="$PDIR" luks-fill; }
	require luks-fill-built build_lf
	printf '%s\n' "$PASS" >"$PDIR/pass"
fi
PL_NAME=persist-powerloss
[ "$PL_KIND" = part ] || PL_NAME=persist-powerloss-$PL_KIND
case "$PL_KIND" in
part) require stick-made make_stick "$img" --persist-size 32M
	STORE_USED='liveunion: persistence: store /dev/sd[a-z]3 \(LABEL=liveunion-rw\), ext4' ;;
fat) require stick-made make_stick "$img" --persist-size 32M --file
	STORE_USED='liveunion: persistence: store liveunion-rw.img on /dev/sd[a-z]3 \(vfat, in one piece at byte [0-9]+\) via /dev/loop[0-9]+, ext4' ;;
exfat) require stick-made make_stick "$img" --persist-size 32M --file --exfat
	STORE_USED='liveunion: persistence: store liveunion-rw.img on /dev/sd[a-z]3 \(exfat, in one piece at byte [0-9]+\) via /dev/loop[0-9]+, ext4' ;;
luks) require stick-made make_stick "$img" --persist-size 32M --encrypt --passphrase-file "$PDIR/pass"
	STORE_USED='liveunion: persistence: store /dev/sd[a-z]3 \(LUKS2 LABEL=liveunion-rw\) unlocked as /dev/mapper/liveunion-rw, ext4' ;;
*) require "PL_KIND=$PL_KIND-is-part-fat-or-exfat-or-luks" false ;;
esac

# Where the store lies on the stick, as the host finds it by itself: partition 3, or for an image file the first
# ext4 primary superblock (magic, label liveunion-rw, group 0) inside partition 3 and the size that superblock gives.
# STORE_AT and STORE_BYTES are byte offsets on the whole stick. With LUKS: the data segment (its offset from the
# header, to the partition's end), and the volume key in $PDIR/volume.key.
store_place() {
	local p off size seg
	read -r off size < <(part_of "$1" 3) && [ -n "${size:-}" ] || return 1
	if [ "$PL_KIND" = part ]; then
		STORE_AT=$off STORE_BYTES=$size
		return 0
	fi
	if [ "$PL_KIND" = luks ]; then
		part_read "$1" 3 "$PDIR/p3.luks" || return 1
		seg=$(cryptsetup luksDump "$PDIR/p3.luks" | awk '/^Data segments:/ { d = 1 } d && $1 == "offset:" { print $2; exit }')
		[ -n "$seg" ] && [ "$seg" -lt "$size" ] || return 1
		(umask 077 && cryptsetup luksDump --batch-mode --dump-volume-key --volume-key-file "$PDIR/volume.key" \
			--key-file - "$PDIR/p3.luks" >/dev/null < <(printf %s "$PASS")) || return 1
		rm -f "$PDIR/p3.luks"
		STORE_AT=$((off + seg)) STORE_BYTES=$((size - seg))
		return 0
	fi
	p=$(python3 - "$1" "$off" "$size" <<-'PY'
	import struct, sys
	f = open(sys.argv[1], "rb"); base, size = int(sys.argv[2]), int(sys.argv[3])
	for at in range(0, size - 2048, 512):
	    f.seek(base + at + 1024); sb = f.read(1024)
	    if sb[0x38:0x3a] == b"\x53\xef" and sb[0x78:0x84] == b"liveunion-rw" and sb[0x5a:0x5c] == b"\0\0":
	        blocks = struct.unpack_from("<I", sb, 4)[0] | struct.unpack_from("<I", sb, 0x150)[0] << 32
	        print(base + at, blocks * (1024 << struct.unpack_from("<I", sb, 0x18)[0])); break
	else:
	    sys.exit("no ext4 store in partition 3")
	PY
	) || return 1
	read -r STORE_AT STORE_BYTES <<<"$p"
}
# store_out IMAGE FILE, store_in IMAGE FILE: the store's bytes out of the stick and back in (with LUKS: decrypted
# out, encrypted in)
store_out() {
	if [ "$PL_KIND" = luks ]; then
		"$LF" -d "$PDIR/volume.key" "$1" "$STORE_AT" "$STORE_BYTES" "$2"
	else
		dd if="$1" of="$2" bs=512 skip=$((STORE_AT / 512)) count=$((STORE_BYTES / 512)) status=none
	fi
}
store_in() {
	[ "$(stat -c %s "$2")" -le "$STORE_BYTES" ] || return 1
	if [ "$PL_KIND" = luks ]; then
		"$LF" "$PDIR/volume.key" "$2" "$1" "$STORE_AT"
	else
		dd if="$2" of="$1" bs=512 seek=$((STORE_AT / 512)) conv=notrunc status=none
	fi
}
# unlocked: with LUKS, the init's passphrase prompt answered (after each vm_start); nothing to do otherwise
unlocked() {
	[ "$PL_KIND" = luks ] || return 0
	vm_wait 'Passphrase for the persistence store /dev/sd[a-z]3 \(LUKS2 LABEL=liveunion-rw\): ' "$VM_BOOT_TIMEOUT" &&
		vm_send "$PASS"
}
# store_consistent IMAGE: the store's copy passes e2fsck -fn; host_fs_clean IMAGE: the FAT or exFAT holding it too
store_consistent() { store_out "$1" "$PDIR/sc.img" && e2fsck -fn "$PDIR/sc.img" >"$PDIR/sc.out" 2>&1; }
host_fs_clean() { if [ "$PL_KIND" = fat ]; then fat_clean "$1"; else exfat_clean "$1"; fi; }
require store-found store_place "$img"
vm_note "the store: $STORE_BYTES bytes at byte $STORE_AT of the stick"

# The store as mkusb makes it, then (POWERLOSS_BLOCK_SIZE) made again with mkusb's options and 4 KiB blocks: below
# 512 MiB mke2fs picks its "small" type, 1 KiB blocks, which real sticks do not get.
block_size() { store_out "$1" "$PDIR/p3" && dumpe2fs -h "$PDIR/p3" 2>/dev/null | awk -F: '/^Block size:/ { print $2 + 0 }'; }
mkusb_bs=$(block_size "$img")
vm_note "mkusb made the 32M store with ${mkusb_bs:-?}-byte blocks"
check mkusb-store-read test -n "$mkusb_bs"
reformat() {
	store_out "$img" "$PDIR/p3" &&
		mkfs.ext4 -q -F -b "$BSIZE" -L liveunion-rw -O ^metadata_csum_seed -E root_owner=0:0 "$PDIR/p3" >/dev/null &&
		store_in "$img" "$PDIR/p3"
}
if [ "$BSIZE" != 0 ] && [ "$BSIZE" != "$mkusb_bs" ]; then
	require "store-made-again-with-$BSIZE-byte-blocks" reformat
	fact "store-block-size-$BSIZE" "$BSIZE" block_size "$img"
fi
require pristine-copy cp --sparse=always "$img" "$pristine"
require log-file-made truncate -s 0 "$wlog"

# The stick on xHCI as vm_start's stick- modes attach it, through the logging driver: 512-byte log sectors (the
# usb-storage disk's logical block), a log started afresh (log-append=off). qemu rewrites the log's super block at
# every flush (and every log-super-update-interval entries, 4096 by default), after the entries it counts: once the
# guest's sync has returned, the count read from the super block covers that sync's flush.
logged_stick() { # APPEND: the stick through blklogwrites, the log started afresh (off) or continued (on: the
	# sector size is then the log's own, and qemu refuses to be told it)
	local size=,log-sector-size=512
	[ "$1" = off ] || size=
	printf '%s\n' -device qemu-xhci,id=xhci -blockdev \
		"driver=blklogwrites,node-name=stick,file.driver=file,file.filename=$img,log.driver=file,log.filename=$wlog$size,log-append=$1" \
		-device usb-storage,bus=xhci.0,drive=stick
}
mapfile -t stick_off < <(logged_stick off)
mapfile -t stick_on < <(logged_stick on)
require boot vm_start "$PL_NAME" none "" --direct "${stick_off[@]}"
require unlocked unlocked
require login vm_login
check store-used log_has "$STORE_USED"
# The crash points below are flushes: the guest must send them (a write cache it knows of), and no FUA (qemu's
# blklogwrites would log a FUA write as a plain one).
check guest-sees-write-cache-without-fua vm_run 'dmesg | grep -E "\] Write cache: enabled, .*(doesn.t support DPO or FUA)"'

# --- the workload: each step ends in sync and a marker; then the host reads how many entries the log has -------
declare -A SPEC       # "STEP|PATH" -> what PATH (in the store) is once STEP is synced: md5 SUM, absent, whiteout
declare -A WHOLE      # PATH -> 1: a file its step writes under another name and renames into place
declare -a STEP_AT=() # STEP -> entries in the log when its marker was seen (all of the step is in entries before)
declare -a STEP_NAME=()
PATHS=()

log_count() { # the super block's entry count (written after the entries it counts, at each flush)
	local n i
	for i in 1 2 3; do n=$("$RL" count "$wlog" 2>/dev/null) && { echo "$n"; return 0; }; sleep 0.2; done
	"$RL" count "$wlog"
}
set_spec() { # STEP GUEST-PATH SPEC
	local p=$UPPER$2
	case "$2" in /run/live/store/*) p=${2#/run/live/store} ;; esac
	[ -n "${SEEN[$p]:-}" ] || { SEEN[$p]=1; PATHS+=("$p"); }
	SPEC["$1|$p"]=$3
}
declare -A SEEN
# step N NAME CMD [FILE...]: CMD in the guest, sync, the marker; the md5 of each FILE (guest paths) as it is then
# (md5sum without a FILE reads the empty stdin of vm_run).
step() {
	local n=$1 name=$2 cmd=$3 f sum
	shift 3
	vm_run "{ $cmd; } && sync && echo @@SYNCED'' $n@@ && md5sum $*" 300 || return 1
	out_has "^@@SYNCED $n@@\$" || return 1
	STEP_AT[n]=$(log_count) || return 1
	STEP_NAME[n]=$name
	vm_note "step $n ($name): synced at log entry ${STEP_AT[n]}"
	for f in "$@"; do
		sum=$(printf '%s\n' "$VM_OUT" | awk -v f="$f" '$2 == f { print $1 }')
		[ -n "$sum" ] || { vm_note "step $n: no md5 of $f"; return 1; }
		set_spec "$n" "$f" "md5 $sum"
	done
}

require step-0-boot step 0 boot true /run/live/store/liveunion-v1/meta
require step-1-create step 1 create 'mkdir -p /home/pl && echo alpha-1 >/home/pl/alpha && head -c 1048576 /dev/urandom >/home/pl/big && echo gone-1 >/home/pl/gone && echo tmp-1 >/home/pl/tmp' \
	/home/pl/alpha /home/pl/big /home/pl/gone /home/pl/tmp
require step-2-overwrite step 2 overwrite 'echo alpha-2 >/home/pl/alpha && dd if=/dev/urandom of=/home/pl/big bs=4096 count=8 seek=40 conv=notrunc 2>/dev/null' \
	/home/pl/alpha /home/pl/big
require step-3-rename step 3 rename 'mv /home/pl/gone /home/pl/renamed' /home/pl/renamed
set_spec 3 /home/pl/gone absent
require step-4-unlink step 4 unlink 'rm /home/pl/tmp /etc/shells'
set_spec 4 /home/pl/tmp absent
set_spec 4 /etc/shells whiteout
require step-5-copy-up step 5 copy-up 'echo "# powerloss" >>/etc/profile && chmod 600 /etc/hosts' /etc/profile /etc/hosts
set_spec 5 /etc/hosts "mode 600 ${SPEC["5|$UPPER/etc/hosts"]}"
require step-6-save step 6 save 'liveunion save pl >/dev/null' /run/live/store/liveunion-v1/layers/11-pl.squashfs
# liveunion save writes .11-pl.squashfs.tmp-PID, fsyncs it and renames it: while the save is in flight the layer is
# not there or there whole, and the init never stacks the .tmp (the crash image booted below is taken then if it can)
WHOLE[/liveunion-v1/layers/11-pl.squashfs]=1
SAVE_TMP='^\.11-pl\.squashfs\.tmp-[0-9]+$'
many=()
for i in $(seq 1 40); do many+=("/home/pl/many-$i"); done
require step-7-many-files step 7 many-files 'for i in $(seq 1 40); do echo many-$i >/home/pl/many-$i; done' "${many[@]}"
require step-8-delete-many step 8 delete-many 'rm /home/pl/many-1* && echo alpha-8 >/home/pl/alpha' /home/pl/alpha
for i in 1 $(seq 10 19); do set_spec 8 "/home/pl/many-$i" absent; done
# What e2fsck -p says when it repairs nothing: the journal replay, the orphan list worked off (as a mount does it),
# the summary of a file system it found clean. Any other line of it is a repair.
E2FSCK_OK=': (recovering journal|(Clearing|Truncating) orphaned inode [0-9]+ \(.*\)|clean, [0-9]+/[0-9]+ files, [0-9]+/[0-9]+ blocks|[0-9]+/[0-9]+ files \([0-9.]+% non-contiguous\), [0-9]+/[0-9]+ blocks)$'
# no_repairs LOG: the boot's e2fsck said nothing else (the init runs e2fsck -p on a store whose journal needs
# replaying, then e2fsck -fn, whose summary line is the last form above)
no_repairs() {
	local text rest
	text=$(tr -d '\r' <"$1") || return 1
	rest=$(grep -E '^(liveunion-rw|/dev/[a-z0-9/_-]+): ' <<<"$text" | grep -vE "$E2FSCK_OK")
	[ -z "$rest" ] && return 0
	printf '#   e2fsck said: %s\n' "$rest" >&2
	return 1
}
check no-e2fsck-repair-in-boot no_repairs "$VM_LOG"
require poweroff vm_poweroff

# The boot-time writes of live.persist.reset, in a second boot whose writes go on in the same log: upper/ is
# renamed aside to upper.reset-DATE (every synced file goes with it) and a fresh upper/ made, meta rewritten.
require boot-reset vm_start "$PL_NAME-reset" none "" --keys live.persist.reset "${stick_on[@]}"
require unlocked-reset unlocked
require login-reset vm_login
check reset-said log_has '^liveunion: persistence: live.persist.reset: previous changes kept in liveunion-v1/upper.reset-[0-9-]+$'
require reset-dir-named vm_run 'cd /run/live/store/liveunion-v1 && ls -d upper.reset-*'
reset_dir=/liveunion-v1/$VM_OUT
moved=()
for p in "${PATHS[@]}"; do
	case "$p" in "$UPPER"/*) moved+=("$p") ;; esac
done
require step-9-reset step 9 reset true /run/live/store/liveunion-v1/meta
for p in "${moved[@]}"; do
	last=''
	for k in "${!STEP_AT[@]}"; do [ "$k" = 9 ] || [ -z "${SPEC["$k|$p"]:-}" ] || last=${SPEC["$k|$p"]}; done
	set_spec 9 "/run/live/store$p" absent
	set_spec 9 "/run/live/store$reset_dir${p#"$UPPER"}" "$last"
done
# /home/pl/alpha now shows the saved layer's (step 6), the old upper's is aside, a file made after the save is gone
check reset-left-the-old-upper-aside vm_fact "cat /home/pl/alpha /run/live/store$reset_dir/home/pl/alpha; test -e /home/pl/many-2 || echo many-2-gone" \
	"alpha-2"$'\n'"alpha-8"$'\n'"many-2-gone"
check no-e2fsck-repair-in-reset-boot no_repairs "$VM_LOG"
require poweroff-reset vm_poweroff
final_steps=${#STEP_AT[@]}

# --- the log ---------------------------------------------------------------------------------------------------
"$RL" list "$wlog" >"$PDIR/list" 2>"$PDIR/list.err"
require log-parses test -s "$PDIR/list"
# every write the guest sent lies inside the store: with an image file, the FAT or exFAT around it is never
# written (so it is never left dirty, whatever the power does)
outside_store() {
	awk -v a=$((STORE_AT / 512)) -v b=$(((STORE_AT + STORE_BYTES) / 512)) \
		'$1 == "entry" && $10 > 0 && $4 !~ /DISCARD/ { w++; if ($6 < a || $6 + $8 > b) { n++; if (n <= 8) print "#   " $0 " (store: sectors " a ".." b - 1 ")" > "/dev/stderr" } }
		END { print w ? n + 0 " of " w " writes outside" : "no writes in the log" }' "$PDIR/list"
}
writes=$(awk '$1 == "entry" && $10 > 0 && $4 !~ /DISCARD/ { w++ } END { print w + 0 }' "$PDIR/list")
fact no-write-outside-the-store "0 of $writes writes outside" outside_store
vm_note "$(head -n 1 "$PDIR/list")"
read -r nentries used logsize < <(awk 'NR == 1 { print $8, $10, $14 }' "$PDIR/list")
check log-wholly-used-after-clean-poweroff test "${used:-x}" = "${logsize:-y}"
mapfile -t points < <("$RL" points "$wlog")
check log-has-flush-points test "${#points[@]}" -gt "$final_steps"
# per entry: its flags and size, for the windows between flushes
mapfile -t eflags < <(awk '$1 == "entry" { print $4 }' "$PDIR/list")
mapfile -t esize < <(awk '$1 == "entry" { print $10 }' "$PDIR/list")
check log-entries-listed test "${#eflags[@]}" = "$nentries"

# --- checking one crash point ------------------------------------------------------------------------------------
# expect_at D: PATH and SPEC lines, what the store must hold when entries 0..D-1 are on the stick: the newest SPEC
# of every step synced by then; a path the step in flight at D changes is left out (it may be either way), but for
# a new file renamed into place whole (WHOLE): "absent-or md5 SUM"; a path only later steps make is absent
# (nothing comes from the future).
flight_at() { # D: the step in flight when entries 0..D-1 are on the stick, or nothing
	local k
	for k in "${!STEP_AT[@]}"; do
		[ "${STEP_AT[k]}" -gt "$1" ] && { echo "$k"; return 0; }
	done
	return 0
}
expect_at() {
	local d=$1 k p flight s
	flight=$(flight_at "$d")
	for p in "${PATHS[@]}"; do
		s=''
		for k in "${!STEP_AT[@]}"; do
			[ "${STEP_AT[k]}" -le "$d" ] || break
			[ -z "${SPEC["$k|$p"]:-}" ] || s=${SPEC["$k|$p"]}
		done
		[ -n "$s" ] || s=absent
		if [ -n "$flight" ] && [ -n "${SPEC["$flight|$p"]:-}" ]; then
			if [ -z "${WHOLE[$p]:-}" ] || [ "$s" != absent ]; then continue; fi
			s="absent-or ${SPEC["$flight|$p"]}"
		fi
		printf '%s\t%s\n' "$p" "$s"
	done
}
# steps_at D: how many steps were synced by then; synced_what D: the same for the report
steps_at() {
	local k n=0
	for k in "${!STEP_AT[@]}"; do [ "${STEP_AT[k]}" -le "$1" ] && n=$((n + 1)); done
	echo "$n"
}
synced_what() {
	local n
	n=$(steps_at "$1")
	if [ "$n" -eq 0 ]; then echo "boot, no step synced yet"; else echo "synced through step $((n - 1)) (${STEP_NAME[n - 1]})"; fi
}

# pending FS: the ext4 image's journal needs replaying
pending() {
	local h
	h=$(dumpe2fs -h "$1" 2>/dev/null) || return 2
	grep -q '^Filesystem features:.*needs_recovery' <<<"$h"
}
# check_store IMAGE D WHAT: the store on IMAGE replays its journal as the init's e2fsck -p would, then e2fsck
# -fn finds nothing and every file expect_at D names is as the guest left it. Prints one line, fails with why.
check_store() {
	local image=$1 d=$2 what=$3 st=$PDIR/pt.img dir=$PDIR/pt.d rc journal=clean p spec i=0 errs='' sum n=0
	store_out "$image" "$st" || { echo "$what: cannot copy the store out"; return 1; }
	# (no grep -q on a pipe: it stops reading, the writer dies of SIGPIPE and pipefail turns a match into a miss)
	if pending "$st"; then
		# -E journal_only: replay the journal and stop, as the init's e2fsck -p (or a mount) starts. Not with -f: that
		# goes on into a full check, and with -y it would repair what the e2fsck -fn below is there to find.
		e2fsck -y -E journal_only "$st" >"$PDIR/pt.replay" 2>&1
		rc=$?
		if [ "$rc" -ne 0 ] || pending "$st"; then
			echo "$what: journal replay: e2fsck exit $rc: $(tail -n 3 "$PDIR/pt.replay" | tr '\n' ' ')"
			return 1
		fi
		journal=replayed
	fi
	# A journal can leave an orphan list (files unlinked while open, truncates under way), which a mount or the
	# init's e2fsck -p works off and e2fsck -fn would call damage: e2fsck -p does it here, and must do nothing else
	# (a full check would end in a summary without "clean").
	orphans=$(dumpe2fs -h "$st" 2>/dev/null | awk -F: '/^First orphan inode:/ { print $2 + 0 }')
	if [ -n "$orphans" ] && [ "$orphans" != 0 ]; then
		e2fsck -p "$st" >"$PDIR/pt.orphans" 2>&1
		rc=$?
		if [ "$rc" -ne 0 ] || ! grep -qE ': clean, [0-9]+/[0-9]+ files, [0-9]+/[0-9]+ blocks$' "$PDIR/pt.orphans" ||
			grep -qvE "$E2FSCK_OK" "$PDIR/pt.orphans"; then
			echo "$what: orphan list: e2fsck -p exit $rc: $(head -n 4 "$PDIR/pt.orphans" | tr '\n' ' ')"
			return 1
		fi
		journal="$journal, $(grep -c 'orphaned inode' "$PDIR/pt.orphans") orphan(s) released"
	fi
	if ! e2fsck -fn "$st" >"$PDIR/pt.fsck" 2>&1; then
		echo "$what: e2fsck -fn after the journal ($journal): $(grep -v '^Pass\|^e2fsck\|^liveunion-rw:' "$PDIR/pt.fsck" | head -n 6 | tr '\n' ' ')"
		return 1
	fi
	rm -rf "$dir" && mkdir "$dir" || return 1
	expect_at "$d" >"$PDIR/pt.expect"
	awk -F'\t' -v dir="$dir" '{ printf "dump -p %s %s/%d\n", $1, dir, NR }' "$PDIR/pt.expect" >"$PDIR/pt.cmds"
	debugfs -f "$PDIR/pt.cmds" "$st" >/dev/null 2>&1
	# one md5sum for every file dumped: one a path (two forks each) was most of a crash point's time
	local -A sums=()
	while read -r sum p; do sums[${p##*/}]=$sum; done < <(find "$dir" -maxdepth 1 -type f -print0 | xargs -0r md5sum --)
	while IFS=$'\t' read -r p spec; do
		i=$((i + 1)) n=$((n + 1))
		case "$spec" in
		absent) [ ! -e "$dir/$i" ] || errs="$errs $p:there" ;;
		absent-or\ md5\ *) [ ! -e "$dir/$i" ] || [ "${sums[$i]:-}" = "${spec##* }" ] || errs="$errs $p:not-whole" ;;
		whiteout)
			sum=$(debugfs -R "stat $p" "$st" 2>/dev/null)
			grep -q 'Type: character special' <<<"$sum" && grep -q 'Device major/minor number: 00:00' <<<"$sum" ||
				errs="$errs $p:no-whiteout" ;;
		md5\ * | mode\ *)
			if [ ! -f "$dir/$i" ]; then
				errs="$errs $p:missing"
				continue
			fi
			[ "${sums[$i]:-}" = "${spec##* }" ] || errs="$errs $p:content"
			case "$spec" in
			mode\ *) [ "$(stat -c %a "$dir/$i")" = "$(echo "$spec" | cut -d' ' -f2)" ] || errs="$errs $p:mode" ;;
			esac ;;
		esac
	done <"$PDIR/pt.expect"
	if [ -n "$errs" ]; then
		echo "$what: journal $journal, e2fsck clean, $(synced_what "$d"), wrong:$errs"
		return 1
	fi
	echo "$what: journal $journal, e2fsck clean, $(synced_what "$d"), $n paths as expected"
}

# --- replay: every flush point, incrementally on one copy; random points from copies of it ---------------------
work=$PDIR/work.img cand=()
require work-copy cp --sparse=always "$pristine" "$work"
# the windows between flushes that hold writes: candidates for a random point (flush index and next flush)
prev=-1
for f in "${points[@]}" "$nentries"; do
	if [ "$prev" -ge 0 ]; then
		w=0
		for ((e = prev + 1; e < f; e++)); do [ "${esize[e]}" -gt 0 ] && w=$((w + 1)); done
		[ "$w" -ge 2 ] && cand+=("$prev:$f")
	fi
	[ "$f" -lt "$nentries" ] && [[ ${eflags[f]} == *FLUSH* ]] && prev=$f
done
# POWERLOSS_RANDOM windows, evenly spread, when there are that many, POWERLOSS_SEEDS draws in each; else every
# window, with as many draws each as it takes to make as many points (seed 1000 * k + flush index for the k-th draw
# of a window; draws after the first tear the last write they keep)
declare -A pick nseeds
nc=${#cand[@]}
take=$((NRANDOM < nc ? NRANDOM : nc))
per=0
[ "$take" -eq 0 ] || per=$(((NRANDOM * NSEEDS + take - 1) / take))
left=$((NRANDOM * NSEEDS))
for ((j = 0; j < take; j++)); do
	k=$((j * nc / take))
	pick[${cand[k]%%:*}]=${cand[k]#*:}
	nseeds[${cand[k]%%:*}]=$((per < left ? per : left))
	left=$((left - nseeds[${cand[k]%%:*}]))
done
vm_note "log: $nentries entries, ${#points[@]} flush points, $nc windows between flushes with 2 or more writes, $((NRANDOM * NSEEDS - left)) random points in $take of them"

# save_tmp_at IMAGE D WHAT, after check_store passed (its store copy is $PDIR/pt.img): while the save is in flight,
# counts the points whose store holds the .tmp layer, and the first of them becomes the crash image booted below
save_what='' save_points=0 save_tmp=0
save_tmp_at() {
	local flight
	flight=$(flight_at "$2")
	[ -n "$flight" ] && [ "${STEP_NAME[flight]}" = save ] || return 0
	save_points=$((save_points + 1)) save_d=${save_d:-$2}
	debugfs -R "ls -l /liveunion-v1/layers" "$PDIR/pt.img" 2>/dev/null | awk '{ print $NF }' | grep -Eq "$SAVE_TMP" || return 0
	save_tmp=$((save_tmp + 1))
	[ -z "$save_what" ] || return 0
	cp --sparse=always "$1" "$PDIR/crash.img" && crash_at=$2 crash_what="$3, the save in flight, its .tmp layer in the store" save_what=$3
}
# setup_at IMAGE D WHAT, after check_store passed: a point of the first boot (step 0) whose store has no meta yet:
# the store's first set-up on a fresh stick in flight. The last such point (a torn one if the window was drawn)
# becomes the set-up crash image booted below. (The last point before step 1 is not always one: where the flushes
# fall depends on the guest's timing, and in a CI run the init's meta was synced before it.)
setup_what=''
setup_at() {
	local has
	[ "$(steps_at "$2")" -eq 0 ] || return 0
	has=$(debugfs -R 'ls /liveunion-v1' "$PDIR/pt.img" 2>/dev/null | tr -s ' \n' ' ' | grep -oE '(upper|work|meta|layers)( |$)' | tr -d ' ' | sort | tr '\n' ' ')
	[ "${has/meta/}" = "$has" ] || return 0
	cp --sparse=always "$1" "$PDIR/setup.img" && setup_what=$3 && setup_has=$has
}
t0=$SECONDS
done_to=0 nflush=0 nrand=0 fail_flush=0 fail_rand=0 replayed=0 dropped_total=0 torn_total=0
for f in "${points[@]}"; do
	"$RL" apply "$wlog" "$work" "$done_to" $((f + 1)) || { bad "replay to entry $f"; break; }
	done_to=$((f + 1))
	nflush=$((nflush + 1))
	if line=$(check_store "$work" "$done_to" "flush point $f"); then
		[[ $line == *"journal replayed"* ]] && replayed=$((replayed + 1))
	else
		fail_flush=$((fail_flush + 1))
		bad "crash point after flush entry $f: $line"
	fi
	printf '# %s\n' "$line"
	save_tmp_at "$work" "$done_to" "flush point $f"
	setup_at "$work" "$done_to" "flush point $f"
	for ((k = 1; k <= ${nseeds[$f]:-0}; k++)); do
		end=${pick[$f]} seed=$((1000 * k + f)) tear=()
		[ "$k" -eq 1 ] || tear=(tear)
		if ! cp --sparse=always "$work" "$PDIR/rand.img" ||
			! "$RL" subset "$wlog" "$PDIR/rand.img" "$done_to" "$end" "$seed" "${tear[@]}" >"$PDIR/subset.out"; then
			bad "random point after flush $f: subset replay"
			continue
		fi
		nrand=$((nrand + 1))
		drew=$(tail -n 1 "$PDIR/subset.out")
		dropped_total=$((dropped_total + $(awk '{ print $(NF - 1) }' <<<"${drew##*, }")))
		[[ $drew != *", 1 torn, "* ]] || torn_total=$((torn_total + 1))
		if line=$(check_store "$PDIR/rand.img" "$done_to" "random point after flush $f (entries $done_to..$((end - 1)), seed $seed: ${drew##*: })"); then
			[[ $line == *"journal replayed"* ]] && replayed=$((replayed + 1))
			# the last random point inside the workload (before the reset boot) is kept for the boot below
			[ "$(steps_at "$done_to")" -ge 4 ] && [ "$(steps_at "$done_to")" -lt "$((final_steps - 1))" ] && [ -z "$save_what" ] &&
				cp --sparse=always "$PDIR/rand.img" "$PDIR/crash.img" && crash_at=$done_to crash_what="after flush $f, seed $seed"
			save_tmp_at "$PDIR/rand.img" "$done_to" "random point after flush $f, seed $seed"
			[ "${#tear[@]}" -eq 0 ] || setup_at "$PDIR/rand.img" "$done_to" "random point after flush $f, seed $seed, a write torn"
		else
			fail_rand=$((fail_rand + 1))
			bad "$line"
		fi
		printf '# %s\n' "$line"
	done
done
"$RL" apply "$wlog" "$work" "$done_to" "$nentries"
check replay-of-every-entry-is-the-stick cmp "$work" "$img"
vm_note "replayed $nflush flush points and $nrand random points ($dropped_total unflushed writes dropped, $torn_total torn) in $((SECONDS - t0)) s; $replayed of them needed a journal replay"
none_failed() { [ "$1" -gt 0 ] && [ "$2" -eq 0 ]; } # POINTS FAILED
check "every-flush-point-consistent ($nflush points, $fail_flush failed)" none_failed "$nflush" "$fail_flush"
check "every-random-point-consistent ($nrand points, $fail_rand failed)" none_failed "$nrand" "$fail_rand"
# the draws after a window's first tear a write (a window's writes are 2 or more, of 4 KiB blocks: 8 sectors)
[ "$NSEEDS" -lt 2 ] || check "some-random-points-tore-a-write ($torn_total)" test "$torn_total" -gt 0
check some-points-needed-a-journal-replay test "$replayed" -gt 0
vm_note "$save_points points while the save was in flight, $save_tmp of them with its .tmp layer in the store"
check "some-point-has-the-save-s-tmp-layer ($save_tmp of $save_points)" test "$save_tmp" -gt 0

# The check of a crash point can fail: the final store with a synced file's content changed, and with an inode's
# link count made wrong (what e2fsck -fn is there to find), each a copy of the stick.
tamper() { # DEBUGFS-COMMANDS: the final stick with the store changed by debugfs -w, as $PDIR/tampered.img
	cp --sparse=always "$work" "$PDIR/tampered.img" && store_out "$PDIR/tampered.img" "$PDIR/t.p3" &&
		printf '%s\n' "$1" >"$PDIR/t.cmds" && debugfs -w -f "$PDIR/t.cmds" "$PDIR/t.p3" >/dev/null 2>&1 &&
		store_in "$PDIR/tampered.img" "$PDIR/t.p3"
}
refused_for() { # WHY [D]: check_store of the tampered stick as at entry D (default: all) fails, saying WHY
	local out
	if out=$(check_store "$PDIR/tampered.img" "${2:-$nentries}" "tampered"); then
		printf '#   passed: %s\n' "$out" >&2
		return 1
	fi
	printf '#   %s\n' "$out"
	grep -qE -- "$1" <<<"$out"
}
printf 'alpha-x\n' >"$PDIR/alpha-x"
require tamper-content tamper "cd $reset_dir/home/pl
rm alpha
write $PDIR/alpha-x alpha"
check a-synced-file-changed-is-found refused_for "wrong: $reset_dir/home/pl/alpha:content\$"
require tamper-links tamper "sif $reset_dir/home/pl/renamed links_count 3"
check a-wrong-link-count-is-found refused_for 'e2fsck -fn after the journal'
# while the save is in flight, a 11-pl.squashfs that is not the whole layer is found (the final store checked as
# then: the reset's moves are wrong too, the layer must be among them)
if [ -n "${save_d:-}" ]; then
	require tamper-layer tamper "cd /liveunion-v1/layers
rm 11-pl.squashfs
write $PDIR/alpha-x 11-pl.squashfs"
	check a-partial-layer-during-the-save-is-found refused_for " /liveunion-v1/layers/11-pl\.squashfs:not-whole( |\$)" "$save_d"
fi

# crash_boot NAME IMAGE: the stick IMAGE booted (checks NAME-*): unlocked, logged in, the store used with no
# e2fsck repair; crash_boot_end NAME IMAGE: powered off, the store consistent (and the FAT or exFAT around it).
crash_boot() {
	require "$1-boot" vm_start "$PL_NAME-${1%-crash}" stick-bios "$2" --direct
	require "$1-unlocked" unlocked
	require "$1-login" vm_login
	check "$1-store-used" log_has "$STORE_USED"
	check "$1-no-e2fsck-repair" no_repairs "$VM_LOG"
}
crash_boot_end() {
	require "$1-poweroff" vm_poweroff
	check "$1-store-consistent-after" store_consistent "$2"
	case "$PL_KIND" in fat | exfat) check "$1-host-filesystem-clean" host_fs_clean "$2" ;; esac
}

# --- a crash image boots: the init replays the journal with e2fsck -p, nothing else repaired -------------------
if require crash-image-picked test -n "${crash_at:-}"; then
	vm_note "booting the crash image $crash_what ($(synced_what "$crash_at"))"
	crash_pending=0
	store_out "$PDIR/crash.img" "$PDIR/crash.p3" && pending "$PDIR/crash.p3" && crash_pending=1
	crash_boot crash "$PDIR/crash.img"
	[ "$crash_pending" = 0 ] || check crash-journal-replayed-by-the-init log_has ': recovering journal$' 
	check crash-synced-files-there vm_run "test \"\$(cat /home/pl/renamed)\" = gone-1 && test ! -e /home/pl/gone && test -e /home/pl/big"
	# the .tmp layer is in the store and 11-pl.squashfs is not: the old set of layers, the .tmp never stacked
	[ -z "$save_what" ] || check crash-tmp-layer-not-stacked vm_none 'ls -A /run/live/layers; grep " /run/live/layers/" /proc/mounts' '\.tmp|11-pl'
	crash_boot_end crash "$PDIR/crash.img"
fi

# --- power lost during the store's first set-up: the next boot finishes it and uses the store ---------------------
if require setup-crash-image-picked test -n "$setup_what"; then
	vm_note "booting the set-up crash image: $setup_what (liveunion-v1 then held: ${setup_has:-nothing})"
	# (setup_at took only a point whose store has no meta: the set-up unfinished there)
	crash_boot setup-crash "$PDIR/setup.img"
	check setup-crash-upper-is-store vm_run "grep -x 'upper.kind=store' /run/live/plan"
	check setup-crash-store-set-up vm_run 'test -d /run/live/store/liveunion-v1/upper && test -s /run/live/store/liveunion-v1/meta'
	check setup-crash-store-writable vm_run 'echo after-setup-crash >/root/after && sync && grep -q after-setup-crash /run/live/store/liveunion-v1/upper/root/after'
	crash_boot_end setup-crash "$PDIR/setup.img"
fi
finish

#!/usr/bin/env bash
# Build host: an A/B stick, and updates of it in place. Run by `./build.sh usb` (iso/mkusb.sh hands these over):
#   iso/slots.sh --slots [--iso ISO] [-o IMAGE] [--persist-size SIZE]   a new A/B stick image
#   iso/slots.sh --update TARGET [--iso NEW] [--tries N] [--yes]        NEW into the inactive slot, then switch
#   iso/slots.sh --rollback TARGET [--yes]                               boot the other slot from now on
#   iso/slots.sh --status TARGET                                         the slots and the boot loader's choice
# TARGET is a stick image file or a stick's device (a device asks for its name typed back first).
# The stick: one FAT32 partition (MBR, bootable) holding GRUB for BIOS (core.img in the gap before it) and UEFI
# (EFI/BOOT/BOOTX64.EFI), its menu (grub/grub.cfg, iso/slots.cfg), the two slots liveunion/a.iso and liveunion/b.iso,
# GRUB's environment block liveunion/grubenv (slot=, tries=, failed=) with its copy liveunion/grubenv.bak, and the
# store liveunion/liveunion-rw.img beside them. An update writes only the inactive slot's file and then the two
# blocks (grubenv.bak first); the store and the active slot are never written. docs/persistence.md, "Updating a stick".
set -euo pipefail
export LC_ALL=C
umask 022

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$TOP/out}
# shellcheck source=iso/device.bash
. "$TOP/iso/device.bash"
GRUB_MODULES="part_msdos fat iso9660 loopback linux normal configfile serial terminal echo test regexp loadenv"

action='' target='' iso=$OUT/liveunion.iso isoname='' out='' size=256M tries=3 yes=0
while [ $# -gt 0 ]; do
	case "$1" in
	--slots) action='make' ;;
	--update | --rollback | --status) action=${1#--} target=${2:?$1 needs a stick image or device} && shift ;;
	--iso) iso=${2:?--iso needs a file} && shift ;;
	-o | --output) out=${2:?-o needs a file} && shift ;;
	--persist-size) size=${2:?--persist-size needs a size} && shift ;;
	--tries) tries=${2:?--tries needs 1, 2 or 3} && shift ;;
	--yes) yes=1 ;;
	-h | --help) sed -n '2,12s/^# \{0,1\}//p' "$0" && exit 0 ;;
	*) die "unknown option '$1' (try --help)" ;;
	esac
	shift
done
[ -n "$action" ] || die "--slots, --update, --rollback or --status (try --help)"
case "$tries" in 1 | 2 | 3) ;; *) die "--tries: 1, 2 or 3, not '$tries'" ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-slots.XXXXXX")
cleanup() {
	for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# env_block SLOT TRIES FAILED: GRUB's environment block (the format grub-editenv writes: a header line, NAME=VALUE
# lines, '#' up to 1024 bytes). The values sit in the first 512-byte sector, so a switch is one sector's write.
env_block() {
	local text
	text=$(printf '# GRUB Environment Block\nslot=%s\ntries=%s\nfailed=%s\n' "$1" "$2" "$3")
	printf '%s\n' "$text"
	head -c $((1024 - ${#text} - 1)) /dev/zero | tr '\0' '#'
}

# env_get FILE NAME: the value of NAME in the environment block FILE ("" when absent).
env_get() { sed -n "s/^$2=//p" "$1" | head -n 1; }
# env_valid FILE: FILE is a whole block as the stick's menu takes it (the header, slot=a or slot=b); a block torn by
# a power cut while it was written is not, and the menu and this script read grubenv.bak then.
env_valid() {
	[ "$(stat -c %s "$1")" = 1024 ] && [ "$(head -n 1 "$1")" = '# GRUB Environment Block' ] &&
		case "$(env_get "$1" slot)" in a | b) true ;; *) false ;; esac
}

make_stick() {
	local d=$work part=$work/part.img bytes pbytes isob
	[ -f "$iso" ] || die "no ISO at $iso: run ./build.sh first"
	out=${out:-$OUT/liveunion-slots.img}
	bytes=$(numfmt --from=iec "${size^^}" 2>/dev/null) || die "--persist-size: want a size like 256M or 2G, got '$size'"
	[ "$bytes" -ge $((8 * 1024 * 1024)) ] || die "--persist-size: at least 8M"
	[ -d /usr/lib/grub/i386-pc ] || die "GRUB for BIOS missing (Debian package grub-pc-bin)"
	[ -d /usr/lib/grub/x86_64-efi ] || die "GRUB for UEFI missing (Debian package grub-efi-amd64-bin)"
	# BIOS: the boot drive's first partition ('(,msdos1)'); UEFI: the partition GRUB was loaded from.
	# shellcheck disable=SC2086 # a word list
	grub-mkimage -O i386-pc -o "$d/core.img" -p '(,msdos1)/grub' biosdisk $GRUB_MODULES ||
		die "grub-mkimage (i386-pc) failed"
	# shellcheck disable=SC2086 # a word list
	grub-mkimage -O x86_64-efi -o "$d/bootx64.efi" -p /grub efi_gop $GRUB_MODULES || die "grub-mkimage (x86_64-efi) failed"
	[ "$(stat -c %s "$d/core.img")" -lt $((2047 * 512)) ] || die "core.img does not fit before the partition"
	mkfs.ext4 -q -F -L liveunion-rw -O ^metadata_csum_seed -E root_owner=0:0 "$d/liveunion-rw.img" "$((bytes / 1024))k" \
		>/dev/null 2>&1 || die "mkfs.ext4 on the file $d/liveunion-rw.img failed"
	env_block a '' '' >"$d/grubenv"
	# Each slot's file is the ISO and a quarter more of zeros, room for a larger image to be written in place (an
	# ISO reader stops at its volume's end); the partition has room for both, a slot made anew, the store and GRUB.
	isob=$(stat -c %s "$iso")
	isob=$(((isob + isob / 4 + 1048575) / 1048576 * 1048576))
	{ cp --sparse=always "$iso" "$d/slot.iso" && truncate -s "$isob" "$d/slot.iso"; } || die "cannot copy $iso"
	pbytes=$((3 * isob + bytes + bytes / 8 + 8 * 1024 * 1024))
	[ "$pbytes" -ge $((40 * 1024 * 1024)) ] || pbytes=$((40 * 1024 * 1024)) # FAT32 minimum
	truncate -s "$pbytes" "$part"
	mkfs.vfat -F 32 -n LIVEUNION-S "$part" >/dev/null || die "mkfs.vfat on the file $part failed"
	mmd -i "$part" ::/EFI ::/EFI/BOOT ::/grub ::/liveunion || die "mmd failed"
	{ mcopy -i "$part" "$d/bootx64.efi" ::/EFI/BOOT/BOOTX64.EFI && mcopy -i "$part" "$TOP/iso/slots.cfg" ::/grub/grub.cfg &&
		mcopy -i "$part" "$d/grubenv" ::/liveunion/grubenv.bak && mcopy -i "$part" "$d/grubenv" ::/liveunion/grubenv && mcopy -i "$part" "$d/slot.iso" ::/liveunion/a.iso &&
		mcopy -i "$part" "$d/slot.iso" ::/liveunion/b.iso && mcopy -i "$part" "$d/liveunion-rw.img" ::/liveunion/liveunion-rw.img; } ||
		die "mcopy onto the FAT32 failed"
	rm -f "$out.tmp" && truncate -s $((1024 * 1024 + $(stat -c %s "$part"))) "$out.tmp"
	printf 'start=2048, type=0c, bootable\n' | sfdisk -q --no-reread --no-tell-kernel "$out.tmp" >/dev/null 2>&1 ||
		die "sfdisk failed"
	dd if="$part" of="$out.tmp" bs=1M seek=1 conv=notrunc,sparse status=none || die "writing the partition failed"
	# BIOS: boot.img's code (not the partition table) in the MBR, core.img from sector 1 where boot.img looks for it
	{ dd if=/usr/lib/grub/i386-pc/boot.img of="$out.tmp" bs=440 count=1 conv=notrunc status=none &&
		dd if="$d/core.img" of="$out.tmp" bs=512 seek=1 conv=notrunc status=none; } || die "writing GRUB's boot code failed"
	mv "$out.tmp" "$out"
	log "$out: $(numfmt --to=iec-i --suffix=B --format=%.1f "$(stat -c %s "$out")"), an A/B stick: slots a and b hold $(basename "$iso"), slot a boots; store liveunion-rw.img ($size)"
}

# open_stick: the stick's FAT32 (partition 1) as mtools reads it ($fat: TARGET@@OFFSET) and where its clusters lie
# ($data: the byte of cluster 2, $cbytes: bytes a cluster); its boot choice read into $work/grubenv: grubenv, or
# grubenv.bak where grubenv is not a whole block (torn). Nothing is mounted: an update writes the slot's clusters and
# the blocks' in place, as GRUB's save_env does.
open_stick() {
	local start ss spc res fats fatlen
	[ -e "$target" ] || die "$target: no such stick image or device"
	if [ -b "$target" ]; then
		[ "$(lsblk -ndo TYPE "$target")" = disk ] || die "$target is not a whole disk"
		if lsblk -nro MOUNTPOINT "$target" | grep -q .; then die "$target (or a partition of it) is mounted: refusing"; fi
	fi
	start=$(sfdisk -d "$target" 2>/dev/null | sed -n 's/^[^ ]*1 : start= *\([0-9]*\),.*/\1/p')
	[ -n "$start" ] || die "$target has no partition 1"
	fat="$target@@$((start * 512))"
	minfo -i "$fat" >"$work/minfo" 2>/dev/null || die "$target: partition 1 is not a FAT file system"
	grep -q '^disk label="LIVEUNION-S' "$work/minfo" ||
		die "$target is not an A/B stick (partition 1 is not the FAT32 labelled LIVEUNION-S of ./build.sh usb --slots)"
	ss=$(sed -n 's/^sector size: \([0-9]*\) bytes/\1/p' "$work/minfo")
	spc=$(sed -n 's/^cluster size: \([0-9]*\) sectors/\1/p' "$work/minfo")
	res=$(sed -n 's/^reserved (boot) sectors: \([0-9]*\)/\1/p' "$work/minfo")
	fats=$(sed -n 's/^fats: \([0-9]*\)/\1/p' "$work/minfo")
	fatlen=$(sed -n 's/^Big fatlen=\([0-9]*\)/\1/p' "$work/minfo")
	{ [ -n "$ss" ] && [ -n "$spc" ] && [ -n "$res" ] && [ -n "$fats" ] && [ -n "$fatlen" ]; } ||
		die "$target: cannot read the FAT32 geometry of partition 1 (minfo)"
	cbytes=$((ss * spc))
	data=$((start * 512 + (res + fats * fatlen) * ss))
	mtype -i "$fat" ::/liveunion/grubenv >"$work/grubenv" 2>/dev/null || die "$target has no liveunion/grubenv: not an A/B stick"
	if ! env_valid "$work/grubenv"; then
		{ mtype -i "$fat" ::/liveunion/grubenv.bak >"$work/grubenv" 2>/dev/null && env_valid "$work/grubenv"; } ||
			die "$target: neither liveunion/grubenv nor liveunion/grubenv.bak is a whole GRUB environment block with slot=a or b"
		log "liveunion/grubenv is not a whole block (torn?): read liveunion/grubenv.bak; the next switch writes both"
	fi
	active=$(env_get "$work/grubenv" slot)
	pending=$(env_get "$work/grubenv" tries)
	failed=$(env_get "$work/grubenv" failed)
	case "$pending" in '' | 0 | 1 | 2 | 3) ;; *)
		log "tries=$pending in grubenv is not 0-3: the menu takes it as 0 (slot $active has failed; the other boots next)" ;;
	esac
	if [ "$active" = a ]; then inactive=b; else inactive=a; fi
}

# extents NAME: where the file liveunion/NAME lies on the stick, one "FILE-OFFSET DISK-OFFSET BYTES" line a run of
# clusters (mshowfat), in file order.
extents() {
	mshowfat -i "$fat" "::/liveunion/$1" 2>/dev/null | tr ' ' '\n' | sed -n 's/^<\([0-9]*\)\(-\([0-9]*\)\)\{0,1\}>$/\1 \3/p' |
		awk -v d="$data" -v c="$cbytes" '{ e = ($2 == "") ? $1 : $2; n = (e - $1 + 1) * c
			print off, d + ($1 - 2) * c, n; off += n }' off=0
}

# file_bytes NAME: the length of liveunion/NAME as its directory entry says.
file_bytes() {
	mdir -i "$fat" -a "::/liveunion/$1" 2>/dev/null | awk -v n="${1%.*}" 'tolower($1) == n { print $3; exit }'
}

# confirm: a real device is written only when mkusb.sh would write it too (a whole disk, not in use, not this
# system's), and after its name is typed back.
confirm() {
	[ -b "$target" ] || return 0
	device_check "$target"
	device_confirm "$target" "The inactive slot and the boot choice of $target will be written."
}

# write_block NAME: $work/grubenv.new over liveunion/NAME's sectors in place (where GRUB's save_env writes them too),
# synced and read back. grub-editenv would truncate the file and write it anew, which a power cut could leave empty.
write_block() {
	local foff doff n
	while read -r foff doff n; do
		[ "$foff" -lt 1024 ] || break
		[ "$n" -le $((1024 - foff)) ] || n=$((1024 - foff))
		dd if="$work/grubenv.new" of="$target" bs=512 iflag=skip_bytes,count_bytes oflag=seek_bytes skip="$foff" \
			seek="$doff" count="$n" conv=notrunc,fsync status=none || die "writing liveunion/$1 failed"
	done < <(extents "$1")
	mtype -i "$fat" "::/liveunion/$1" | cmp -s - "$work/grubenv.new" || die "liveunion/$1 reads back wrong"
}

# write_env SLOT TRIES FAILED: the switch, double-buffered. grubenv.bak gets the whole new state first, synced, then
# grubenv: a power cut tearing grubenv's sector leaves a block the menu does not take (no header or no slot=), and it
# reads grubenv.bak, the new state; one tearing grubenv.bak leaves grubenv whole, the old state. A stick made before
# grubenv.bak existed has grubenv alone (one sector's write, no copy to fall back on).
write_env() {
	env_block "$@" >"$work/grubenv.new"
	if [ -n "$(file_bytes grubenv.bak)" ]; then write_block grubenv.bak; fi
	write_block grubenv
}

# iso_file_loop ISO PATH: a read-only loop device over the bytes of file PATH inside ISO (xorriso reports where they
# lie; the build host's kernel need not read ISO 9660) in $floop (kept in $loops); 1 when the ISO has no such file.
loops=()
iso_file_loop() {
	local lba='' bytes=''
	floop=''
	read -r lba bytes < <(xorriso -indev "$1" -find "$2" -type f -exec report_lba -- 2>/dev/null |
		awk -F' *, *' '/^File data lba:/ { print $2, $4; exit }') || true
	[ -n "$lba" ] || return 1
	floop=$(losetup -r -f --show -o $((lba * 2048)) --sizelimit "$bytes" "$1") || die "losetup on $1 ($2) failed"
	loops+=("$floop")
}

# check_new: every layer of the new ISO against the root hash its own menu names, before anything is written.
check_new() {
	local verify l name hash n=0 data hashdev layers
	xorriso -osirrox on -indev "$iso" -extract /boot/grub/loopback.cfg "$work/loopback.cfg" >/dev/null 2>&1 ||
		die "$isoname has no /boot/grub/loopback.cfg: not a liveunion ISO"
	verify=$(grep -o 'live\.verify=[^ "]*' "$work/loopback.cfg" | head -n 1 | sed 's/^live\.verify=//')
	[ -n "$verify" ] || die "$isoname: its menu names no root hashes (live.verify=): built without dm-verity, it cannot be checked; refusing"
	IFS=, read -ra layers <<<"$verify"
	for l in "${layers[@]}"; do
		name=${l%%:*} hash=${l#*:}
		{ iso_file_loop "$iso" "/live/$name.squashfs" && data=$floop && iso_file_loop "$iso" "/live/$name.verity" &&
			hashdev=$floop; } ||
			die "$isoname: layer $name is named by its menu but missing: refusing the update, nothing written"
		veritysetup verify "$data" "$hashdev" "$hash" >/dev/null 2>&1 ||
			die "$isoname: layer $name does not match its root hash ($hash): tampered or damaged; refusing the update, nothing written"
		n=$((n + 1))
	done
	log "checked $(basename "$isoname"): $n layer(s) match their root hashes"
}

update() {
	local newb oldb freeb padded written=0 t0 sum grown=''
	[ -f "$iso" ] || die "no ISO at $iso"
	t0=$(date +%s.%N)
	# One copy is checked, hashed and written: the file named could change between those reads.
	isoname=$iso
	cp --sparse=always "$iso" "$work/new.iso" || die "cannot copy $iso to $work"
	iso=$work/new.iso
	check_new
	sum=$(sha256sum <"$iso") && sum=${sum%% *}
	open_stick
	[ -z "$pending" ] || die "slot $active is on trial ($pending tries left) and not yet known good: boot it to a healthy state first, or roll it back (--rollback); nothing written"
	newb=$(stat -c %s "$iso")
	oldb=$(file_bytes "$inactive.iso") && [ -n "$oldb" ] || oldb=0
	freeb=$(mdir -i "$fat" ::/ 2>/dev/null | sed -n 's/^ *\([0-9 ]*\) bytes free$/\1/p' | tr -d ' ')
	[ -n "$freeb" ] || die "$target: cannot tell the free space of its FAT32 (mdir)"
	# A slot's file keeps its length (an ISO reader stops at the volume's end): a new image that fits is written
	# into its clusters in place; a larger one makes it anew, a quarter larger, whole.
	padded=$oldb
	if [ "$newb" -gt "$oldb" ]; then
		padded=$(((newb + newb / 4 + 1048575) / 1048576 * 1048576))
		[ $((padded - oldb)) -le "$freeb" ] ||
			die "the stick is too full for $(basename "$isoname") ($newb bytes, $padded with room to grow) in slot $inactive: $freeb bytes free beside the $oldb of that slot; nothing written"
	fi
	confirm
	log "writing slot $inactive (slot $active boots and is not touched)"
	if [ "$padded" != "$oldb" ]; then
		{ cp --sparse=always "$iso" "$work/slot.iso" && truncate -s "$padded" "$work/slot.iso" &&
			mcopy -o -i "$fat" "$work/slot.iso" "::/liveunion/$inactive.iso"; } || die "writing slot $inactive failed (slot $active still boots)"
		rm -f "$work/slot.iso"
		written=$newb grown=" (slot $inactive grown to $padded bytes: written whole)"
	else
		make -s -C "$TOP/iso" O="$work" slot-write || die "cannot build iso/slot-write.c with iso/Makefile (needs make and gcc)"
		extents "$inactive.iso" >"$work/extents"
		written=$("$work/slot-write" "$iso" "$target" <"$work/extents") ||
			die "writing slot $inactive failed (slot $active still boots)"
	fi
	[ "$(mtype -i "$fat" "::/liveunion/$inactive.iso" | head -c "$newb" | sha256sum | cut -d' ' -f1)" = "$sum" ] ||
		die "slot $inactive read back differs from $(basename "$isoname"): not switched (slot $active still boots)"
	write_env "$inactive" "$tries" ''
	log "switched: slot $inactive boots next, with $tries tries to come up healthy, else slot $active again"
	log "copied $written of $newb bytes ($((written * 100 / newb))%)$grown in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s"
}

rollback() {
	open_stick
	[ "$(file_bytes "$inactive.iso")" -gt 0 ] 2>/dev/null || die "slot $inactive is empty: nothing to roll back to"
	confirm
	write_env "$inactive" '' "$([ -n "$pending" ] && echo "$active")"
	log "rolled back: slot $inactive boots from now on ($([ -n "$pending" ] && echo "slot $active was on trial" || echo "slot $active stays as it is"))"
}

status() {
	open_stick
	printf 'slot a: %s bytes\nslot b: %s bytes\nboots: slot %s%s\n' "$(file_bytes a.iso)" "$(file_bytes b.iso)" "$active" \
		"${pending:+, on trial with $pending tries left}"
	[ -z "$failed" ] || printf 'failed: slot %s did not come up healthy (rolled back)\n' "$failed"
}

[ "$action" != update ] || [ "$(id -u)" = 0 ] || die "--update needs root (its check of the new image uses loop devices)"
case "$action" in
make) make_stick ;;
update) update ;;
rollback) rollback ;;
status) status ;;
esac

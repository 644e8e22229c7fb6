#!/usr/bin/env bash
# Build host: a USB stick image = the hybrid ISO (BIOS and UEFI boot unchanged) + one appended
# MBR partition for persistence. Run by `./build.sh usb`, or directly:
#   iso/mkusb.sh [--iso ISO] [-o IMAGE] [--persist-size SIZE] [--file [--exfat]]
#                [--encrypt [--passphrase-file FILE]] [--device /dev/sdX]
#   iso/mkusb.sh --slots | --update STICK [--iso NEW] | --rollback STICK | --status STICK   (iso/slots.sh: A/B sticks)
# Default: an ext4 partition labelled liveunion-rw. --file: a FAT32 (or exFAT) data partition
# holding liveunion-rw.img, an ext4 image file. --encrypt: the store (partition or image file) is a LUKS2
# container labelled liveunion-rw with the ext4 inside; the passphrase is asked twice on the terminal, or is the
# first line of FILE. mkfs only ever runs on files, never on a device;
# --device copies the finished image to a real disk after a typed confirmation.
set -euo pipefail
export LC_ALL=C
umask 022

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$TOP/out}
# shellcheck source=iso/device.bash
. "$TOP/iso/device.bash"

# An A/B stick and its updates are iso/slots.sh's.
for a in "$@"; do
	case "$a" in --slots | --update | --rollback | --status) exec bash "$TOP/iso/slots.sh" "$@" ;; esac
done

iso=$OUT/liveunion.iso out='' size=256M mode='part' fs='vfat' device='' yes=0 encrypt=0 passfile=''
while [ $# -gt 0 ]; do
	case "$1" in
	--iso) iso=$2; shift ;;
	-o | --output) out=$2; shift ;;
	--persist-size) size=$2; shift ;;
	--file) mode='file' ;;
	--exfat) fs='exfat' ;;
	--encrypt) encrypt=1 ;;
	--passphrase-file) passfile=$2; shift ;;
	--device) device=$2; shift ;;
	--yes) yes=1 ;; # for scripts that already confirmed
	-h | --help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) die "unknown option '$1' (try --help)" ;;
	esac
	shift
done
out=${out:-$OUT/liveunion-usb.img}
[ -f "$iso" ] || die "no ISO at $iso: run ./build.sh first"
case "$size" in
'' | *[!0-9kKmMgG]* | [!0-9]* | *[kKmMgG]?*) die "--persist-size: want a size like 256M or 2G, got '$size'" ;;
esac
bytes=$(numfmt --from=iec "${size^^}") || die "--persist-size: want a size like 256M or 2G, got '$size'"
[ "$bytes" -ge $((8 * 1024 * 1024)) ] || die "--persist-size: at least 8M"
[ "$fs" = vfat ] || [ "$mode" = file ] || die "--exfat goes with --file (the image file lives on the exFAT partition)"
[ -z "$passfile" ] || [ "$encrypt" = 1 ] || die "--passphrase-file goes with --encrypt"

work=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-usb.XXXXXX")
trap 'rm -rf "$work"' EXIT

# store_image FILE BYTES: the ext4 store (journal, so a power cut needs only a replay); with --encrypt, a LUKS2
# container of BYTES + LUKS_HEADER with that ext4 inside.
LUKS_HEADER=$((16 * 1024 * 1024)) # cryptsetup's LUKS2 default: two copies of the header and the key slots
store_image() {
	rm -f "$1"
	if [ "$encrypt" = 1 ]; then
		luks_store "$1" "$2"
		return
	fi
	mkfs.ext4 -q -F -L liveunion-rw -O ^metadata_csum_seed -E root_owner=0:0 "$1" "$(($2 / 1024))k" >/dev/null 2>&1 ||
		die "mkfs.ext4 on the file $1 failed"
}

# The passphrase: the first line of --passphrase-file, or asked twice on the terminal (not echoed). Kept in a file
# of $work (mode 0600, removed at exit) for cryptsetup's --key-file, without a newline: what is typed at boot.
passphrase() {
	local a b
	if [ -n "$passfile" ]; then
		[ -r "$passfile" ] || die "--passphrase-file $passfile cannot be read"
		IFS= read -r a <"$passfile" || [ -n "$a" ] || die "--passphrase-file $passfile is empty"
	else
		[ -r /dev/tty ] || die "--encrypt needs a terminal to ask for the passphrase, or --passphrase-file FILE"
		IFS= read -rs -p 'Passphrase for the persistence store: ' a </dev/tty || die "no passphrase"
		printf '\n' >&2
		IFS= read -rs -p 'The same passphrase again: ' b </dev/tty || die "no passphrase"
		printf '\n' >&2
		[ "$a" = "$b" ] || die "the two passphrases differ; nothing was written"
	fi
	[ -n "$a" ] || die "an empty passphrase protects nothing"
	(umask 077 && printf '%s' "$a" >"$work/passphrase")
}

# luks_store FILE BYTES: LUKS2 (aes-xts-plain64, 512-bit key, 512-byte sectors) labelled liveunion-rw. The key slot:
# argon2id with a fixed cost (LUKS_KDF_MEMORY KiB, LUKS_KDF_TIME passes, one lane), not one cryptsetup measures on
# this machine: a cost measured on a fast build host takes a small machine many times as long, and more memory than it
# has fails there. 64 MiB is a modest share of 1 GiB. The volume key is made here, the ext4 made on a plain file
# and written in encrypted by luks-fill (iso/luks-fill.c): no device-mapper is needed on the build host.
LUKS_KDF_MEMORY=${LUKS_KDF_MEMORY:-65536}
LUKS_KDF_TIME=${LUKS_KDF_TIME:-4}
luks_store() {
	local f=$1 bytes=$2 off
	command -v cryptsetup >/dev/null || die "cryptsetup missing (Debian package cryptsetup-bin)"
	[ -s "$work/passphrase" ] || passphrase
	make -s -C "$TOP/iso" O="$work" luks-fill ||
		die "cannot build iso/luks-fill.c with iso/Makefile (needs make, gcc and libssl-dev)"
	(umask 077 && head -c 64 /dev/urandom >"$work/volume.key") || die "no volume key"
	truncate -s $((bytes + LUKS_HEADER)) "$f" || die "cannot make $f"
	cryptsetup luksFormat --batch-mode --type luks2 --cipher aes-xts-plain64 --key-size 512 --sector-size 512 \
		--pbkdf argon2id --pbkdf-memory "$LUKS_KDF_MEMORY" --pbkdf-parallel 1 --pbkdf-force-iterations "$LUKS_KDF_TIME" \
		--label liveunion-rw --volume-key-file "$work/volume.key" --key-file "$work/passphrase" "$f" >/dev/null ||
		die "cryptsetup luksFormat on the file $f failed"
	off=$(cryptsetup luksDump "$f" | awk '/^Data segments:/ { d = 1 } d && $1 == "offset:" { print $2; exit }')
	[ "$off" = "$LUKS_HEADER" ] || die "LUKS2 data segment of $f at '${off:-?}', not at $LUKS_HEADER"
	mkfs.ext4 -q -F -L liveunion-rw -O ^metadata_csum_seed -E root_owner=0:0 "$work/plain.img" "$((bytes / 1024))k" \
		>/dev/null 2>&1 || die "mkfs.ext4 on the file $work/plain.img failed"
	"$work/luks-fill" "$work/volume.key" "$work/plain.img" "$f" "$off" || die "filling the LUKS2 container failed"
	rm -f "$work/plain.img" "$work/volume.key"
}

# The partition: 1 MiB aligned after the ISO, so the ISO's own bytes are never touched.
iso_bytes=$(stat -c %s "$iso")
start=$(((iso_bytes + 1048575) / 1048576))
start=$((start * 2048))
part=$work/part.img
if [ "$mode" = part ]; then
	store_image "$part" "$bytes"
	ptype=83
else
	pbytes=$((bytes + bytes / 8 + 4 * 1024 * 1024 + encrypt * LUKS_HEADER))
	[ "$fs" = exfat ] || [ "$pbytes" -ge $((40 * 1024 * 1024)) ] || pbytes=$((40 * 1024 * 1024)) # FAT32 minimum
	truncate -s "$pbytes" "$part"
	store_image "$work/liveunion-rw.img" "$bytes"
	if [ "$fs" = vfat ]; then
		mkfs.vfat -F 32 -n LIVEUNION-D "$part" >/dev/null || die "mkfs.vfat on the file $part failed"
		mcopy -i "$part" "$work/liveunion-rw.img" ::liveunion-rw.img || die "mcopy liveunion-rw.img failed"
		ptype=0c
	else
		command -v mkfs.exfat >/dev/null || die "mkfs.exfat missing (Debian package exfatprogs)"
		mkfs.exfat -L LIVEUNION-D "$part" >/dev/null || die "mkfs.exfat on the file $part failed"
		# No mtools for exFAT: copy through a mount in a private mount namespace, the kernel's exFAT
		# driver or else exfat-fuse (kernels built without exFAT).
		if grep -qw exfat /proc/filesystems || modprobe -q exfat 2>/dev/null; then
			how='mount -t exfat'
		elif command -v mount.exfat-fuse >/dev/null; then
			how='mount.exfat-fuse'
		else
			die "this kernel cannot mount exFAT and exfat-fuse is missing: apt-get install -y exfat-fuse"
		fi
		# shellcheck disable=SC2016 # the script is expanded by the inner sh
		unshare -m sh -c 'set -e; d=$(mktemp -d); l=$(losetup -f --show "$1"); trap "losetup -d $l; rmdir $d" EXIT
			$3 "$l" "$d"; cp "$2" "$d/"; sync; umount "$d"' \
			sh "$part" "$work/liveunion-rw.img" "$how" || die "copying liveunion-rw.img onto the exFAT failed ($how)"
		ptype=07
	fi
fi
psect=$(($(stat -c %s "$part") / 512))
cp "$iso" "$out.tmp"
truncate -s $(((start + psect) * 512)) "$out.tmp"
dd if="$part" of="$out.tmp" bs=1M seek=$((start / 2048)) conv=notrunc,sparse status=none || die "writing the partition failed"
# The ISO's MBR has partition 1 (the ISO, from sector 0) and 2 (the EFI system partition).
printf 'start=%s, size=%s, type=%s\n' "$start" "$psect" "$ptype" |
	sfdisk --append --no-reread --no-tell-kernel -q "$out.tmp" >/dev/null 2>&1 || die "sfdisk could not append partition 3"
cmp -n $((iso_bytes - 512)) -i 512 "$iso" "$out.tmp" >/dev/null || die "the ISO bytes changed (after the MBR): refusing the image"
mv "$out.tmp" "$out"
log "$out: $(numfmt --to=iec-i --suffix=B --format=%.1f "$(stat -c %s "$out")"), ISO + partition 3 ($([ "$mode" = part ] && echo "ext4 liveunion-rw" || echo "$fs with liveunion-rw.img"), $size$([ "$encrypt" = 0 ] || echo ", in LUKS2"))"

[ -n "$device" ] || exit 0
# A real device: never one in use, never the disk the running system lives on.
device_check "$device"
dev_bytes=$(lsblk -bndo SIZE "$device")
[ "${dev_bytes:-0}" -ge "$(stat -c %s "$out")" ] ||
	die "$device (${dev_bytes:-unknown} bytes) is smaller than the image ($(stat -c %s "$out") bytes)"
device_confirm "$device" "Everything on $device will be overwritten."
dd if="$out" of="$device" bs=4M conv=fsync status=progress || die "writing $device failed"
sync
log "wrote $out to $device"

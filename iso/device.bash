# Sourced by iso/mkusb.sh and iso/slots.sh: their messages, and what is checked before a real device is written.
# shellcheck shell=bash

die() { printf 'liveunion usb: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'liveunion usb: %s\n' "$*" >&2; }

# device_check DEVICE: a whole disk (or loop device), not mounted (nor a partition of it), not holding this system's
# /, /boot, /usr or /home, not swap; else die naming which.
device_check() {
	local device=$1 m src pk
	[ -b "$device" ] || die "$device is not a block device"
	case "$(lsblk -ndo TYPE "$device")" in disk | loop) ;; *) die "$device is not a whole disk" ;; esac
	if lsblk -nro MOUNTPOINT "$device" | grep -q .; then die "$device (or a partition of it) is mounted: refusing"; fi
	for m in / /boot /usr /home; do
		src=$(findmnt -nvo SOURCE "$m" 2>/dev/null || true)
		[ -n "$src" ] || continue
		pk=$(lsblk -ndo PKNAME "$src" 2>/dev/null || true)
		if [ "/dev/${pk:-none}" = "$device" ] || [ "$src" = "$device" ]; then die "$device holds $m of this system: refusing"; fi
	done
	if grep -q "^$(basename "$device") " <(swapon --noheadings --raw 2>/dev/null | sed 's,^/dev/,,'); then die "$device is swap: refusing"; fi
}

# device_confirm DEVICE WHAT: DEVICE shown (lsblk), then WHAT and its name typed back, unless yes=1 (--yes).
device_confirm() {
	local device=$1 what=$2 answer
	lsblk -o NAME,SIZE,MODEL,TRAN "$device" >&2
	[ "${yes:-0}" != 1 ] || return 0
	printf '%s Type the device name (%s) to go on: ' "$what" "$device" >&2
	read -r answer </dev/tty || die "no answer"
	[ "$answer" = "$device" ] || die "not confirmed; nothing written"
}

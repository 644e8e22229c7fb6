# shellcheck shell=bash
# Sourced by iso.bash and by the scenarios that damage a served image (netboot): where a file's data lies in an
# ISO, and changing one byte of a copy in place. No state, no side effects when sourced.

# iso_file_offset ISO PATH: "OFFSET SIZE", the byte offset of PATH's data in ISO and its size.
iso_file_offset() {
	local lba size
	read -r lba size < <(xorriso -indev "$1" -find "$2" -exec report_lba 2>/dev/null |
		awk -F' *, *' '/^File data lba:/ { print $2, $4 }')
	[ -n "${lba:-}" ] && [ -n "${size:-}" ] || return 1
	echo "$((lba * 2048)) $size"
}

# flip_byte FILE OFFSET: invert the bits of one byte in place.
flip_byte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ') || return 1
	[ -n "$b" ] || return 1
	# shellcheck disable=SC2059 # the format is the byte, built on purpose
	printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# other_digit FILE OFFSET: the hex digit at OFFSET replaced by another one (a root hash in a signed command line
# changed: still a well-formed line, no longer the one signed).
other_digit() {
	local c
	c=$(dd if="$1" bs=1 skip="$2" count=1 status=none) || return 1
	case "$c" in [0-9a-f]) ;; *) return 1 ;; esac
	if [ "$c" = 0 ]; then c=1; else c=0; fi
	printf '%s' "$c" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

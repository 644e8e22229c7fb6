# shellcheck shell=bash
# Sourced by the host tests of the kiosk's input programs (tests/unit/kiosk-idle.sh, kiosk-keys.sh), after
# tests/lib.sh: a work directory with a directory of named pipes standing in for /dev/input, the programs they
# start ended at exit, and the writer of the kernel's input records.
#   work, dev, pids       the work directory, its input/ directory, the PIDs to end at exit (add to it)
#   send FD "TYPE CODE VALUE"...   struct input_event records (x86-64: a 16-byte time, u16 type, u16 code, s32
#                         value) in one write to FD, as the kernel hands over a batch
work=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX")
pids=()
evdev_cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
at_exit evdev_cleanup
dev=$work/input
mkdir -p "$dev"

send() {
	local fd=$1 b='' r t c v e
	shift
	for e in "$@"; do
		read -r t c v <<<"$e"
		printf -v r '\\x%02x' 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 $((t & 255)) $((t >> 8 & 255)) $((c & 255)) \
			$((c >> 8 & 255)) $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) $((v >> 24 & 255))
		b+=$r
	done
	printf '%b' "$b" >&"$fd"
}

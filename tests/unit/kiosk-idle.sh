#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# Host test: rootfs/kiosk/kiosk-idle, the kiosk's idle watch, built with ASan and UBSan, on a directory of named pipes
# standing in for /dev/input (struct input_event records written to them as the kernel would). It returns only after
# a visitor's input and then SECONDS without any: never for an untouched kiosk, nor for events that are no input
# (EV_SYN); input on a device plugged in after it started counts; a device that goes away is dropped, not fatal; a
# wrong argument is named (exit 2).
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# shellcheck source=tests/unit/lib/evdev.bash
. "$(dirname "${BASH_SOURCE[0]}")/lib/evdev.bash"
bin=$work/kiosk-idle

require built gcc -std=c11 -Wall -Wextra -Werror -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
	-o "$bin" "$TOP/rootfs/kiosk/kiosk-idle.c"

EV_SYN=0 EV_KEY=1 EV_REL=2 KEY_A=30 REL_X=0

# start NAME SECONDS: kiosk-idle in the background on $dev, its messages in $work/NAME.log, its PID in PID; returns
# once it has opened every device there (an ASan build starts slowly on a busy host)
start() {
	local n
	# not holding this shell's ends of the pipes (a writer that never goes away)
	"$bin" "$2" "$dev" 2>"$work/$1.log" 3>&- 4>&- 5>&- 6>&- &
	PID=$!
	pids+=("$PID")
	n=$(find "$dev" -name 'event*' | wc -l)
	for _ in $(seq 100); do
		[ "$(grep -c '^kiosk-idle: watching ' "$work/$1.log")" -ge "$n" ] && return 0
		sleep 0.1
	done
	echo "#   kiosk-idle $1: not watching all $n devices after 10 s: $(cat "$work/$1.log")" >&2
}
# running_after SECONDS: kiosk-idle still waits that long after now
running_after() { sleep "$1"; kill -0 "$PID" 2>/dev/null; }
# ends_within SECONDS: kiosk-idle returns 0 within that long
ends_within() {
	local rc
	for _ in $(seq $(($1 * 10))); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$PID" 2>/dev/null && { echo "#   still running after $1 s" >&2; return 1; }
	wait "$PID" && rc=0 || rc=$?
	[ "$rc" -eq 0 ] || { echo "kiosk-idle ended with status $rc" >&2; return 1; }
}
# exits STATUS TEXT ARGS...: kiosk-idle ARGS exits with STATUS at once (2: a wrong argument, 1: DIR unreadable),
# its message has TEXT
exits() {
	local status=$1 text=$2 out rc
	shift 2
	out=$(timeout 10 "$bin" "$@" 2>&1) && rc=0 || rc=$?
	[ "$rc" -eq "$status" ] && grep -qF -- "$text" <<<"$out" && return 0
	printf '#   kiosk-idle %s: exit %s (wanted %s): %s\n' "$*" "$rc" "$status" "$out" >&2
	return 1
}
stop() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }

# a keyboard and a mouse, each held open by this shell so that they stay present
mkfifo "$dev/event0" "$dev/event1"
exec 3<>"$dev/event0" 4<>"$dev/event1"

# An untouched kiosk is never reset, and sync reports and other non-input events do not make it touched.
start untouched 1
check untouched-not-reset running_after 3
send 3 "$EV_SYN 0 0"
send 4 "4 4 458756" # EV_MSC MSC_SCAN
check sync-and-scan-codes-are-not-input running_after 2
check opened-both-devices test "$(grep -c 'watching .*/event[01]$' "$work/untouched.log")" -eq 2
stop

# A key press, then nothing for SECONDS: it returns 0, not before SECONDS.
start key 2
sleep 0.5
send 3 "$EV_KEY $KEY_A 1"
t0=$(date +%s%N)
check key-then-quiet-resets ends_within 15
waited=$((($(date +%s%N) - t0) / 1000000))
check waits-the-whole-idle-time test "$waited" -ge 2000
check says-why grep -q 'no input for 2 s after a visitor' "$work/key.log"

# Input again before the time is up starts it over: mouse moves every 0.5 s for 3 s keep a 2 s idle time away.
start moving 2
for _ in 1 2 3 4 5 6; do
	send 4 "$EV_REL $REL_X 5"
	sleep 0.5
done
check moving-mouse-keeps-it-alive kill -0 "$PID"
check quiet-after-moves-resets ends_within 15

# A keyboard plugged in after the start: its input counts; a device that goes away is dropped, nothing else.
start hotplug 1
# a pipe reports a hang-up to a reader only if a writer came after that reader opened it: one more writer, then
# every writer gone, as a device's node reports ENODEV once unplugged
exec 6>"$dev/event1"
exec 4>&- 6>&-
rm -f "$dev/event1"
mkfifo "$dev/event7"
exec 5<>"$dev/event7"
check unplugged-device-dropped-still-waiting running_after 3
check unplugged-device-named grep -q "event1 is gone" "$work/hotplug.log"
check plugged-device-opened grep -q 'watching .*/event7$' "$work/hotplug.log"
send 5 "$EV_KEY $KEY_A 0"
check input-on-plugged-device-counts ends_within 15
exec 5>&- 3>&-

# Wrong arguments: named, status 2.
for a in 0 -5 5x '' 999999999; do
	check "argument-'$a'-refused-and-named" exits 2 "got $a)" "$a" "$dev"
done
check no-argument-refused exits 2 'got nothing'
check missing-dir-named exits 1 "cannot read $work/none" 5 "$work/none"
finish

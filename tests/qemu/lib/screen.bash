# shellcheck shell=bash
# What a person sees on the guest's screen (build host): QMP screendump of the VM's display, PPM files read by a
# small python3 reader, PNG copies (netpbm's pnmtopng) kept under $SCREEN_PNG_DIR (default $OUT/tests/) for people
# to look at.
#   screen_start_args      the qemu arguments a scenario adds to vm_start (a QMP socket of this VM)
#   screen_shot NAME       the screen now, as $SCREEN_DIR/NAME.ppm and $SCREEN_PNG_DIR/NAME.png (SCREEN_LAST = the .ppm)
#   screen_is PPM SPEC...  every SPEC "X,Y=RRGGBB" (or "X,Y!=RRGGBB": not that colour) holds, within SCREEN_TOL
#                          per channel; a row "row:Y=RRGGBB" means every pixel of row Y
#   screen_wait NAME LIMIT SPEC...  takes screenshots until one matches (SCREEN_WAITED: the seconds it took);
#                          fails after LIMIT seconds, naming the last mismatch
#   screen_dark PPM X0 Y0 X1 Y1   prints how many pixels of the box are dark (all channels < 96): typed text
#   screen_foreign PPM RRGGBB...  prints how many pixels are none of these colours (a cursor on a flat page)
#   screen_mouse DX DY     the guest's mouse moved by DX, DY (QMP input-send-event, relative)
#   screen_click X Y [BUTTON [HOLD]], screen_drag X0 Y0 X1 Y1   clicks, long presses and drags at screen pixels
#                          (an absolute pointer: the VM needs -device usb-tablet)
# A dead VM is a harness error here as in vm_run: no screenshot of a dead VM can match anything.
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "${BASH_SOURCE[0]}")/vm.bash"

SCREEN_DIR=$VM_WORK/screen
SCREEN_SOCK=$VM_WORK/screen-qmp.sock
SCREEN_TOL=${SCREEN_TOL:-24}
SCREEN_PNG_DIR=${SCREEN_PNG_DIR:-$OUT/tests}
SCREEN_LAST='' SCREEN_WAITED=0
mkdir -p "$SCREEN_DIR"

screen_start_args() { printf '%s\n' -qmp "unix:$SCREEN_SOCK,server=on,wait=off"; }

screen_shot() {
	local name=$1 ppm=$SCREEN_DIR/$1.ppm
	vm_alive || { harness_error "screen_shot $name: qemu${VM_NAME:+ ($VM_NAME)} is not running"; return 255; }
	rm -f "$ppm"
	if ! vm_qmp "$SCREEN_SOCK" "{\"execute\": \"screendump\", \"arguments\": {\"filename\": \"$ppm\"}}" >/dev/null ||
		[ ! -s "$ppm" ]; then
		harness_error "screen_shot $name: QMP screendump to $ppm failed"
		return 255
	fi
	SCREEN_LAST=$ppm
	[ -n "${SCREEN_NO_PNG:-}" ] || screen_png "$name"
}
# screen_png NAME: the PNG of screenshot NAME (its PPM) in SCREEN_PNG_DIR
screen_png() {
	if ! { mkdir -p "$SCREEN_PNG_DIR" && pnmtopng "$SCREEN_DIR/$1.ppm" >"$SCREEN_PNG_DIR/$1.png" 2>/dev/null; }; then
		vm_note "screen_shot: pnmtopng $SCREEN_DIR/$1.ppm failed (package netpbm)"
	fi
}

# the reader: argv = PPM, then specs; prints each mismatch; exit 0 when all hold
SCREEN_PY='
import sys
def load(p):
    d = open(p, "rb").read()
    f, i = [], 0
    while len(f) < 4:  # magic, width, height, maxval; comments skipped
        while d[i:i + 1].isspace(): i += 1
        if d[i:i + 1] == b"#":
            while d[i:i + 1] != b"\n": i += 1
            continue
        j = i
        while not d[j:j + 1].isspace(): j += 1
        f.append(d[i:j]); i = j
    if f[0] != b"P6" or f[3] != b"255": sys.exit("%s: not a P6 PPM with maxval 255" % p)
    return int(f[1]), int(f[2]), d[i + 1:]
w, h, px = load(sys.argv[1])
tol = int(sys.argv[2])
def at(x, y):
    o = 3 * (y * w + x); return tuple(px[o:o + 3])
def near(c, want): return all(abs(a - b) <= tol for a, b in zip(c, want))
if sys.argv[3] == "dark":
    x0, y0, x1, y1 = map(int, sys.argv[4:8])
    print(sum(1 for y in range(y0, y1) for x in range(x0, x1) if max(at(x, y)) < 96)); sys.exit(0)
bad = 0
for s in sys.argv[3:]:
    pos, neg, want = s.split("=")[0], "!=" in s, s.split("=")[1]
    pos = pos.rstrip("!")
    want = tuple(int(want[k:k + 2], 16) for k in (0, 2, 4))
    pts = [(x, int(pos[4:])) for x in range(w)] if pos.startswith("row:") else [tuple(map(int, pos.split(",")))]
    for x, y in pts:
        if not (0 <= x < w and 0 <= y < h):
            print("%s: (%d,%d) is off the %dx%d screen" % (s, x, y, w, h)); bad += 1; break
        if near(at(x, y), want) == neg:
            print("%s: (%d,%d) is %02x%02x%02x" % ((s, x, y) + at(x, y))); bad += 1; break
sys.exit(1 if bad else 0)
'

screen_is() {
	local ppm=$1 out
	shift
	out=$(python3 -c "$SCREEN_PY" "$ppm" "$SCREEN_TOL" "$@") && return 0
	printf '#   screen %s: %s\n' "$(basename "$ppm")" "$out" | head -n 5 >&2
	return 1
}

screen_dark() { python3 -c "$SCREEN_PY" "$1" 0 dark "$2" "$3" "$4" "$5"; }
# screen_foreign PPM RRGGBB...: prints how many pixels of the whole screen are none of these colours (within
# SCREEN_TOL): a mouse cursor drawn over a page of flat colours, for one. netpbm's ppmhist counts the screen's
# colours (a few on a page of flat colours), awk judges each (counting them in Python took 0.7 CPU seconds a
# screen, and the kiosk's attack checks about 90 screens; ppmhist takes 0.05)
screen_foreign() {
	local ppm=$1 hist c want=''
	shift
	for c in "$@"; do want+="$((16#${c:0:2})) $((16#${c:2:2})) $((16#${c:4:2})) "; done
	hist=$(ppmhist -noheader "$ppm") || { harness_error "screen_foreign: ppmhist $ppm failed (package netpbm)" >&2; return 255; }
	awk -v tol="$SCREEN_TOL" -v want="$want" '
		BEGIN { n = split(want, w, " ") / 3 }
		function d(a, b) { return a > b ? a - b : b - a }
		NF >= 5 { near = 0
			for (i = 0; i < n && !near; i++)
				near = d($1, w[3 * i + 1]) <= tol && d($2, w[3 * i + 2]) <= tol && d($3, w[3 * i + 3]) <= tol
			if (!near) bad += $NF }
		END { print bad + 0 }' <<<"$hist"
}

screen_wait() {
	local name=$1 limit=$2 t0 out n=0
	shift 2
	t0=$(now_ms)
	while :; do
		n=$((n + 1))
		# each look replaces the last under the same name: only the one the wait ends on becomes a PNG
		SCREEN_NO_PNG=1 screen_shot "$name" || return 1
		if out=$(python3 -c "$SCREEN_PY" "$SCREEN_LAST" "$SCREEN_TOL" "$@"); then
			screen_png "$name"
			SCREEN_WAITED=$((($(now_ms) - t0) / 1000))
			vm_note "screen $name: matched after ${SCREEN_WAITED} s ($n screenshots)"
			return 0
		fi
		if [ $(($(now_ms) - t0)) -ge $((limit * 1000)) ]; then
			screen_png "$name"
			vm_note "screen $name: no match within ${limit} s ($n screenshots, the last in $SCREEN_PNG_DIR/$name.png): $out"
			return 1
		fi
		sleep 2
	done
}

# screen_keys COMBO...: each COMBO (qcodes joined by '-', e.g. ctrl-alt-f2, shift-semicolon, a) pressed and
# released through QMP send-key, as on the guest's keyboard.
screen_keys() {
	local c k keys parts
	vm_alive || { harness_error "screen_keys: qemu${VM_NAME:+ ($VM_NAME)} is not running"; return 255; }
	for c in "$@"; do
		keys=''
		IFS=- read -ra parts <<<"$c"
		for k in "${parts[@]}"; do keys+="${keys:+, }{\"type\": \"qcode\", \"data\": \"$k\"}"; done
		vm_qmp "$SCREEN_SOCK" "{\"execute\": \"send-key\", \"arguments\": {\"keys\": [$keys], \"hold-time\": 60}}" \
			>/dev/null || { harness_error "screen_keys: QMP send-key $c failed"; return 255; }
		sleep 0.2
	done
}

# screen_type TEXT: TEXT typed key by key (lower-case letters, digits, and / : . - _ space).
screen_type() {
	local t=$1 ch combos=()
	while [ -n "$t" ]; do
		ch=${t:0:1} t=${t:1}
		case "$ch" in
		[a-z0-9]) combos+=("$ch") ;;
		/) combos+=(slash) ;;
		:) combos+=(shift-semicolon) ;;
		.) combos+=(dot) ;;
		-) combos+=(minus) ;;
		_) combos+=(shift-minus) ;;
		' ') combos+=(spc) ;;
		*) vm_note "screen_type: no key for '$ch'"; return 1 ;;
		esac
	done
	screen_keys "${combos[@]}"
}

# screen_click X Y [BUTTON [HOLD]]: the pointer to screen pixel X,Y of a SCREEN_W x SCREEN_H screen (default 1280 x
# 800, the kiosk test's) through an absolute pointer (the VM needs one: -device usb-tablet), then BUTTON (left, right, middle, side,
# extra; default left) pressed and released after HOLD seconds (default 0.1): a click, a right click, a long press.
SCREEN_W=${SCREEN_W:-1280} SCREEN_H=${SCREEN_H:-800}
screen_click() {
	local px=$(($1 * 32767 / (SCREEN_W - 1))) py=$(($2 * 32767 / (SCREEN_H - 1))) b=${3:-left} hold=${4:-0.1}
	local abs='{"type": "abs", "data": {"axis": "x", "value": %d}}, {"type": "abs", "data": {"axis": "y", "value": %d}}'
	local btn='{"type": "btn", "data": {"down": %s, "button": "%s"}}' ev='{"execute": "input-send-event", "arguments": {"events": [%s]}}'
	vm_alive || { harness_error "screen_click: qemu${VM_NAME:+ ($VM_NAME)} is not running"; return 255; }
	# shellcheck disable=SC2059 # the formats are built above
	if ! vm_qmp "$SCREEN_SOCK" "$(printf "$ev" "$(printf "$abs" "$px" "$py")")" \
		"$(printf "$ev" "$(printf "$btn" true "$b")")" >/dev/null; then
		harness_error "screen_click: QMP input-send-event failed"
		return 255
	fi
	sleep "$hold"
	# shellcheck disable=SC2059
	vm_qmp "$SCREEN_SOCK" "$(printf "$ev" "$(printf "$btn" false "$b")")" >/dev/null ||
		{ harness_error "screen_click: QMP input-send-event failed"; return 255; }
}

# screen_drag X0 Y0 X1 Y1: the left button pressed at X0,Y0, the pointer moved to X1,Y1 in steps, released there.
screen_drag() {
	local i px py cmds=()
	local abs='{"type": "abs", "data": {"axis": "x", "value": %d}}, {"type": "abs", "data": {"axis": "y", "value": %d}}'
	local btn='{"type": "btn", "data": {"down": %s, "button": "left"}}' ev='{"execute": "input-send-event", "arguments": {"events": [%s]}}'
	for i in 0 1 2 3 4 5 6 7 8; do
		px=$((($1 + ($3 - $1) * i / 8) * 32767 / (SCREEN_W - 1))) py=$((($2 + ($4 - $2) * i / 8) * 32767 / (SCREEN_H - 1)))
		# shellcheck disable=SC2059 # the formats are built above
		cmds+=("$(printf "$ev" "$(printf "$abs" "$px" "$py")")")
		# shellcheck disable=SC2059
		[ "$i" != 0 ] || cmds+=("$(printf "$ev" "$(printf "$btn" true)")")
	done
	# shellcheck disable=SC2059
	cmds+=("$(printf "$ev" "$(printf "$btn" false)")")
	vm_alive || { harness_error "screen_drag: qemu${VM_NAME:+ ($VM_NAME)} is not running"; return 255; }
	vm_qmp "$SCREEN_SOCK" "${cmds[@]}" >/dev/null || { harness_error "screen_drag: QMP input-send-event failed"; return 255; }
}

screen_mouse() {
	local ev='{"type": "rel", "data": {"axis": "%s", "value": %d}}'
	vm_alive || { harness_error "screen_mouse: qemu${VM_NAME:+ ($VM_NAME)} is not running"; return 255; }
	# shellcheck disable=SC2059 # the format is ev, twice
	vm_qmp "$SCREEN_SOCK" "{\"execute\": \"input-send-event\", \"arguments\": {\"events\": [$(printf "$ev, $ev" x "$1" y "$2")]}}" \
		>/dev/null || { harness_error "screen_mouse: QMP input-send-event failed"; return 255; }
}

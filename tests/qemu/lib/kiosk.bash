# shellcheck shell=bash
# shellcheck disable=SC2034,SC2054 # the KIOSK_ names are read by the scenarios; the commas are screen_is positions
# Helpers for the browser kiosk scenarios (build host): the test's own web server and what its page looks like.
#   kiosk_port                 a free TCP port on the host's loopback, in KIOSK_PORT; the guest reaches it as
#                              http://10.0.2.2:PORT/ through qemu's user networking (KIOSK_URL)
#   kiosk_serve_start, kiosk_serve_stop   python3's http.server on 127.0.0.1:KIOSK_PORT serving lib/kiosk-page.html
#                              (or what kiosk_serve_page put there), never cached
#   KIOSK_PAGE, KIOSK_WAITING  screen_is specs: the test page full screen; the kiosk's own waiting page
#   KIOSK_FIELD                the text field's box (x0 y0 x1 y1) for screen_dark
#   kiosk_only_page NAME       a screenshot showing nothing but the page's colours (no cursor)
#   kiosk_audio_args WAV, kiosk_audio_peak WAV, kiosk_audio_loud WAV LIMIT   the VM's sound card recorded to WAV;
#                              its loudest sample; a tone in it within LIMIT seconds
# shellcheck source=tests/qemu/lib/profile.bash
. "$(dirname "${BASH_SOURCE[0]}")/profile.bash"
# shellcheck source=tests/qemu/lib/screen.bash
. "$(dirname "${BASH_SOURCE[0]}")/screen.bash"

KIOSK_WWW=$VM_WORK/www
KIOSK_PORT='' KIOSK_URL='' KIOSK_SERVE_PID=''
# the page's colours where lib/kiosk-page.html puts them; its background on the top and bottom rows and left and
# right edges: no browser chrome anywhere
KIOSK_PAGE=(row:0=ff00ff row:1=ff00ff row:2=ff00ff 0,400=ff00ff 1023,100=ff00ff 225,250=ff0000 799,250=00ff00
	225,550=0000ff 799,550=ffff00 500,410=ffffff)
KIOSK_FIELD=(395 380 637 440)
# rootfs/kiosk/waiting.html: its background, top row included
KIOSK_WAITING=(row:0=202a44 5,5=202a44 600,700=202a44)
mkdir -p "$KIOSK_WWW" && cp "$(dirname "${BASH_SOURCE[0]}")/kiosk-page.html" "$KIOSK_WWW/index.html"
at_exit kiosk_serve_stop

kiosk_port() {
	KIOSK_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') ||
		return 1
	KIOSK_URL=http://10.0.2.2:$KIOSK_PORT/
}

kiosk_serve_start() {
	# python3's http.server, every answer with Cache-Control: no-store: the page the scenario serves changes (the
	# hostile page), and the browser's profile persists across restarts here
	python3 -c 'import functools, http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), functools.partial(H, directory=sys.argv[1])).serve_forever()' \
		"$KIOSK_WWW" "$KIOSK_PORT" >"$VM_WORK/http.log" 2>&1 &
	KIOSK_SERVE_PID=$!
	local i
	for i in $(seq 50); do
		curl -fs -o /dev/null "http://127.0.0.1:$KIOSK_PORT/" && return 0
		sleep 0.2
	done
	vm_note "the test's web server on 127.0.0.1:$KIOSK_PORT does not answer: $(cat "$VM_WORK/http.log")"
	return 1
}

kiosk_serve_stop() {
	[ -n "$KIOSK_SERVE_PID" ] || return 0
	kill "$KIOSK_SERVE_PID" 2>/dev/null
	wait "$KIOSK_SERVE_PID" 2>/dev/null
	KIOSK_SERVE_PID=''
}

# kiosk_only_page NAME: a screenshot NAME in which every pixel is one of the test page's colours (no cursor, no
# browser UI), within SCREEN_TOL
kiosk_only_page() {
	local n
	screen_shot "$1" || return 1
	n=$(screen_foreign "$SCREEN_LAST" ff00ff ff0000 00ff00 0000ff ffff00 ffffff) || return 1
	[ "$n" -eq 0 ] && return 0
	vm_note "screen $1: $n pixels are none of the page's colours"
	return 1
}

# kiosk_audio_args WAV: qemu arguments for an HDA sound card whose output qemu writes to WAV (16-bit PCM)
kiosk_audio_args() { printf '%s\n' -audiodev "wav,id=snd0,path=$1" -device intel-hda -device hda-output,audiodev=snd0; }
# kiosk_audio_peak WAV: prints the loudest sample's level (0 to 32768) of what the guest has played so far
kiosk_audio_peak() {
	python3 -c 'import sys, array
d = open(sys.argv[1], "rb").read()[44:]
a = array.array("h", d[:len(d) // 2 * 2])
print(max((abs(x) for x in a), default=0))' "$1"
}
# kiosk_audio_loud WAV LIMIT: within LIMIT seconds a sample of WAV reaches a tenth of full scale (a tone played)
kiosk_audio_loud() {
	local i
	for i in $(seq "$2"); do
		[ "$(kiosk_audio_peak "$1")" -ge 3277 ] && return 0
		sleep 1
	done
	return 1
}

# The hostile page (lib/kiosk-hostile.html): its two colours, and the centres of its ten tiles (each one escape)
KIOSK_HOSTILE_COLOURS=(00ffff 008080)
KIOSK_HOSTILE=(row:0=00ffff 5,5=00ffff 125,225=008080 885,525=008080 1000,700=00ffff)
kiosk_tile() { printf '%d %d\n' $((125 + 190 * ($1 % 5))) $((225 + 300 * ($1 / 5))); }
# kiosk_serve_page FILE: the test's server answers / (and /hostile.html) with FILE from lib/ from now on
kiosk_serve_page() {
	cp "$(dirname "${BASH_SOURCE[0]}")/$1" "$KIOSK_WWW/index.html" &&
		cp "$(dirname "${BASH_SOURCE[0]}")/kiosk-hostile.html" "$KIOSK_WWW/hostile.html"
}
# kiosk_only_hostile NAME: a screenshot NAME that shows the hostile page and nothing else (no window, tab strip,
# address bar, menu, dialog, error page or black screen: any of those has other colours)
kiosk_only_hostile() {
	local n
	screen_shot "$1" || return 1
	n=$(screen_foreign "$SCREEN_LAST" "${KIOSK_HOSTILE_COLOURS[@]}") || return 1
	[ "$n" -eq 0 ] && return 0
	vm_note "screen $1: $n pixels are none of the hostile page's colours"
	return 1
}

# kiosk_field_empty PPM / kiosk_field_typed PPM: no dark pixel in the field / typed text there (dozens of them)
kiosk_field_empty() { [ "$(screen_dark "$1" "${KIOSK_FIELD[@]}")" -eq 0 ]; }
kiosk_field_typed() { [ "$(screen_dark "$1" "${KIOSK_FIELD[@]}")" -ge 50 ]; }

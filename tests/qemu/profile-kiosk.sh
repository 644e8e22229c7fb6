#!/usr/bin/env bash
# summary: the browser kiosk (./build.sh --profile kiosk) in one qemu, checked on screenshots (QMP screendump, PNGs in out/tests/): the test's web server is down at boot and the kiosk's waiting page is on screen, then the page once the server comes up (the seconds printed), full screen (its colours at their places, its own colour on the top rows: no browser chrome); the page's tone reaches the sound card; kill -9 of the browser brings the page back in the same cage; untouched, the kiosk is never reset; a typed file:///etc/passwd and Ctrl+Alt+F2 change nothing on screen; no mouse cursor is drawn; a value typed into the page's field and a file in the browser profile are gone after kiosk.idle=; a server outage puts the waiting page back, then the page; the menus keep nothing (live.persist=off); with kiosk.persist=yes and a store a reboot in the same qemu keeps the data directory and only it; kiosk.cursor=yes shows the cursor
# test-timeout: 2700 (the profile builds first when out/ lacks them, 5-11 min; then a browser under TCG: a boot, the page three times, a reboot, the attack: 59 keys and 14 mouse and page escapes, each with a screenshot)
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
VM_TIMEOUT=${VM_TIMEOUT:-2500}
# a guest starting a browser under TCG on a busy 2-core host answers slowly: longer waits for the login and commands
PROFILE_LOGIN_WAIT=${PROFILE_LOGIN_WAIT:-300} VM_QUIET_WAIT=${VM_QUIET_WAIT:-300} VM_WAIT_TIMEOUT=${VM_WAIT_TIMEOUT:-300}
# shellcheck source=tests/qemu/lib/kiosk.bash
. "$(dirname "$0")/lib/kiosk.bash"
VM_MEM=${PROFILE_VM_MEM:-2048}
# One virtual CPU (vm.bash's VM_SMP default, which this file's own default of 2 never overrode: it came after
# vm.bash; one TCG thread, one host CPU: CI's 2 CPUs run two scenarios); qemu's translated-code cache at its
# largest (2 GiB) and the guest's
# address-space randomisation off (norandmaps on its command line, below): qemu keeps translations by address,
# so a browser started again at the same addresses reuses them, where the default 1 GiB cache filled before the
# first page and every restart translated 200 MB of chromium again (a restart after kill -9: 34-42 s, now 15 s,
# measured on the quiet build host; that is what the machine code of a PC does without emulation).
VM_TCG_TB_SIZE=${VM_TCG_TB_SIZE:-2048}
# how long the first screen may take to show what is expected under TCG (a loaded 2-core host included)
KIOSK_LIMIT=${KIOSK_LIMIT:-600}
# how long the page may take to come back after the server comes up, a kill -9 or an idle reset before the check
# fails (issue 15 asks for 20 s after the server comes up on a PC; under TCG, on a loaded 2-core host, it can take
# longer: the seconds are printed as figures, never asserted; bench/ owns speed)
KIOSK_BACK=${KIOSK_BACK:-120} KIOSK_RESTART=${KIOSK_RESTART:-300}
IDLE=30

iso=$OUT/liveunion-kiosk.iso
token="liveunion-kiosk-$$-$RANDOM"
cage_pid='systemctl show -p MainPID --value liveunion-kiosk.service'
work=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-kiosk.XXXXXX")
at_exit "rm -rf '$work'"

t0=$(now_ms)
require profile-built profile_iso kiosk
vm_note "profile build (or cache check): $((($(now_ms) - t0) / 1000)) s"
# What the menus boot: nothing persists (live.persist=off, no live.persist.paths=) unless kiosk.persist=yes.
require iso-cmdline-read iso_boot_files "$iso"
append=$(iso_cmdline "$iso")
fact menus-persist-nothing live.persist=off grep -o 'live\.persist[^ ]*' "$VM_ISO_DIR/cmdline"
# ... and stack the image's own layers only: a layer saved in a store on the stick is never stacked
fact menus-own-layers-only live.layers=10-base,20-kiosk grep -o 'live\.layers=[^ ]*' "$VM_ISO_DIR/cmdline"
# This run: kiosk.persist=yes as its menus would have it (live.persist.paths= with the data directory) and a store
# named by label, so that the reboot below shows what is kept; the page and the idle time for the test.
append="${append/live.persist=off/live.persist=LABEL=kioskdata live.persist.paths=/var/lib/kiosk} kiosk.persist=yes"
require free-port kiosk_port
append+=" kiosk.url=$KIOSK_URL kiosk.idle=$IDLE norandmaps"
require store-made mkfs.ext4 -q -F -L kioskdata "$work/store.img" 64M
mapfile -t qmp < <(screen_start_args)
# an HDA sound card whose output qemu records: the test page plays a tone
mapfile -t audio < <(kiosk_audio_args "$work/audio.wav")
# -cpu max: the browser wants the x86-64 extensions of a PC of this decade (SSE4, AVX), which qemu64 lacks.
# -watchdog-action none: the i6300esb is armed by systemd as on a PC, but a guest starved by TCG on a busy host
# missed its 30 s once and qemu reset it in the middle of the run (seen: SeaBIOS on the screen, no kernel message).
require qemu-starts vm_start profile-kiosk cd-bios "$iso" --cmdline "$append" -cpu max \
	-nic user,model=virtio-net-pci -device i6300esb -watchdog-action none -device qemu-xhci -device usb-tablet \
	-drive "file=$work/store.img,if=virtio,format=raw" "${qmp[@]}" "${audio[@]}"
require login-on-serial-console profile_login
vm_note "qemu start to root shell: $(($(now_ms) - VM_T0)) ms"

# Server down at boot: the kiosk's own page, never the browser's error page.
check waiting-page-while-server-down screen_wait kiosk-waiting "$KIOSK_LIMIT" "${KIOSK_WAITING[@]}"
vm_note "qemu start -> waiting page: $((($(now_ms) - VM_T0) / 1000)) s"
# nothing has played a sound yet (the waiting page has none)
check silent-before-page test "$(kiosk_audio_peak "$work/audio.wav")" -lt 100
require server-up kiosk_serve_start
# (when the check fails, a longer wait, so that the checks after it look at the page, not at what came before)
if check page-after-server-up screen_wait kiosk-page "$KIOSK_BACK" "${KIOSK_PAGE[@]}"; then
	vm_note "server up -> page on screen: $SCREEN_WAITED s (issue 15 asks for 20 s on a PC; a figure, not a check)"
else
	screen_wait kiosk-page "$KIOSK_LIMIT" "${KIOSK_PAGE[@]}" || true
fi
check page-field-empty kiosk_field_empty "$SCREEN_LAST"
# Audio plays: the page's tone reached the sound card (chromium through ALSA; no sound server in the image).
check page-tone-played kiosk_audio_loud "$work/audio.wav" 20
vm_note "loudest sample so far: $(kiosk_audio_peak "$work/audio.wav") of 32768"

# The system around it, while the page is up (one command, one fact a line).
check kiosk-system vm_fact "systemctl --failed --no-legend --plain | wc -l; /usr/lib/liveunion/kiosk/kiosk get url; \
p=\$($cage_pid); stat -c %U /proc/\$p; tr '\\0' ' ' </proc/\$p/cmdline | cut -d' ' -f1; \
systemctl is-enabled getty@tty1.service; systemctl is-active getty@tty1.service autovt@tty1.service; \
systemctl show -p RuntimeWatchdogUSec --value; cat /proc/sys/kernel/sysrq; \
journalctl -b -o cat | grep -qi \"hardware watchdog 'i6300ESB\" && echo i6300esb-armed; \
systemctl is-active liveunion-kiosk-idle.service; pgrep -x kiosk-idle >/dev/null && echo kiosk-idle; pgrep -u kiosk -x busybox >/dev/null && echo httpd; true" \
	"0
$KIOSK_URL
kiosk
cage
masked
inactive
inactive
30s
0
i6300esb-armed
active
kiosk-idle
httpd"

# What the browser takes (printed for docs/kiosk.md; not a check): used memory, the browser's resident set.
vm_run "free -m | awk '/^Mem:/ { print \"used MiB \" \$3 }'; ps -u kiosk -o rss=,comm= | awk '/chrom|firefox/ { k += \$1 } END { print \"browser RSS MiB \" int(k / 1024) }'" &&
	vm_note "page on screen: $(tr '\n' ' ' <<<"$VM_OUT")"

# Crash: the browser killed, the page back (a new browser in the same cage).
vm_run "$cage_pid"
cage1=$VM_OUT
browser='cat /run/liveunion-kiosk/browser'
vm_run "$browser"
browser1=$VM_OUT
check browser-killed vm_run "kill -KILL $browser1"
t1=$(now_ms)
check browser-restarted vm_run "for i in \$(seq 60); do p=\$($browser); [ \"\$p\" != $browser1 ] && kill -0 \$p && break; sleep 1; done; [ \"\$p\" != $browser1 ] && kill -0 \$p" 100
check page-back-after-kill screen_wait kiosk-page-after-kill "$KIOSK_RESTART" "${KIOSK_PAGE[@]}"
vm_note "kill -9 -> page on screen: $((($(now_ms) - t1) / 1000)) s (issue 15 asks for 20 s)"
check same-cage-after-kill vm_fact "$cage_pid" "$cage1"

# Nobody has touched the kiosk yet (longer than kiosk.idle= since the page came up): no idle reset.
check untouched-kiosk-not-reset vm_fact "journalctl -b -u liveunion-kiosk-idle -o cat | grep -c 'resetting the session' || true" 0

# No way out: a typed URL and a VT switch change nothing on screen (the field has no focus: keys go to the page).
# From here on the kiosk has been touched: the idle reset comes kiosk.idle= after the last key below.
check typed-file-url screen_keys ctrl-l
check typed-file-url-text screen_type file:///etc/passwd
check typed-file-url-enter screen_keys ret
check ctrl-alt-f2 screen_keys ctrl-alt-f2
sleep 10
check file-url-and-ctrl-alt-f2-left-page-unchanged screen_wait kiosk-after-file-url-ctrl-alt-f2 1 "${KIOSK_PAGE[@]}"
check file-url-typed-nowhere kiosk_field_empty "$SCREEN_LAST"
check still-on-vt1 vm_fact 'cat /sys/class/tty/tty0/active' tty1
# The mouse moved over the page: no cursor drawn (kiosk.cursor= is not yes): only the page's own colours on screen.
check mouse-moved screen_mouse 60 40
sleep 3
check no-cursor-on-screen kiosk_only_page kiosk-mouse-moved

# Idle reset: a value typed into the field (Tab gives it the focus), gone after kiosk.idle= without input.
check value-typed screen_keys tab
check value-typed-text screen_type kiosk
t1=$(now_ms)
sleep 3
check value-on-screen screen_wait kiosk-typed 60 "${KIOSK_PAGE[@]:0:9}"
check value-on-screen-in-field kiosk_field_typed "$SCREEN_LAST"
check browser-profile-exists vm_run "test -f /var/lib/kiosk/browser/Local\\ State && echo $token >/var/lib/kiosk/browser/$token-session"
check idle-reset-done vm_run "for i in \$(seq 150); do journalctl -b -u liveunion-kiosk-idle -o cat | grep -q 'resetting the session' && break; sleep 2; done; journalctl -b -u liveunion-kiosk-idle -o cat | grep 'resetting the session'" 400
vm_note "input -> idle reset: $((($(now_ms) - t1) / 1000)) s (kiosk.idle=$IDLE)"
check page-after-idle-reset screen_wait kiosk-page-after-idle "$KIOSK_RESTART" "${KIOSK_PAGE[@]}"
check value-gone-after-idle-reset kiosk_field_empty "$SCREEN_LAST"
check fresh-profile-after-idle-reset vm_run "test ! -e /var/lib/kiosk/browser/$token-session && journalctl -b -o cat | grep 'idle reset: the browser starts with a fresh profile'"

# An outage after the page was up: the outage watch puts the waiting page back (no browser error page), and the
# page comes back once the server answers again.
check server-stopped kiosk_serve_stop
t1=$(now_ms)
check waiting-page-during-outage screen_wait kiosk-outage-waiting "$KIOSK_RESTART" "${KIOSK_WAITING[@]}"
vm_note "server down -> waiting page: $((($(now_ms) - t1) / 1000)) s (3 failed checks 10 s apart, then a browser start)"
check outage-named-in-journal vm_run "journalctl -b -o cat | grep 'has not answered 3 times in a row'"
check server-up-again kiosk_serve_start
if check page-after-server-back screen_wait kiosk-page-after-outage "$KIOSK_BACK" "${KIOSK_PAGE[@]}"; then
	vm_note "server back -> page on screen: $SCREEN_WAITED s (issue 15 asks for 20 s on a PC; a figure, not a check)"
else
	screen_wait kiosk-page-after-outage "$KIOSK_LIMIT" "${KIOSK_PAGE[@]}" || true
fi

# Reboot in the same qemu with kiosk.persist=yes: the data directory (browser profile included) is kept, nothing else.
check token-written vm_run "echo $token >/var/lib/kiosk/$token && echo $token >/var/lib/kiosk/browser/$token && echo $token >/etc/$token && sync"
require reboot-in-same-vm profile_reboot
check data-dir-kept vm_fact "cat /var/lib/kiosk/$token /var/lib/kiosk/browser/$token; stat -c %U /var/lib/kiosk" "$token"$'\n'"$token"$'\n'kiosk
check rest-not-kept vm_run "test ! -e /etc/$token"
check page-after-reboot screen_wait kiosk-page-after-reboot "$KIOSK_LIMIT" "${KIOSK_PAGE[@]}"

# ---- The attack: a visitor with a keyboard and a mouse, and a page that tries every way out ----------------------
# The lock's parts in the guest are those of this checkout: the policy file byte for byte, the allowlist made from
# kiosk.url=, the input filter running and the real input devices kept from cage (another seat).
check policy-is-the-repository-s vm_fact 'sha256sum </etc/chromium/policies/managed/liveunion-kiosk.json' \
	"$(sha256sum <"$TOP/rootfs/kiosk/chromium-policy.json")"
check allowlist-made vm_fact "tr -d ' \n' </etc/chromium/policies/managed/liveunion-kiosk-allow.json" \
	"{\"URLAllowlist\":[\"http://127.0.0.1:47800/waiting.html\",\"${KIOSK_URL%/}\"]}"
check input-filter-running vm_fact 'systemctl is-active liveunion-kiosk-keys; grep -lx liveunion-kiosk-keys/uinput /sys/class/input/input*/phys | wc -l' \
	"active"$'\n'1
check keyboard-on-no-seat vm_run "for e in /dev/input/event*; do udevadm info -q property \$e | grep -q 'ID_INPUT_KEYBOARD=1' && udevadm info -q property \$e | grep '^ID_SEAT='; done | sort -u"
check keyboard-seat-is-not-seat0 out_is ID_SEAT=seat-liveunion-raw
require hostile-page-served kiosk_serve_page kiosk-hostile.html
require hostile-browser-found vm_run "$browser"
check hostile-browser-ended vm_run "kill -KILL $VM_OUT"
check hostile-page-up screen_wait kiosk-hostile "$KIOSK_RESTART" "${KIOSK_HOSTILE[@]}"
check hostile-page-only-page kiosk_only_hostile kiosk-hostile-start
# The idle reset is stopped for the attack: it rightly ends the browser kiosk.idle= (30 s here) after the last
# input that reached the page (a typing key, a click), which the matrix below sends now and then; its restart under
# TCG (a black screen for about 30 s, a new browser) is what CI saw as a failure of the lock. The reset has its own
# checks above. Every input the filter drops never reaches kiosk-idle either (the real devices are grabbed).
check idle-reset-paused vm_run 'systemctl stop liveunion-kiosk-idle.service && ! systemctl is-active -q liveunion-kiosk-idle.service'
require browser-noted vm_run "$browser"
browser_now=$VM_OUT
# 47 key combinations and F1-F12 a visitor might try (no Tab: it is a key of typing and would start the idle reset) (QMP send-key on the VM's keyboard); after each, only the page on screen
combos=(ctrl-n ctrl-t ctrl-w ctrl-shift-n ctrl-shift-t ctrl-shift-w ctrl-shift-i ctrl-shift-j ctrl-shift-c ctrl-l
	ctrl-o ctrl-p ctrl-s ctrl-h ctrl-j ctrl-u ctrl-d ctrl-f ctrl-g ctrl-shift-delete ctrl-shift-esc shift-esc
	shift-f10 alt-f4 alt-f alt-e alt-left alt-home alt-tab alt-spc ctrl-tab ctrl-1 ctrl-9 ctrl-equal ctrl-minus
	ctrl-q ctrl-shift-q ctrl-alt-f1 ctrl-alt-f2 ctrl-alt-delete ctrl-alt-backspace meta_l meta_l-d meta_l-l
	meta_l-e menu esc)
fkeys=(f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12)
n=0
for c in "${combos[@]}" "${fkeys[@]}"; do
	n=$((n + 1))
	check "key-$c" screen_keys "$c"
	sleep 1.5
	check "after-key-$c-only-the-page" kiosk_only_hostile "kiosk-attack-key-$n-$c"
done
vm_note "keys tried: $n"
# why the browser ended, if it did (the session, the outage watch, the idle reset say so in the journal)
vm_run "journalctl -b -o short-monotonic | grep -E 'liveunion-kiosk: |kiosk-keys|chromium.*(crash|Segmentation)|Out of memory' | tail -n 8" &&
	vm_note "kiosk's journal: $VM_OUT"
check keys-no-new-browser vm_fact "$browser" "$browser_now"
check keys-still-on-vt1 vm_fact 'cat /sys/class/tty/tty0/active' tty1
# The mouse: a right click, a middle click and a long press on a link, a link dragged away; then each tile's
# page-side escape clicked: window.open, target=_blank, a download, the file chooser, alert/confirm/prompt,
# print, and navigations to file://, chrome://, view-source: and another site. After each: only the page.
read -r lx ly < <(kiosk_tile 1)
check right-click screen_click 500 700 right
check right-click-on-link screen_click "$lx" "$ly" right
check middle-click-on-link screen_click "$lx" "$ly" middle
check back-button screen_click 500 700 side
sleep 3
check mouse-buttons-only-the-page kiosk_only_hostile kiosk-attack-mouse-buttons
check link-dragged screen_drag "$lx" "$ly" 600 700
sleep 3
check link-dragged-only-the-page kiosk_only_hostile kiosk-attack-drag
check long-press-on-link screen_click "$lx" "$ly" left 2
sleep 5
check long-press-only-the-page kiosk_only_hostile kiosk-attack-long-press
for t in 0 1 2 3 4 5 6 7 8 9; do
	read -r tx ty < <(kiosk_tile "$t")
	check "tile-$t-clicked" screen_click "$tx" "$ty"
	sleep 5
	check "after-tile-$t-only-the-page" screen_wait "kiosk-attack-tile-$t" 20 "${KIOSK_HOSTILE[@]}"
	check "after-tile-$t-nothing-else" kiosk_only_hostile "kiosk-attack-tile-$t"
done
check page-escapes-no-new-browser vm_fact "$browser" "$browser_now"
check idle-reset-resumed vm_run 'systemctl start liveunion-kiosk-idle.service && systemctl is-active liveunion-kiosk-idle.service'
kiosk_serve_page kiosk-page.html

# kiosk.cursor=yes (here in the settings file, read at the kiosk's start): the mouse moved, its cursor on screen.
check cursor-yes-set vm_run 'echo kiosk.cursor=yes >>/etc/liveunion/kiosk.conf && systemctl restart liveunion-kiosk'
check page-after-cursor-restart screen_wait kiosk-page-cursor-yes "$KIOSK_RESTART" "${KIOSK_PAGE[@]}"
check mouse-moved-cursor-yes screen_mouse 60 40
sleep 3
check cursor-on-screen-with-cursor-yes fails kiosk_only_page kiosk-mouse-moved-cursor-yes
vm_stop || true
finish

#!/usr/bin/env bash
# summary: the browser kiosk (./build.sh --profile kiosk) in one qemu, checked on screenshots (QMP screendump, PNGs in out/tests/): the test's web server is down at boot and the kiosk's waiting page is on screen, then the page once the server is up, full screen (its colours at their places, its own colour on the top rows: no browser chrome); a typed file:///etc/passwd and Ctrl+Alt+F2 change nothing on screen; kill -9 of the browser brings the page back; a value typed into the page's field is gone after kiosk.idle=; the menus keep nothing (live.persist=off); with kiosk.persist=yes and a store a reboot in the same qemu keeps the data directory and only it
# test-timeout: 1500 (a browser under TCG: a boot, the page three times, a reboot)
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
VM_TIMEOUT=${VM_TIMEOUT:-1400}
# a guest starting a browser under TCG on a busy 2-core host answers slowly: longer waits for the login and commands
PROFILE_LOGIN_WAIT=${PROFILE_LOGIN_WAIT:-300} VM_QUIET_WAIT=${VM_QUIET_WAIT:-300} VM_WAIT_TIMEOUT=${VM_WAIT_TIMEOUT:-300}
# shellcheck source=tests/qemu/lib/kiosk.bash
. "$(dirname "$0")/lib/kiosk.bash"
VM_MEM=${PROFILE_VM_MEM:-2048}
# how long the first screen may take to show what is expected under TCG (a loaded 2-core host included)
KIOSK_LIMIT=${KIOSK_LIMIT:-600}
# how long the page may take to come back after the server comes up, a kill -9 or an idle reset (issue 15: 20 s
# after the server comes up; a browser restart under TCG takes longer, the seconds are printed)
KIOSK_BACK=${KIOSK_BACK:-20} KIOSK_RESTART=${KIOSK_RESTART:-300}
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
# This run: kiosk.persist=yes as its menus would have it (live.persist.paths= with the data directory) and a store
# named by label, so that the reboot below shows what is kept; the page and the idle time for the test.
append="${append/live.persist=off/live.persist=LABEL=kioskdata live.persist.paths=/var/lib/kiosk} kiosk.persist=yes"
require free-port kiosk_port
append+=" kiosk.url=$KIOSK_URL kiosk.idle=$IDLE"
require store-made mkfs.ext4 -q -F -L kioskdata "$work/store.img" 64M
mapfile -t qmp < <(screen_start_args)
# -cpu max: the browser wants the x86-64 extensions of a PC of this decade (SSE4, AVX), which qemu64 lacks.
# -watchdog-action none: the i6300esb is armed by systemd as on a PC, but a guest starved by TCG on a busy host
# missed its 30 s once and qemu reset it in the middle of the run (seen: SeaBIOS on the screen, no kernel message).
require qemu-starts vm_start profile-kiosk cd-bios "$iso" --cmdline "$append" -cpu max \
	-nic user,model=virtio-net-pci -device i6300esb -watchdog-action none \
	-drive "file=$work/store.img,if=virtio,format=raw" "${qmp[@]}"
require login-on-serial-console profile_login
vm_note "qemu start to root shell: $(($(now_ms) - VM_T0)) ms"

# Server down at boot: the kiosk's own page, never the browser's error page.
check waiting-page-while-server-down screen_wait kiosk-waiting "$KIOSK_LIMIT" "${KIOSK_WAITING[@]}"
vm_note "qemu start -> waiting page: $((($(now_ms) - VM_T0) / 1000)) s"
require server-up kiosk_serve_start
check page-within-20s-of-server-up screen_wait kiosk-page "$KIOSK_BACK" "${KIOSK_PAGE[@]}" ||
	screen_wait kiosk-page "$KIOSK_LIMIT" "${KIOSK_PAGE[@]}"
vm_note "server up -> page on screen: $SCREEN_WAITED s"
check page-field-empty kiosk_field_empty "$SCREEN_LAST"

# The system around it, while the page is up (one command, one fact a line).
check kiosk-system vm_fact "systemctl --failed --no-legend --plain | wc -l; /usr/lib/liveunion/kiosk/kiosk get url; \
p=\$($cage_pid); stat -c %U /proc/\$p; tr '\\0' ' ' </proc/\$p/cmdline | cut -d' ' -f1; \
systemctl is-enabled getty@tty1.service; systemctl is-active getty@tty1.service autovt@tty1.service; \
systemctl show -p RuntimeWatchdogUSec --value; cat /proc/sys/kernel/sysrq; \
journalctl -b -o cat | grep -qi \"hardware watchdog 'i6300ESB\" && echo i6300esb-armed; \
pgrep -u kiosk -x swayidle >/dev/null && echo swayidle; pgrep -u kiosk -x busybox >/dev/null && echo httpd; true" \
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
swayidle
httpd"

# What the browser takes (printed for docs/kiosk.md; not a check): used memory, the browser's resident set.
vm_run "free -m | awk '/^Mem:/ { print \"used MiB \" \$3 }'; ps -u kiosk -o rss=,comm= | awk '/chrom|firefox/ { k += \$1 } END { print \"browser RSS MiB \" int(k / 1024) }'" &&
	vm_note "page on screen: $(tr '\n' ' ' <<<"$VM_OUT")"

# No way out: a typed URL and a VT switch change nothing on screen (the field has no focus: keys go to the page).
check typed-file-url screen_keys ctrl-l
check typed-file-url-text screen_type file:///etc/passwd
check typed-file-url-enter screen_keys ret
check ctrl-alt-f2 screen_keys ctrl-alt-f2
sleep 10
check file-url-and-ctrl-alt-f2-left-page-unchanged screen_wait kiosk-after-file-url-ctrl-alt-f2 1 "${KIOSK_PAGE[@]}"
check file-url-typed-nowhere kiosk_field_empty "$SCREEN_LAST"
check still-on-vt1 vm_fact 'cat /sys/class/tty/tty0/active' tty1

# Crash: the browser killed, the page back.
vm_run "$cage_pid"
cage1=$VM_OUT
check browser-killed vm_run 'kill -KILL $(pgrep -o -u kiosk -x chromium)'
t1=$(now_ms)
check kiosk-restarted vm_run "for i in \$(seq 120); do p=\$($cage_pid); [ \"\$p\" != 0 ] && [ \"\$p\" != $cage1 ] && break; sleep 1; done; [ \"\$p\" != 0 ] && [ \"\$p\" != $cage1 ]" 200
check page-back-after-kill screen_wait kiosk-page-after-kill "$KIOSK_RESTART" "${KIOSK_PAGE[@]}"
vm_note "kill -9 -> page on screen: $((($(now_ms) - t1) / 1000)) s (issue 15 asks for 20 s)"

# Idle reset: a value typed into the field (Tab gives it the focus), gone after kiosk.idle= without input.
check value-typed screen_keys tab
check value-typed-text screen_type kiosk
t1=$(now_ms)
sleep 3
check value-on-screen screen_wait kiosk-typed 60 "${KIOSK_PAGE[@]:0:9}"
check value-on-screen-in-field kiosk_field_typed "$SCREEN_LAST"
check browser-profile-exists vm_run 'test -f /var/lib/kiosk/browser/Local\ State'
check idle-reset-done vm_run "for i in \$(seq 150); do journalctl -b -u liveunion-kiosk -o cat | grep -q 'resetting the session' && break; sleep 2; done; journalctl -b -u liveunion-kiosk -o cat | grep 'resetting the session'" 400
vm_note "input -> idle reset: $((($(now_ms) - t1) / 1000)) s (kiosk.idle=$IDLE)"
check page-after-idle-reset screen_wait kiosk-page-after-idle "$KIOSK_RESTART" "${KIOSK_PAGE[@]}"
check value-gone-after-idle-reset kiosk_field_empty "$SCREEN_LAST"
check fresh-profile-after-idle-reset vm_run 'journalctl -b -u liveunion-kiosk -o cat | grep "idle reset: the browser starts with a fresh profile"'

# Reboot in the same qemu with kiosk.persist=yes: the data directory (browser profile included) is kept, nothing else.
check token-written vm_run "echo $token >/var/lib/kiosk/$token && echo $token >/var/lib/kiosk/browser/$token && echo $token >/etc/$token && sync"
require reboot-in-same-vm profile_reboot
check data-dir-kept vm_fact "cat /var/lib/kiosk/$token /var/lib/kiosk/browser/$token; stat -c %U /var/lib/kiosk" "$token"$'\n'"$token"$'\n'kiosk
check rest-not-kept vm_run "test ! -e /etc/$token"
check page-after-reboot screen_wait kiosk-page-after-reboot "$KIOSK_LIMIT" "${KIOSK_PAGE[@]}"
vm_stop || true
finish

#!/usr/bin/env bash
# summary: the browser kiosk (./build.sh --profile kiosk) on one BIOS boot, checked on screenshots (QMP screendump): the test's web server is down at boot and the kiosk's waiting page is on screen, then the page once the server is up, full screen (its colours at their places, its own colour on the top rows: no browser chrome); a typed file:///etc/passwd and Ctrl+Alt+F2 change nothing on screen; kill -9 of the browser brings the page back; a value typed into the page's field is gone after kiosk.idle=; the serial console keeps its login; nothing of the session survives a reboot
# test-timeout: 2400 (a browser under TCG: boot, page, a restart after kill -9, one after kiosk.idle=, a reboot)
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
VM_TIMEOUT=${VM_TIMEOUT:-2300}
# a guest starting a browser under TCG on a busy 2-core host answers slowly: longer waits for the login and commands
PROFILE_LOGIN_WAIT=${PROFILE_LOGIN_WAIT:-600} VM_QUIET_WAIT=${VM_QUIET_WAIT:-300} VM_WAIT_TIMEOUT=${VM_WAIT_TIMEOUT:-600}
# shellcheck source=tests/qemu/lib/kiosk.bash
. "$(dirname "$0")/lib/kiosk.bash"
VM_MEM=${PROFILE_VM_MEM:-2048}
# how long a screen may take to show what is expected under TCG (a loaded 2-core host included); the times taken
# are printed, bench/kiosk measures them
KIOSK_LIMIT=${KIOSK_LIMIT:-600}
IDLE=60

iso=$OUT/liveunion-kiosk.iso
token="liveunion-kiosk-$$-$RANDOM"
cage_pid='systemctl show -p MainPID --value liveunion-kiosk.service'

t0=$(now_ms)
require profile-built profile_iso kiosk
vm_note "profile build (or cache check): $((($(now_ms) - t0) / 1000)) s"
require free-port kiosk_port
mapfile -t qmp < <(screen_start_args)
# -cpu max: the browser wants the x86-64 extensions of a PC of this decade (SSE4, AVX), which qemu64 lacks.
# -watchdog-action none: the i6300esb is armed by systemd as on a PC, but a guest starved by TCG on a busy host
# missed its 30 s once and qemu reset it in the middle of the run (seen: SeaBIOS on the screen, no kernel message).
require qemu-starts vm_start profile-kiosk cd-bios "$iso" --keys "kiosk.url=$KIOSK_URL kiosk.idle=$IDLE" -cpu max \
	-nic user,model=virtio-net-pci -device i6300esb -watchdog-action none "${qmp[@]}"
require login-on-serial-console profile_login
vm_note "qemu start to root shell: $(($(now_ms) - VM_T0)) ms"
check systemd-running profile_running
check no-failed-units vm_none 'systemctl --failed --no-legend --plain'
check kiosk-url-from-cmdline vm_fact '/usr/lib/liveunion/kiosk/kiosk get url' "$KIOSK_URL"
check cage-runs-as-kiosk-on-tty1 vm_fact "p=\$($cage_pid); stat -c %U /proc/\$p; tr '\\0' ' ' </proc/\$p/cmdline | cut -d' ' -f1" $'kiosk\ncage'
check no-login-prompt-on-tty1 vm_fact 'systemctl is-enabled getty@tty1.service; systemctl is-active getty@tty1.service autovt@tty1.service; true' $'masked\ninactive\ninactive'
check watchdog-runtime-30s vm_fact 'systemctl show -p RuntimeWatchdogUSec --value' 30s
check watchdog-is-i6300esb vm_run "journalctl -b -o cat | grep -i \"hardware watchdog 'i6300ESB\""
check sysrq-off vm_fact 'cat /proc/sys/kernel/sysrq' 0

# Server down at boot: the kiosk's own page, never the browser's error page.
check waiting-page-while-server-down screen_wait kiosk-waiting "$KIOSK_LIMIT" "${KIOSK_WAITING[@]}"
require server-up kiosk_serve_start
check page-after-server-up screen_wait kiosk-page "$KIOSK_LIMIT" "${KIOSK_PAGE[@]}"
vm_note "server up -> page on screen: $SCREEN_WAITED s (issue 15 asks for 20 s)"
check page-field-empty kiosk_field_empty "$SCREEN_LAST"

# No way out: a typed URL and a VT switch change nothing on screen (the field has no focus: keys go to the page).
check typed-file-url screen_keys ctrl-l
check typed-file-url-text screen_type file:///etc/passwd
check typed-file-url-enter screen_keys ret
sleep 15
check file-url-left-page-unchanged screen_wait kiosk-after-file-url 1 "${KIOSK_PAGE[@]}"
check file-url-typed-nowhere kiosk_field_empty "$SCREEN_LAST"
check ctrl-alt-f2 screen_keys ctrl-alt-f2
sleep 10
check ctrl-alt-f2-left-page-unchanged screen_wait kiosk-after-ctrl-alt-f2 1 "${KIOSK_PAGE[@]}"
check still-on-vt1 vm_fact 'cat /sys/class/tty/tty0/active' tty1

# Crash: the browser killed, the page back.
vm_run "$cage_pid"
cage1=$VM_OUT
check browser-killed vm_run 'kill -KILL $(pgrep -o -u kiosk -x chromium)'
check kiosk-restarted vm_run "for i in \$(seq 120); do p=\$($cage_pid); [ \"\$p\" != 0 ] && [ \"\$p\" != $cage1 ] && break; sleep 1; done; [ \"\$p\" != 0 ] && [ \"\$p\" != $cage1 ]" 200
check page-back-after-kill screen_wait kiosk-page-after-kill "$KIOSK_LIMIT" "${KIOSK_PAGE[@]}"
vm_note "kill -9 -> page on screen: $SCREEN_WAITED s (issue 15 asks for 20 s)"

# Idle reset: a value typed into the field (Tab gives it the focus), gone after kiosk.idle=.
check field-focused screen_keys tab
check value-typed screen_type kiosk
sleep 5
check value-on-screen screen_wait kiosk-typed 60 "${KIOSK_PAGE[@]:0:9}"
check value-on-screen-in-field kiosk_field_typed "$SCREEN_LAST"
check idle-reset-done vm_run "for i in \$(seq 300); do journalctl -b -u liveunion-kiosk-idle -o cat | grep -q 'resetting the session' && break; sleep 2; done; journalctl -b -u liveunion-kiosk-idle -o cat | grep 'resetting the session'" 700
check page-after-idle-reset screen_wait kiosk-page-after-idle "$KIOSK_LIMIT" "${KIOSK_PAGE[@]}"
check value-gone-after-idle-reset kiosk_field_empty "$SCREEN_LAST"

# Nothing survives a reboot: the browser profile and the data directory start empty.
check profile-exists vm_run 'test -f /var/lib/kiosk/browser/Local\ State'
check token-written vm_run "echo $token >/var/lib/kiosk/browser/$token && echo $token >/var/lib/kiosk/$token && sync"
check persistence-off-on-cmdline vm_fact 'grep -o "live\.persist[^ ]*" /proc/cmdline' 'live.persist=off'
require reboot-in-same-vm profile_reboot
check systemd-running-after-reboot profile_running
check nothing-persisted vm_none "ls -1a /var/lib/kiosk /var/lib/kiosk/browser" "$token"
check kiosk-running-after-reboot vm_fact "p=\$($cage_pid); stat -c %U /proc/\$p" kiosk
vm_stop
finish

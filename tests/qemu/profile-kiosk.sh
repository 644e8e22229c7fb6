#!/usr/bin/env bash
# summary: the kiosk profile (./build.sh --profile kiosk) as an IDE CD, UEFI, with an i6300esb watchdog: the app runs on tty1 as its own user with no login prompt there, is restarted when killed, the watchdog is armed, persistence is off and nothing written survives a reboot
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
VM_TIMEOUT=${VM_TIMEOUT:-600}
# shellcheck source=tests/qemu/lib/profile.bash
. "$(dirname "$0")/lib/profile.bash"
VM_MEM=${PROFILE_VM_MEM:-1024}

iso=$OUT/liveunion-kiosk.iso
conf=$TOP/configs/profiles/kiosk.conf
app=$(sed -n 's/^kiosk\.command=//p' "$conf" | tail -n 1)
token="liveunion-kiosk-$$-$RANDOM"
main_pid='systemctl show -p MainPID --value liveunion-kiosk.service'

# app_is_running_as_kiosk: the service's main process runs the profile's command as the kiosk user on tty1.
# shellcheck disable=SC2317 # runs through check
app_is_running_as_kiosk() {
	vm_run "p=\$($main_pid); echo pid=\$p; stat -c user=%U /proc/\$p; tr '\\0' ' ' </proc/\$p/cmdline; echo; readlink /proc/\$p/fd/0" || return 1
	out_has '^user=kiosk$' && out_has "$app" && out_has '^/dev/tty1$' && ! out_has '^pid=0$'
}

t0=$(now_ms)
require profile-built profile_iso kiosk
vm_note "profile build (or cache check): $((($(now_ms) - t0) / 1000)) s"
require qemu-starts vm_start profile-kiosk cd-uefi "$iso" -device i6300esb
require login-on-serial-console profile_login
vm_note "qemu start to root shell: $(($(now_ms) - VM_T0)) ms"
check banner-names-base-profile banner_has "profile debian"
check systemd-running profile_running
check no-failed-units vm_none 'systemctl --failed --no-legend --plain'
check app-running-as-kiosk-user-on-tty1 app_is_running_as_kiosk
vm_run "$main_pid"
pid1=$VM_OUT
check no-login-prompt-on-tty1 vm_fact 'systemctl is-enabled getty@tty1.service; systemctl is-active getty@tty1.service autovt@tty1.service; true' $'masked\ninactive\ninactive'
check kiosk-user-is-a-system-user vm_run 'getent passwd kiosk | cut -d: -f3,6,7'
check kiosk-user-entry out_has '^[1-9][0-9]{2}:/var/lib/kiosk:/usr/sbin/nologin$'
check hardware-watchdog-armed vm_run 'journalctl -b -o cat | grep -i "watchdog"; systemctl show -p RuntimeWatchdogUSec --value'
check watchdog-is-i6300esb out_has "hardware watchdog 'i6300ESB"
check watchdog-runtime-30s out_has '^30s$'
check app-killed vm_run "kill -KILL $pid1"
check app-restarted vm_run "for i in \$(seq 30); do p=\$($main_pid); [ \"\$p\" != 0 ] && [ \"\$p\" != $pid1 ] && break; sleep 1; done; echo \$p; systemctl is-active liveunion-kiosk.service"
check app-restarted-new-pid-active out_has '^active$'
check app-runs-again-as-kiosk-user app_is_running_as_kiosk
check persistence-off-on-cmdline vm_fact 'grep -o "live\.persist[^ ]*" /proc/cmdline' 'live.persist=off'
check plan-says-persistence-off vm_run 'grep "^persist.result=" /run/live/plan'
check plan-persist-result-off out_has 'live\.persist=off'
vm_run "grep ' / ' /proc/mounts | tail -n 1"
check root-is-overlay out_has '^[^ ]+ / overlay '
check kiosk-layer-stacked vm_run "grep ' /run/live/layers/20-kiosk squashfs ro' /proc/mounts"
check medium-write-fails fails vm_run "echo x >/run/live/medium/$token"
check writes-work vm_fact "echo $token >/$token && echo $token >/var/lib/kiosk/$token && echo $token >/etc/$token && sync && cat /var/lib/kiosk/$token" "$token"
require reboot-in-same-vm profile_reboot
check systemd-running-after-reboot profile_running
check nothing-persisted vm_none 'ls -1a / /var/lib/kiosk /etc /run/live/upper/upper' "$token"
check app-running-after-reboot app_is_running_as_kiosk
check no-failed-units-after-reboot vm_none 'systemctl --failed --no-legend --plain'
vm_stop
finish

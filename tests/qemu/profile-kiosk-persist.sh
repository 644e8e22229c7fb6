#!/usr/bin/env bash
# summary: the kiosk with its data directory persistent (what kiosk.persist=yes puts on the menus: live.persist.paths=/var/lib/kiosk, and kiosk.persist=yes), store on an ext4 disk named by label: the app's data and the browser profile survive a reboot, nothing else does, the kiosk runs again as its user
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
VM_TIMEOUT=${VM_TIMEOUT:-600}
# a guest starting a browser under TCG on a busy 2-core host answers slowly: longer waits for the login and commands
PROFILE_LOGIN_WAIT=${PROFILE_LOGIN_WAIT:-600} VM_QUIET_WAIT=${VM_QUIET_WAIT:-300} VM_WAIT_TIMEOUT=${VM_WAIT_TIMEOUT:-600}
# shellcheck source=tests/qemu/lib/profile.bash
. "$(dirname "$0")/lib/profile.bash"
VM_MEM=${PROFILE_VM_MEM:-2048}

iso=$OUT/liveunion-kiosk.iso
token="liveunion-kiosk-persist-$$-$RANDOM"
work=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-kiosk-persist.XXXXXX")
at_exit "rm -rf '$work'"
main_pid='systemctl show -p MainPID --value liveunion-kiosk.service'

require profile-built profile_iso kiosk
# The menu's command line with the kiosk.persist=yes keys in place of live.persist=off; the store is named by
# label (an empty store on any disk: the init makes its liveunion-v1/ directory).
require iso-cmdline-read iso_boot_files "$iso"
append=$(iso_cmdline "$iso")
check menu-has-persistence-off test "${append#*live.persist=off}" != "$append"
append="${append/live.persist=off/live.persist=LABEL=kioskdata live.persist.paths=/var/lib/kiosk} kiosk.persist=yes"
require store-made mkfs.ext4 -q -F -L kioskdata "$work/store.img" 64M
require qemu-starts vm_start profile-kiosk-persist cd-bios "$iso" --cmdline "$append" -cpu max \
	-drive "file=$work/store.img,if=virtio,format=raw"
require login profile_login
check systemd-running profile_running
check plan-paths-mode vm_run 'grep -E "^persist\.(paths|result)=" /run/live/plan'
check plan-persists-var-lib-kiosk out_has '^persist\.paths=/var/lib/kiosk$'
check app-running vm_fact "p=\$($main_pid); stat -c %U /proc/\$p" kiosk
check app-data-write-as-kiosk vm_run "setpriv --reuid=kiosk --regid=kiosk --clear-groups sh -c 'echo $token >/var/lib/kiosk/$token && mkdir -p /var/lib/kiosk/browser && echo $token >/var/lib/kiosk/browser/$token' && echo $token >/etc/$token && sync"
require reboot-in-same-vm profile_reboot
check systemd-running-after-reboot profile_running
check app-data-kept vm_fact "cat /var/lib/kiosk/$token; stat -c %U /var/lib/kiosk/$token" "$token"$'\n'kiosk
check browser-profile-kept vm_fact "cat /var/lib/kiosk/browser/$token" "$token"
check rest-not-kept vm_run "test ! -e /etc/$token"
check app-running-after-reboot vm_fact "p=\$($main_pid); stat -c %U /proc/\$p" kiosk
check no-failed-units vm_none 'systemctl --failed --no-legend --plain'
vm_stop
finish

# session.sh: the kiosk ISO as its menus boot it, with no network: the menus persist nothing and stack the image's
# own layers only; the kiosk session runs as the kiosk user under cage, no unit failed, and the kiosk's waiting
# page (no server to reach) fills the screen. Run by ./build.sh --profile kiosk check. (The attack on the lock is
# tests/qemu/profile-kiosk.sh.)
# shellcheck shell=bash disable=SC2016,SC2034 # guest commands in single quotes; the VM_ tunables are the library's
# a browser under TCG: two CPUs, qemu's translated-code cache at its largest, slow answers while it starts
VM_TCG_TB_SIZE=2048 VM_QUIET_WAIT=300 VM_WAIT_TIMEOUT=300 VM_LOGIN_WAIT=300
fact menus-persist-nothing live.persist=off grep -o 'live\.persist[^ ]*' <(iso_cmdline "$ISO")
fact menus-stack-own-layers-only live.layers=10-base,20-kiosk grep -o 'live\.layers=[^ ]*' <(iso_cmdline "$ISO")
require qemu-starts vm_boot --mem 2048 --cpus 2 -- -cpu max -device usb-tablet
require login vm_login
check kiosk-service-active vm_fact 'systemctl is-active liveunion-kiosk.service' active
check kiosk-runs-as-kiosk-user vm_fact 'stat -c %U /proc/$(systemctl show -p MainPID --value liveunion-kiosk.service)' kiosk
check kiosk-runs-cage vm_fact 'p=$(systemctl show -p MainPID --value liveunion-kiosk.service); tr "\0" " " </proc/$p/cmdline | cut -d" " -f1 | xargs basename' cage
check waiting-page-full-screen screen_wait kiosk-waiting 600 row:0=202a44 5,5=202a44 600,700=202a44 1279,799=202a44
check no-failed-units vm_none 'systemctl --failed --no-legend --plain'

#!/usr/bin/env bash
# summary: valid but absurd command-line values (live.size= above the RAM or of 1 byte, live.timeout=0) are clamped with a message and the system boots; live.break= stops in a rescue shell and the boot goes on when it exits; live.panic ends a failed boot in a kernel panic after the report, never in a shell
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "$0")/lib/vm.bash"

require iso-exists test -f "$ISO"

# plan_is KEY VALUE: the init's plan file in the live system says KEY=VALUE.
# shellcheck disable=SC2317 # called through check
plan_is() { vm_fact "sed -n 's/^$1=//p' /run/live/plan" "$2"; }

# 1. A tmpfs larger than the RAM (no swap: the machine would run out of memory first), no wait for the medium.
require huge-boot vm_start bad-cmdline cd-bios "$ISO" --keys "live.size=64G live.timeout=0"
require huge-login vm_login
check huge-said log_has 'liveunion: live.size= asks for 68719476736 bytes, more than the RAM \([0-9]+ MiB\): the RAM.s size \(as live.size=100%\) used'
check timeout0-said log_has 'live.timeout=0 leaves no time for a USB disk to appear: 1 s used'
require huge-mem-total vm_run "sed -n 's/^mem.total=//p' /run/live/plan"
mem_total=$VM_OUT
check huge-upper-is-the-ram plan_is upper.bytes "$mem_total"
check timeout-is-1 plan_is timeout 1
check huge-tmpfs-size vm_fact "df -k /run/live/upper | awk 'NR == 2 { print (\$2 * 1024 >= $mem_total - 4096) }'" 1
require huge-poweroff vm_poweroff

# 2. One byte: the least a live system starts in (4 MiB) instead, and the system works in it.
require tiny-boot vm_start bad-cmdline cd-bios "$ISO" --keys "live.size=1"
require tiny-login vm_login
check tiny-said log_has 'liveunion: live.size= asks for 1 bytes, less than a live system starts in: 4 MiB used'
check tiny-upper-4mib plan_is upper.bytes 4194304
check tiny-root-writable vm_fact "dd if=/dev/zero of=/root/one bs=1k count=1024 2>/dev/null && stat -c %s /root/one" 1048576
require tiny-poweroff vm_poweroff

# A sane command line says nothing of the kind.
require sane-boot vm_start bad-cmdline cd-bios "$ISO" --keys "live.size=64M live.timeout=5"
require sane-login vm_login
check sane-not-clamped log_lacks 'asks for|leaves no time'
check sane-size plan_is upper.bytes 67108864
require sane-poweroff vm_poweroff

# 3. live.break=overlay: a rescue shell before the overlay step, with the plan so far; exit goes on with the boot.
require break-boot vm_start bad-cmdline cd-bios "$ISO" --keys "live.break=overlay"
require break-shell vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
check break-said log_has 'liveunion: live.break=overlay: before step overlay'
require break-quiet vm_quiet
check break-no-root-yet vm_none 'cat /proc/mounts' ' /newroot '
check break-plan-has-layers vm_run "grep -E '^layers=.+' /run/live/plan"
require break-exit vm_send exit
require break-login vm_login
check break-boot-went-on vm_fact "grep -x upper.kind=tmpfs /run/live/plan" upper.kind=tmpfs
require break-poweroff vm_poweroff

# 4. live.panic: a medium that is not there ends in the report and a kernel panic, not in a shell.
uuid=1999123123595900 # a build identity no device here carries
require panic-boot vm_start bad-cmdline cd-bios "$ISO" --keys "live.panic live.timeout=1 live.medium=UUID=$uuid"
check panic-panics vm_wait 'Kernel panic - not syncing' "$VM_BOOT_TIMEOUT"
check panic-report-first log_has "^liveunion: .*$uuid.*not found"
check panic-no-shell log_lacks 'liveunion rescue'
vm_stop
finish

# shellcheck shell=bash
# The public scenario API of liveunion-check (build host; docs/testing.md, liveunion-check(1)). A scenario file is
# sourced after this file, so it only calls what is listed here; these names stay. Most are the harness's own
# functions (tests/lib.sh, vm.bash, screen.bash, persist.bash, lab.bash), which our scenarios call too; what this
# file adds is the one-call forms a user needs: vm_boot (the machine from options), disks plugged and pulled,
# a stick written through a write log and the disk a power cut at a named point leaves.
#   checks      check NAME CMD..., fact NAME WANT CMD..., require, skip, ok, bad, fails, finish (tests/lib.sh)
#   machine     vm_boot [OPTIONS] [IMAGE] [-- QEMU-ARGS], vm_login, vm_run, vm_fact, vm_none, vm_wait, vm_send,
#               vm_reboot, vm_poweroff, vm_powercut, vm_stop, vm_wait_exit; out_has, out_is, log_has, log_lacks,
#               banner_has; iso_cmdline ISO
#   disks       vm_disk_plug ID IMAGE, vm_disk_pull ID; make_stick IMAGE [mkusb options] (a liveunion ISO only)
#   power cut   vm_boot --stick IMAGE --write-log; powercut_point NAME; vm_powercut; powercut_disk NAME OUT [SEED]
#   screen      screen_shot NAME, screen_is PPM SPEC..., screen_wait NAME LIMIT SPEC..., screen_keys, screen_type,
#               screen_click, screen_mouse (screen.bash)
#   network     lab_up, lab_tap, lab_nic_args, lab_serve DIR (lab.bash; root)
#   our suite   relay_tap FILE: liveunion-check's TAP output counted as checks of the calling script
[ -z "${LIVEUNION_CHECK_LIB:-}" ] || return 0
LIVEUNION_CHECK_LIB=1
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "${BASH_SOURCE[0]}")/vm.bash"
# shellcheck source=tests/qemu/lib/screen.bash
. "$(dirname "${BASH_SOURCE[0]}")/screen.bash"
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "${BASH_SOURCE[0]}")/persist.bash"
# shellcheck source=tests/qemu/lib/lab.bash
. "$(dirname "${BASH_SOURCE[0]}")/lab.bash"

# CHECK_TMP: a directory of the scenario's for images and scratch files, removed when it ends.
# shellcheck disable=SC2034 # for the scenarios
CHECK_TMP=$PDIR

# A failed check says what it got (the guest's last output) and where the machine was (the console's last lines).
CHECK_TAIL=${CHECK_TAIL:-12}
check_explain() {
	[ -z "$VM_OUT" ] || printf '#   got (the output of the last command):\n' >&2
	vm_show_out
	[ -n "$VM_LOG" ] && [ -s "$VM_LOG" ] || return 0
	printf '#   console (last %s lines of %s):\n' "$CHECK_TAIL" "$VM_LOG" >&2
	# awk ends the last line too (a prompt has no newline: the next check's line must start a line of its own)
	tail -n "$CHECK_TAIL" "$VM_LOG" | tr -d '\r' | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' | awk '{ print "#   | " $0 }' >&2
}
CHECK_ON_FAIL=check_explain

# vm_boot [OPTIONS] [IMAGE] [-- QEMU-ARGS...]: start the machine (IMAGE default $ISO) and return; vm_login next.
#   --bios (default) | --uefi          the firmware: SeaBIOS or OVMF
#   --secure-boot ms|snakeoil|VARS     UEFI with Secure Boot on: Microsoft's keys, Debian's test keys, or an OVMF
#                                      variables file of yours (written in place); q35 with SMM
#   --cd (default) | --usb | --stick | --disk   IMAGE as an IDE CD, a USB stick (a snapshot: the file never
#                                      changes), a USB stick written for real, the first IDE disk (written for real)
#   --write-log                        (--stick) every write and flush to the stick logged, for powercut_disk
#   --mem MIB (512), --cpus N (1), --q35   memory, virtual CPUs, the q35 machine (AHCI, PCIe) instead of pc
#   --name NAME                        the console log's name (default the scenario's): $VM_LOG_DIR/NAME.log
#   --direct, --keys KEYS, --cmdline LINE   no boot loader: the kernel of the ISO's BIOS menu started by qemu
#                                      (with KEYS added, or LINE instead of the menu's line); see vm_start
#   --snapshot                         (--cd) start logged in, from a snapshot of this machine taken after the
#                                      first vm_login with these options and this ISO (qemu savevm into a qcow2
#                                      file under $OUT/tests/snapshots/), for scenarios that do not test the boot
# Every machine has a QMP socket (screenshots, keys, disks) and a USB controller with the id xhci (vm_disk_plug).
vm_boot() {
	local fw=bios bus=cd name=$T_NAME image=$ISO wlog='' snap='' all=("$@") start=() extra=()
	local VM_MEM=$VM_MEM VM_SMP=$VM_SMP VM_SB=$VM_SB VM_MACHINE=$VM_MACHINE
	while [ $# -gt 0 ]; do
		case "$1" in
		--bios | --uefi) fw=${1#--} ;;
		--secure-boot) fw=uefi VM_SB=${2:?--secure-boot needs ms, snakeoil or a variables file} && shift ;;
		--cd | --usb | --stick | --disk) bus=${1#--} ;;
		--write-log) wlog=1 ;;
		--snapshot) snap=1 ;;
		--mem) VM_MEM=${2:?--mem needs MiB} && shift ;;
		--cpus) VM_SMP=${2:?--cpus needs a number} && shift ;;
		--q35) VM_MACHINE=q35 ;;
		--name) name=${2:?--name needs a name} && shift ;;
		--direct) start+=(--direct) ;;
		--keys | --cmdline) start+=("$1" "${2:?$1 needs a value}") && shift ;;
		--) shift && break ;;
		-*) vm_note "vm_boot: unknown option '$1'"; return 2 ;;
		*) image=$1 ;;
		esac
		shift
	done
	extra=(-qmp "unix:$SCREEN_SOCK,server=on,wait=off")
	# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
	case "$bus" in cd | disk) extra+=(-device qemu-xhci,id=xhci) ;; esac
	if [ -n "$wlog" ]; then
		[ "$bus" = stick ] || { vm_note "vm_boot: --write-log is for --stick"; return 2; }
		[ -f "$image" ] || { vm_note "vm_boot: image '$image' does not exist"; return 1; }
		# the log starts from the stick as it is now: powercut_disk replays onto this copy
		cp --sparse=always "$image" "$VM_WORK/pristine.img" || return 1
		POWERCUT_LOG=$VM_WORK/writes.log && : >"$POWERCUT_LOG" || return 1
		# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
		extra+=(-device qemu-xhci,id=xhci -blockdev "driver=blklogwrites,node-name=stick,file.driver=file,file.filename=$image,log.driver=file,log.filename=$POWERCUT_LOG,log-sector-size=512,log-append=off"
			-device usb-storage,bus=xhci.0,drive=stick,bootindex=1)
		vm_start "$name" none "" "${start[@]}" "${extra[@]}" "$@"
		return
	fi
	VM_SNAP=''
	if [ -n "$snap" ]; then
		[ "$bus" = cd ] || { vm_note "vm_boot: --snapshot is for --cd (a written disk would not match its snapshot)"; return 2; }
		# one snapshot per ISO (its name, size and time), options and login
		VM_SNAP=$OUT/tests/snapshots/$(printf '%s\n' "$(stat -c '%n %s %Y' "$image")" "${all[@]}" "$VM_MEM $VM_SMP $VM_MACHINE" \
			"$VM_LOGIN_USER $VM_LOGIN_SUDO" | sha256sum | cut -c1-16)
		mkdir -p "$(dirname "$VM_SNAP")" || return 1
		extra+=(-drive "if=none,id=vmstate,format=qcow2,file=$VM_SNAP.qcow2")
		if [ -s "$VM_SNAP.banner" ]; then
			extra+=(-loadvm booted)
			VM_SNAP_LOADED=1
		else
			rm -f "$VM_SNAP.qcow2" && qemu-img create -q -f qcow2 "$VM_SNAP.qcow2" 16M || return 1
			VM_SNAP_LOADED=''
		fi
	fi
	vm_start "$name" "$bus-$fw" "$image" "${start[@]}" "${extra[@]}" "$@" || return 1
	if [ -n "$VM_SNAP_LOADED" ]; then # logged in already: vm_login only takes the banner the first boot showed
		VM_BANNER=$(cat "$VM_SNAP.banner")
		vm_note "$name: started from the snapshot $VM_SNAP.qcow2"
	fi
}
VM_SNAP='' VM_SNAP_LOADED=''

# vm_login, once more: a machine started from its snapshot is logged in; the first login of a --snapshot machine
# takes that snapshot (the shell quiet, at its prompt).
eval "vm_login_console() $(declare -f vm_login | tail -n +2)"
vm_login() {
	local t0
	if [ -n "$VM_SNAP_LOADED" ]; then # (a later login, after a reboot, is a real one)
		VM_SNAP='' VM_SNAP_LOADED=''
		vm_quiet # the shell answers: the snapshot ran on
		return
	fi
	vm_login_console || return 1
	[ -n "$VM_SNAP" ] || return 0
	t0=$(now_ms)
	vm_qmp "$SCREEN_SOCK" '{"execute": "human-monitor-command", "arguments": {"command-line": "savevm booted"}}' \
		>"$VM_WORK/savevm.out" || return 1
	# savevm reports its errors as text, not as a QMP error
	[ "$(cat "$VM_WORK/savevm.out")" = '""' ] || { vm_note "savevm: $(cat "$VM_WORK/savevm.out")"; return 1; }
	printf '%s\n' "$VM_BANNER" >"$VM_SNAP.banner" || return 1
	vm_note "$VM_NAME: snapshot $VM_SNAP.qcow2 taken in $(($(now_ms) - t0)) ms"
	VM_SNAP='' 
}

# vm_disk_plug ID IMAGE: a raw disk image plugged into the running machine as a USB stick (written for real);
# vm_disk_pull ID: pulled out again, as a person would (no unmount first).
vm_disk_plug() {
	[ -f "$2" ] || { vm_note "vm_disk_plug: image '$2' does not exist"; return 1; }
	vm_qmp "$SCREEN_SOCK" \
		"{\"execute\": \"blockdev-add\", \"arguments\": {\"node-name\": \"$1\", \"driver\": \"raw\", \"file\": {\"driver\": \"file\", \"filename\": \"$2\"}}}" \
		"{\"execute\": \"device_add\", \"arguments\": {\"driver\": \"usb-storage\", \"bus\": \"xhci.0\", \"drive\": \"$1\", \"id\": \"$1-dev\"}}" >/dev/null
}
vm_disk_pull() {
	vm_qmp "$SCREEN_SOCK" "{\"execute\": \"device_del\", \"arguments\": {\"id\": \"$1-dev\"}}" >/dev/null
}

# powercut_point NAME: how many writes and flushes the stick has received so far (vm_boot --write-log) is named
# NAME. Call it after the guest's sync has returned: the log then holds everything that sync flushed.
declare -A POWERCUT_AT=()
POWERCUT_LOG=''
replay_log() {
	local rl=$TOP/libexec/replay-log # installed (harness/Makefile)
	if [ ! -x "$rl" ]; then
		rl=$VM_WORK/replay-log
		[ -x "$rl" ] || make -s -C "$TOP/iso" O="$VM_WORK" replay-log >&2 || return 1
	fi
	"$rl" "$@"
}
powercut_point() {
	local n i
	[ -n "$POWERCUT_LOG" ] || { vm_note "powercut_point: no write log (vm_boot --stick IMAGE --write-log)"; return 1; }
	for i in 1 2 3; do n=$(replay_log count "$POWERCUT_LOG" 2>/dev/null) && break; sleep 0.2; done
	[ -n "${n:-}" ] || { replay_log count "$POWERCUT_LOG"; return 1; }
	POWERCUT_AT[$1]=$n
	vm_note "power-cut point $1: write-log entry $n"
}
# powercut_disk NAME OUT [SEED]: OUT is the stick as a power cut right after point NAME leaves it: the stick as it
# was at vm_boot with the logged writes up to NAME applied. With SEED, a drive's volatile cache is lost too: of the
# writes after NAME up to the next flush, a subset drawn from SEED is kept and the last kept one is torn (only a
# prefix of its sectors written). Boot OUT (vm_boot --stick OUT) to see what the system makes of it.
powercut_disk() {
	local n=${POWERCUT_AT[$1]:-} f
	[ -n "$n" ] || { vm_note "powercut_disk: no point named '$1' (powercut_point)"; return 1; }
	if [ -z "${3:-}" ]; then
		replay_log replay "$POWERCUT_LOG" "$VM_WORK/pristine.img" "$2" "$n" >/dev/null
		return
	fi
	# the flush the point ends at: the last FLUSH entry before it
	f=$(replay_log points "$POWERCUT_LOG" | awk -v n="$n" '$1 < n { f = $1 } END { if (f != "") print f }')
	[ -n "$f" ] || { vm_note "powercut_disk: no flush before point '$1'"; return 1; }
	replay_log random "$POWERCUT_LOG" "$VM_WORK/pristine.img" "$2" "$f" "$3" tear >&2
}

# vm_wait_exit [TIMEOUT]: the machine powers itself off (qemu exits) within TIMEOUT seconds (default 120).
vm_wait_exit() {
	local deadline=$(($(now_ms) + ${1:-120} * 1000))
	while vm_alive; do
		[ "$(now_ms)" -lt "$deadline" ] || { vm_note "$VM_NAME: still running after ${1:-120}s"; vm_tail_log; return 1; }
		sleep 0.5
	done
	vm_stop
}

# relay_tap FILE: each test point of liveunion-check's TAP output in FILE is a check of this script, under the same
# name (SCENARIO/CHECK); its notes are shown. How our own suite runs the command as a user does.
relay_tap() {
	local line
	while IFS= read -r line; do
		case "$line" in
		'ok '[0-9]*' # SKIP '*) line=${line#ok * - } && skip "${line%% # SKIP *}" "${line#* # SKIP }" ;;
		'ok '[0-9]*) ok "${line#ok * - }" ;;
		'not ok '[0-9]*) bad "${line#not ok * - }" ;;
		*) printf '%s\n' "$line" >&2 ;;
		esac
	done <"$1"
}

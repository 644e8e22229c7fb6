# shellcheck shell=bash
# shellcheck disable=SC2034 # VM_BANNER, VM_T0, VM_T_MATCH are set here for the scenarios and bench/boot
# Host-side qemu harness, sourced by every tests/qemu/*.sh scenario (directly or through the other files of
# tests/qemu/lib/) and by bench/ (runs on the build host). One VM at a time: vm_start (the one launcher), vm_wait,
# vm_login, vm_run, vm_reboot, vm_poweroff, vm_powercut, vm_stop; check, fact, finish come from tests/lib.sh.
# The serial console goes through `-serial pipe:` FIFOs and is appended, raw, to $OUT/tests/qemu/NAME.log.
# A dead or hung VM is a harness error (tests/lib.sh): it fails the test whatever the check around it expects.
[ -z "${LIVEUNION_VM_LIB:-}" ] || return 0
LIVEUNION_VM_LIB=1
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib.sh"
# LC_ALL=C (tests/lib.sh): byte offsets into the log are computed with ${#var}: they must be bytes, not characters
ISO=${ISO:-$OUT/liveunion.iso}
VM_MEM=${VM_MEM:-512}
VM_MACHINE=${VM_MACHINE:-pc} # q35: AHCI, PCIe (tests/qemu/pc-hardware.sh)
VM_SMP=${VM_SMP:-1} # virtual CPUs (boot-cd-bios.sh runs 2: the tiny kernel is SMP)
# VM_TCG_THREAD: qemu's TCG threading, multi (a host thread per virtual CPU, qemu's default) or single (all
# virtual CPUs in one host thread, in turn). Single for a VM with more CPUs than the host has to spare: with one
# thread per CPU, a CPU spinning on a lock whose holder's thread the host has preempted can stall the guest for
# minutes when another VM shares the 2 host CPUs.
VM_TCG_THREAD=${VM_TCG_THREAD:-multi}
# VM_TCG_TB_SIZE: qemu's translated-code cache in MiB (its default 1024). When it is full qemu drops all of it and
# translates again: a guest that runs a browser's 200 MB of code fills 1024 MiB before the first page.
VM_TCG_TB_SIZE=${VM_TCG_TB_SIZE:-}
VM_TIMEOUT=${VM_TIMEOUT:-300}           # hard limit for one qemu process
VM_WAIT_TIMEOUT=${VM_WAIT_TIMEOUT:-120} # default for vm_wait and vm_run
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-240} # boot to login prompt (UEFI under TCG is slow)
VM_POLL=${VM_POLL:-0.1}
OVMF=${OVMF:-/usr/share/ovmf/OVMF.fd}
# Secure Boot for the -uefi modes (tests/qemu/secureboot*.sh): empty: off (OVMF.fd, as every other scenario);
# ms: Debian's variables with Microsoft's keys enrolled, Secure Boot on; snakeoil: Debian's test PK/KEK/db (its key
# ships in the ovmf package): each VM starts from a copy; or a variables file of the scenario's, used in place
# (what the firmware writes, an enrolled MOK, stays for the next VM). On: q35 with SMM and the secure flash.
VM_SB=${VM_SB:-}
OVMF_SB_CODE=${OVMF_SB_CODE:-/usr/share/OVMF/OVMF_CODE_4M.secboot.fd}
VM_QEMU=${VM_QEMU:-qemu-system-x86_64}
VM_LOG_DIR=${VM_LOG_DIR:-$OUT/tests/qemu} # where each VM's console log goes (liveunion-check: out/tests/SCENARIO)

VM_NAME='' VM_LOG='' VM_DIR='' VM_PID='' VM_CAT='' VM_IN='' VM_MARK=0 VM_BOOT_MARK=0 VM_OUT='' VM_MATCH='' VM_BANNER='' VM_SEQ=0
# VM_T0 (qemu start) and VM_T_MATCH (last vm_wait match), in ms, are read by bench/boot.
VM_T0=0 VM_T_MATCH=0
VM_WORK=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-vmlib.XXXXXX") # what the launcher extracts from ISOs
at_exit vm_stop # first: the scenarios' own clean-ups come after the VM is gone
at_exit "rm -rf '$VM_WORK'"
CHECK_ON_FAIL=vm_show_out

# now_ms: bash's own clock (EPOCHREALTIME, microseconds; LC_ALL=C: a dot before them), no date(1) started
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
vm_note() { printf '# %s\n' "$*" >&2; }

# vm_start NAME MODE IMAGE [--direct] [--keys KEYS] [--cmdline LINE] [qemu args...]: the one VM launcher.
#   MODE cd-bios, cd-uefi        IMAGE is an IDE CD (read-only), booted by the firmware
#        usb-bios, usb-uefi      IMAGE is a USB stick on xHCI, a snapshot: the guest may write, the file never changes
#        stick-bios, stick-uefi  the same stick written for real (persistence: the host checks the image afterwards)
#        disk-bios, disk-uefi    IMAGE is the first IDE hard disk, written for real
#        none                    nothing attached (IMAGE ""): the qemu args bring any disks
#        net-bios, net-uefi      nothing attached (IMAGE ""): the firmware boots from the network (the qemu args bring
#                                the NIC; tests/qemu/lib/lab.bash)
#   --direct        no boot loader: the kernel, initrd and command line of the BIOS menu boot directly (seconds saved
#                   per boot; iso_boot_files), from IMAGE when it is an ISO on a CD, else from $ISO
#   --keys KEYS     --direct, with KEYS added to the menu's command line (live.* keys)
#   --cmdline LINE  --direct, with LINE instead of the menu's command line
vm_start() {
	local name=$1 mode=$2 image=$3 media=() direct='' keys='' line='' iso machine=$VM_MACHINE vars
	shift 3
	while [ $# -gt 0 ]; do
		case "$1" in
		--direct) direct=1 ;;
		--keys) direct=1 keys=$2 && shift ;;
		--cmdline) direct=1 line=$2 && shift ;;
		*) break ;;
		esac
		shift
	done
	[ -z "$VM_PID" ] || vm_stop
	case "$mode" in
	cd-* | usb-* | stick-* | disk-*)
		[ -f "$image" ] || { vm_note "vm_start: image '$image' does not exist"; return 1; } ;;
	none | kernel | net-*) ;; # kernel: the old name, bench/ passes -kernel itself
	*) vm_note "vm_start: unknown mode '$mode'"; return 1 ;;
	esac
	case "$mode" in
	*-uefi)
		if [ -z "$VM_SB" ]; then
			media+=(-bios "$OVMF") # the combined image keeps its variables in memory: nothing to copy
		else
			vars=$VM_SB
			case "$VM_SB" in ms | snakeoil) vars=/usr/share/OVMF/OVMF_VARS_4M.$VM_SB.fd ;; esac
			if [ ! -f "$vars" ] || [ ! -f "$OVMF_SB_CODE" ]; then
				vm_note "vm_start: VM_SB=$VM_SB: no $vars or $OVMF_SB_CODE (package ovmf)"
				return 1
			fi
			case "$VM_SB" in
			ms | snakeoil) cp "$vars" "$VM_WORK/vars.fd" && vars=$VM_WORK/vars.fd || return 1 ;;
			esac
			machine=q35,smm=on
			# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
			media+=(-global driver=cfi.pflash01,property=secure,value=on
				-drive "if=pflash,format=raw,unit=0,readonly=on,file=$OVMF_SB_CODE"
				-drive "if=pflash,format=raw,unit=1,file=$vars")
		fi ;;
	esac
	if [ -n "$direct" ]; then
		iso=$ISO
		case "$mode" in cd-*) iso=$image ;; esac
		iso_boot_files "$iso" || { vm_note "vm_start: cannot take the kernel and initrd from the menu of $iso"; return 1; }
		[ -n "$line" ] || line="$(cat "$VM_ISO_DIR/cmdline")${keys:+ $keys}"
		media+=(-kernel "$VM_ISO_DIR/kernel" -initrd "$VM_ISO_DIR/initrd" -append "$line")
	fi
	case "$mode" in
	cd-*) media+=(-drive "file=$image,if=ide,index=2,media=cdrom,readonly=on")
		[ -n "$direct" ] || media+=(-boot order=d) ;;
	net-*) media+=(-boot order=n) ;;
	disk-*) media+=(-drive "file=$image,format=raw,if=ide,index=0") # written for real, as a stick- one
		[ -n "$direct" ] || media+=(-boot order=c) ;;
	usb-* | stick-*) # a usb- stick is a snapshot; a stick- one is written
		local snap=,snapshot=on boot=,bootindex=1
		case "$mode" in stick-*) snap= ;; esac
		[ -z "$direct" ] || boot=
		# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
		media+=(-device qemu-xhci,id=xhci -drive "if=none,id=stick,format=raw,file=$image$snap"
			-device "usb-storage,bus=xhci.0,drive=stick$boot") ;;
	esac
	VM_NAME=$name
	mkdir -p "$VM_LOG_DIR" || return 1
	VM_LOG=$VM_LOG_DIR/$name.log
	: >"$VM_LOG" || return 1
	VM_LOG_FD_OF='' # the log was truncated: vm_log_grew opens it again
	VM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-vm.XXXXXX") || return 1
	mkfifo "$VM_DIR/con.in" "$VM_DIR/con.out" || return 1
	# cat copies each read() straight to the log; tr or sed would buffer and hide the newest output.
	cat "$VM_DIR/con.out" >>"$VM_LOG" &
	VM_CAT=$!
	VM_MARK=0 VM_BOOT_MARK=0 VM_SEQ=0 VM_OUT='' VM_MATCH='' VM_BANNER=''
	local accel=tcg,thread=$VM_TCG_THREAD${VM_TCG_TB_SIZE:+,tb-size=$VM_TCG_TB_SIZE}
	vm_accel >/dev/null && [ "$VM_ACCEL" = kvm ] && accel=kvm
	printf '%s\n' "$VM_QEMU -accel $accel -M $machine -smp $VM_SMP -m $VM_MEM ${media[*]} $*" >"$VM_DIR/cmd"
	VM_T0=$(now_ms)
	timeout -k 5 "$VM_TIMEOUT" "$VM_QEMU" -accel "$accel" -M "$machine" -smp "$VM_SMP" -m "$VM_MEM" \
		-display none -vga std -nic none -monitor none -parallel none \
		-serial "pipe:$VM_DIR/con" "${media[@]}" "$@" </dev/null >"$VM_DIR/qemu.err" 2>&1 &
	VM_PID=$!
	# Read-write open: never blocks on qemu's side of the FIFO, and our writes never hit a closed pipe.
	exec {VM_IN}<>"$VM_DIR/con.in"
	vm_note "$name: qemu pid $VM_PID, console log $VM_LOG"
}

# vm_accel: kvm when VM_ACCEL=kvm, or when VM_ACCEL is empty (the default) and /dev/kvm works: a qemu started on it
# with a CPU reaches its monitor and quits (here a /dev/kvm that exists can still abort qemu while it sets the CPU's
# registers); else tcg. Probed once per scenario; VM_ACCEL=tcg never tries.
VM_ACCEL=${VM_ACCEL:-}
vm_accel() {
	if [ -z "$VM_ACCEL" ]; then
		VM_ACCEL=tcg
		if [ -w /dev/kvm ] && printf '%s\n' '{"execute": "qmp_capabilities"}' '{"execute": "quit"}' |
			timeout 20 "$VM_QEMU" -accel kvm -M pc -m 32 -display none -nodefaults -S -qmp stdio >/dev/null 2>&1; then
			VM_ACCEL=kvm
		fi
		vm_note "accelerator: $VM_ACCEL"
	fi
	echo "$VM_ACCEL"
}

# iso_boot_files ISO: the kernel, initrd and command line (APPEND) of ISO's BIOS menu, taken from the ISO itself
# (so a direct boot runs exactly what is shipped) into $VM_ISO_DIR: kernel, initrd, cmdline. Cached per file.
VM_ISO_DIR=''
iso_boot_files() {
	local iso=$1 key x
	key=$(stat -c '%n %s %Y' "$iso" | md5sum | cut -c1-16) || return 1
	VM_ISO_DIR=$VM_WORK/iso-$key
	[ -s "$VM_ISO_DIR/cmdline" ] && return 0
	mkdir -p "$VM_ISO_DIR" || return 1
	x=(xorriso -osirrox on -indev "$iso" -extract)
	"${x[@]}" /isolinux/isolinux.cfg "$VM_ISO_DIR/isolinux.cfg" >/dev/null 2>&1 || return 1
	"${x[@]}" "$(awk 'tolower($1) == "linux" { print $2; exit }' "$VM_ISO_DIR/isolinux.cfg")" "$VM_ISO_DIR/kernel" \
		>/dev/null 2>&1 &&
		"${x[@]}" "$(awk 'tolower($1) == "initrd" { print $2; exit }' "$VM_ISO_DIR/isolinux.cfg")" \
			"$VM_ISO_DIR/initrd" >/dev/null 2>&1 || return 1
	awk 'tolower($1) == "append" { $1 = ""; sub(/^ /, ""); print; exit }' "$VM_ISO_DIR/isolinux.cfg" \
		>"$VM_ISO_DIR/cmdline.new" && [ -s "$VM_ISO_DIR/cmdline.new" ] && mv "$VM_ISO_DIR/cmdline.new" "$VM_ISO_DIR/cmdline"
}
# iso_cmdline ISO: the kernel command line of ISO's menus.
iso_cmdline() { iso_boot_files "$1" && cat "$VM_ISO_DIR/cmdline"; }

vm_alive() { [ -n "$VM_PID" ] && kill -0 "$VM_PID" 2>/dev/null; }

vm_since_mark() { tail -c +$((VM_MARK + 1)) "$VM_LOG" 2>/dev/null; }
# vm_mark: later waits only look at output from here on; vm_run cuts its command's output from here.
vm_mark() { VM_MARK=$(stat -c %s "$VM_LOG"); VM_MARK_RUN=$VM_MARK; }
VM_MARK_RUN=0

vm_tail_log() {
	# qemu's own messages first: the console's last lines, which say how far the guest got, are then the last
	# thing printed (what a truncated CI log still shows)
	[ ! -s "$VM_DIR/qemu.err" ] || sed 's/^/qemu: /' "$VM_DIR/qemu.err" >&2
	# a kernel warning or oops scrolls its first lines (which name the cause) out of the tail: show them apart
	if grep -qE '(WARNING|BUG): |Oops|Kernel panic|general protection' "$VM_LOG" 2>/dev/null; then
		vm_note "---- the kernel's first report in $VM_LOG ----"
		tr -d '\r' <"$VM_LOG" | grep -E -m1 -B2 -A14 '(WARNING|BUG): |Oops|Kernel panic|general protection' | sed 's/^/| /' >&2
	fi
	vm_note "---- last 40 lines of $VM_LOG ($(( ($(now_ms) - VM_T0) / 1000 )) s after qemu started) ----"
	tail -n 40 "$VM_LOG" | tr -d '\r' | sed 's/^/| /' >&2
	[ -s "$VM_LOG" ] || vm_note "(the console printed nothing: the firmware or boot loader never reached the kernel's serial console)"
	vm_note "----"
}

# How vm_wait waits without starting processes: each look at the log started tail and grep (and date and sleep
# between them), 30-40 ms of CPU, ten times a second, a third of one CPU for each scenario waiting (measured on the
# 2-core CI host, where a fork costs that much): the log is now searched again only when it has grown, which a
# descriptor of our own on it tells (read to its end, nothing started), and at least every VM_POLL_FULL seconds
# whatever it tells (a log truncated under it, a NUL byte); the pause between looks is a read with a timeout on a
# FIFO nobody writes to.
VM_POLL_FULL=${VM_POLL_FULL:-1}
VM_LOG_FD='' VM_LOG_FD_OF='' VM_NAP_FD=''
mkfifo "$VM_WORK/nap" 2>/dev/null && exec {VM_NAP_FD}<>"$VM_WORK/nap"
# vm_nap SECONDS: a pause (sleep(1) when there is no FIFO)
vm_nap() {
	if [ -n "$VM_NAP_FD" ]; then read -r -t "$1" -u "$VM_NAP_FD" _ || true; else sleep "$1"; fi
}
# vm_log_grew: the console log has grown since the last call (or is another file than then: true once).
vm_log_grew() {
	local c rc grew=1
	if [ "$VM_LOG_FD_OF" != "$VM_LOG" ] || [ -z "$VM_LOG_FD" ]; then
		[ -z "$VM_LOG_FD" ] || exec {VM_LOG_FD}<&-
		VM_LOG_FD='' VM_LOG_FD_OF=''
		[ -r "$VM_LOG" ] || return 0
		exec {VM_LOG_FD}<"$VM_LOG" || { VM_LOG_FD=''; return 0; }
		VM_LOG_FD_OF=$VM_LOG
		grew=0
	fi
	while :; do
		IFS= read -r -d '' -N 65536 -u "$VM_LOG_FD" c
		rc=$?
		[ ${#c} -eq 0 ] || grew=0
		[ "$rc" -eq 0 ] || break
	done
	return "$grew"
}

# vm_wait REGEX [TIMEOUT]: first console line after the mark that matches REGEX (grep -E); the mark moves past it.
vm_wait() {
	local re=$1 to=${2:-$VM_WAIT_TIMEOUT} deadline line off size dead=0 now full t
	t=${EPOCHREALTIME/./} now=$((t / 1000))
	deadline=$((now + to * 1000)) full=$now
	vm_log_grew || true
	while :; do
		if line=$(vm_since_mark | grep -a -b -m1 -E -- "$re"); then
			VM_T_MATCH=$(now_ms)
			off=${line%%:*} line=${line#*:}
			VM_MATCH=${line//$'\r'/}
			size=$(stat -c %s "$VM_LOG")
			VM_MARK=$((VM_MARK + off + ${#line} + 1))
			[ "$VM_MARK" -le "$size" ] || VM_MARK=$size
			return 0
		fi
		[ "$dead" = 1 ] && { vm_note "$VM_NAME: qemu exited before /$re/ appeared"; vm_tail_log; return 1; }
		vm_alive || { dead=1; sleep 0.3; continue; } # one more look: the last output may still be in flight
		full=$((full + VM_POLL_FULL * 1000))
		while :; do
			t=${EPOCHREALTIME/./} now=$((t / 1000))
			[ "$now" -lt "$deadline" ] || { vm_note "$VM_NAME: no /$re/ within ${to}s"; vm_tail_log; return 1; }
			vm_nap "$VM_POLL"
			vm_log_grew && break
			[ "$now" -lt "$full" ] || break
			vm_alive || break
		done
		full=$now
	done
}

# vm_send TEXT: type TEXT and Enter on the serial console.
vm_send() { vm_alive && printf '%s\r' "$1" >&"$VM_IN"; }

# vm_quiet: make the shell on the console deterministic: no echo (busybox line editing then falls back to plain
# reads, which also stops its ESC[6n cursor queries), no kernel messages in command output, a fixed prompt.
vm_quiet() {
	local n=$((++VM_SEQ))
	vm_mark
	# Markers are split in the typed text so that an echo of the line itself never matches them.
	vm_send "stty -echo 2>/dev/null; dmesg -n 1 2>/dev/null; PS1='[vm]# '; PS2=''; echo '@@Q''$n@@'"
	vm_wait "@@Q$n@@" "${VM_QUIET_WAIT:-30}"
}

# The console login (docs/testing.md, "Logging in"): VM_LOGIN_USER (default root) at the first line matching
# VM_LOGIN_PROMPT, VM_LOGIN_PASSWORD when a password is asked; a user other than root then gets a root shell by
# `exec sudo /bin/sh` (VM_LOGIN_SUDO=0: stay that user). Each step waits up to VM_LOGIN_WAIT seconds;
# VM_LOGIN_POKE=1 sends an empty line first (the prompt may already be on the console).
VM_LOGIN_USER=${VM_LOGIN_USER:-root}
VM_LOGIN_PASSWORD=${VM_LOGIN_PASSWORD:-}
VM_LOGIN_PROMPT=${VM_LOGIN_PROMPT:-login: *}
VM_LOGIN_SUDO=${VM_LOGIN_SUDO:-1}
VM_LOGIN_WAIT=${VM_LOGIN_WAIT:-60}
VM_LOGIN_POKE=${VM_LOGIN_POKE:-}

# vm_login: log in on the console as above, keep what was shown (issue, motd) in VM_BANNER, then vm_quiet.
vm_login() {
	local start shell='# '
	# another user's shell prompt ends in $ (the root shell after sudo in # ; dash: nothing after it)
	[ "$VM_LOGIN_USER" = root ] || shell='\$ *$'
	vm_mark
	start=$VM_MARK
	[ -z "$VM_LOGIN_POKE" ] || vm_send ''
	vm_wait "$VM_LOGIN_PROMPT" "$VM_BOOT_TIMEOUT" || return 1
	[ "$VM_LOGIN_USER" != root ] || start=$VM_MARK
	vm_send "$VM_LOGIN_USER"
	vm_wait "[Pp]assword:|$shell" "$VM_LOGIN_WAIT" || return 1
	case "$VM_MATCH" in
	*assword:*) vm_send "$VM_LOGIN_PASSWORD" && vm_wait "$shell" "$VM_LOGIN_WAIT" || return 1 ;;
	esac
	VM_BANNER=$(tail -c +$((start + 1)) "$VM_LOG" | head -c $((VM_MARK - start)) | tr -d '\r')
	if [ "$VM_LOGIN_USER" != root ] && [ "$VM_LOGIN_SUDO" = 1 ]; then
		vm_send 'exec sudo /bin/sh'
		vm_wait '[Pp]assword[^:]*:|# *$' "$VM_LOGIN_WAIT" || return 1
		case "$VM_MATCH" in
		*assword*) vm_send "$VM_LOGIN_PASSWORD" && vm_wait '# *$' "$VM_LOGIN_WAIT" || return 1 ;;
		esac
	fi
	vm_quiet
}

# vm_run CMD [TIMEOUT]: run CMD in the guest shell (stdin /dev/null, stderr merged); output in VM_OUT, returns its status.
# CMD runs in the current shell (cd and variables persist); it travels as one tty line: keep it under ~4000 bytes.
# A VM that is not running or does not finish CMD in time is a harness error: `fails vm_run ...` cannot pass on it.
vm_run() {
	local cmd=$1 to=${2:-$VM_WAIT_TIMEOUT} n rc
	n=$((++VM_SEQ))
	VM_OUT=''
	vm_mark
	vm_send "echo '@@B''$n@@'; { $cmd
} </dev/null 2>&1; echo \"@@E\"'$n'\"@@ \$?\"" || {
		harness_error "vm_run: qemu${VM_NAME:+ ($VM_NAME)} is not running: cannot run '${cmd:0:80}'"
		return 255
	}
	vm_wait "@@E$n@@ [0-9]+"$'\r'"?\$" "$to" || {
		if vm_alive; then
			harness_error "vm_run: '${cmd:0:80}' did not end within ${to}s: the guest is hung or too slow"
		else
			harness_error "vm_run: qemu ($VM_NAME) died while running '${cmd:0:80}'"
		fi
		return 255
	}
	rc=${VM_MATCH##* }
	VM_OUT=$(vm_cut_output "$n")
	return "$rc"
}

# The text between the begin marker line of command N and its end marker, carriage returns removed.
vm_cut_output() {
	local n=$1 all
	all=$(tail -c +$((VM_MARK_RUN + 1)) "$VM_LOG" | head -c $((VM_MARK - VM_MARK_RUN)) | tr -d '\r')
	all=${all#*"@@B$n@@"$'\n'}
	all=${all%"@@E$n@@"*}
	printf '%s' "${all%$'\n'}"
}

# What log_has and log_lacks read: this boot's console, from vm_start, or after a reboot in the same qemu from the
# kernel's last words of the boot before ('reboot: Restarting system'), so a check after a reboot can be satisfied
# only by what the new boot printed. vm_boot_log: that part of the log, without carriage returns.
vm_boot_log() { tail -c +$((VM_BOOT_MARK + 1)) "$VM_LOG" 2>/dev/null | tr -d '\r'; }
# vm_reboot_begin [COMMAND]: type reboot (or COMMAND) and wait for the old kernel to restart the machine; the boot
# mark is then there.
vm_reboot_begin() {
	vm_mark
	vm_send "${1:-reboot}" || return 1
	vm_wait 'reboot: Restarting system' 180 || return 1
	VM_BOOT_MARK=$VM_MARK
}

# vm_reboot: reboot the guest in the same qemu process and log in again on the next boot.
vm_reboot() {
	vm_reboot_begin reboot && vm_login
}

# vm_poweroff: poweroff in the guest, wait until the kernel says it is done, then stop qemu.
# (VM_POWEROFF_WAIT: seconds to wait for the kernel's last words, default 120)
vm_poweroff() {
	vm_mark
	vm_send poweroff || return 1
	vm_wait 'reboot: (Power down|System halted)' "${VM_POWEROFF_WAIT:-120}"
	local rc=$?
	vm_stop
	return $rc
}

# vm_powercut: SIGKILL to qemu itself (not to its timeout wrapper): nothing is flushed, as when the plug is pulled.
vm_powercut() {
	local q
	q=$(pgrep -P "$VM_PID") && kill -KILL "$q" 2>/dev/null
	vm_stop 2>/dev/null # timeout(1) dies of the same signal as its child: bash's "Killed" note is expected
}

# vm_stop: kill qemu (the media are read-only or snapshots: nothing to flush) and reap everything we started.
vm_stop() {
	[ -n "$VM_PID" ] || return 0
	if vm_alive; then
		kill -TERM "$VM_PID" 2>/dev/null # timeout(1) passes it on to qemu
		local i=0
		while vm_alive && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		vm_alive && kill -KILL "$VM_PID" 2>/dev/null
	fi
	wait "$VM_PID" 2>/dev/null
	# qemu held the write side of con.out: cat ends by itself once qemu is gone.
	kill "$VM_CAT" 2>/dev/null
	wait "$VM_CAT" 2>/dev/null
	[ -n "$VM_IN" ] && exec {VM_IN}>&-
	rm -rf "$VM_DIR"
	VM_PID='' VM_CAT='' VM_IN='' VM_DIR=''
}

# vm_qmp SOCKET COMMAND_JSON...: each command through qemu's QMP socket (the VM started with
# -qmp unix:SOCKET,server=on,wait=off); prints each "return" as one JSON line, fails on an "error".
vm_qmp() {
	local sock=$1 i
	shift
	for i in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
	python3 - "$sock" "$@" <<-'PY'
	import json, socket, sys
	s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rw")
	f.readline()
	for i, cmd in enumerate(['{"execute": "qmp_capabilities"}'] + sys.argv[2:]):
	    f.write(cmd + "\n"); f.flush()
	    while True:  # events may come first
	        r = json.loads(f.readline())
	        if "return" in r or "error" in r:
	            break
	    if "error" in r:
	        sys.exit("qmp %s: %s" % (cmd, r["error"].get("desc")))
	    if i > 0:
	        print(json.dumps(r["return"]))
	PY
}

# Small predicates for check.
out_is() { [ "$VM_OUT" = "$1" ]; }
# (the text on grep's stdin by a here-string, not printf | grep -q: grep -q leaves at the first match, printf
# writes line by line and dies of SIGPIPE, and pipefail turns the match into a miss: seen in CI on qemu/save)
out_has() { grep -Eq -- "$1" <<<"$VM_OUT"; }
# Not grep -q: it stops at the first match, tr then dies of SIGPIPE and pipefail turns a match into a failure
# (seen with a match early in a long systemd log).
# log_has ERE: a line of this boot's console (since vm_start, or since the last vm_reboot/vm_boot_mark) matches.
log_has() { vm_boot_log | grep -E -- "$1" >/dev/null; }
banner_has() { grep -Fq -- "$1" <<<"$VM_BANNER"; }
out_has_all() { # every WORD is a whole line of the output
	local w
	for w in "$@"; do grep -qx -- "$w" <<<"$VM_OUT" || return 1; done
}
# log_lacks ERE: this boot's console (as log_has) is there and no line of it matches ERE (a missing log is no
# absence).
log_lacks() {
	[ -s "$VM_LOG" ] || { vm_note "log_lacks: no console log $VM_LOG"; return 1; }
	no_line "$1" <(vm_boot_log)
}
# vm_fact CMD WANT: one fact about the guest in one check: CMD succeeds there and prints exactly WANT.
vm_fact() {
	vm_run "$1" ${3:+"$3"} && [ "$VM_OUT" = "$2" ] && return 0
	vm_note "vm_fact: expected: $2"
	return 1
}
# vm_none CMD [ERE]: an absence in the guest: CMD succeeds and no line of its output matches ERE (default: prints
# nothing). A CMD that fails (a missing file, a dead VM) is not an absence.
vm_none() {
	vm_run "$1" ${3:+"$3"} || { vm_note "vm_none: '$1' failed (exit $?): not an absence"; return 1; }
	no_line "${2:-.}" <<<"$VM_OUT"
}
# vm_show_out: after a FAIL line, what the guest said last (CHECK_ON_FAIL, tests/lib.sh).
vm_show_out() { [ -z "$VM_OUT" ] || printf '%s\n' "$VM_OUT" | tail -n 15 | sed 's/^/#   guest: /' >&2; }


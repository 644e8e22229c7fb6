# shellcheck shell=bash
# shellcheck disable=SC2034 # VM_BANNER, VM_T0, VM_T_MATCH are set here for the scenarios and bench/boot
# Host-side qemu harness, sourced by every tests/qemu/*.sh scenario and by bench/boot (runs on the build host).
# One VM at a time: vm_start, vm_wait, vm_login, vm_run, vm_reboot, vm_stop; check and finish count results.
# The serial console goes through `-serial pipe:` FIFOs and is appended, raw, to $OUT/tests/qemu/NAME.log.
set -uo pipefail
export LC_ALL=C # byte offsets into the log are computed with ${#var}: they must be bytes, not characters

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
OUT=${OUT:-$TOP/out}
ISO=${ISO:-$OUT/liveunion.iso}
VM_MEM=${VM_MEM:-512}
VM_MACHINE=${VM_MACHINE:-pc} # q35: AHCI, PCIe (tests/qemu/pc-hardware.sh)
VM_SMP=${VM_SMP:-1} # virtual CPUs (boot-cd-bios.sh runs 2: the tiny kernel is SMP)
VM_TIMEOUT=${VM_TIMEOUT:-300}           # hard limit for one qemu process
VM_WAIT_TIMEOUT=${VM_WAIT_TIMEOUT:-120} # default for vm_wait and vm_run
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-240} # boot to login prompt (UEFI under TCG is slow)
VM_POLL=${VM_POLL:-0.1}
OVMF=${OVMF:-/usr/share/ovmf/OVMF.fd}
VM_QEMU=${VM_QEMU:-qemu-system-x86_64}

VM_NAME='' VM_LOG='' VM_DIR='' VM_PID='' VM_CAT='' VM_IN='' VM_MARK=0 VM_OUT='' VM_MATCH='' VM_BANNER='' VM_SEQ=0
# VM_T0 (qemu start) and VM_T_MATCH (last vm_wait match), in ms, are read by bench/boot.
VM_T0=0 VM_T_MATCH=0
T_PASS=0 T_FAIL=0
LIB_CLEANUP=() # commands (strings) run at exit after the VM is stopped, e.g. removing a scenario's temp files

now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }
vm_note() { printf '# %s\n' "$*" >&2; }

# vm_start NAME MODE IMAGE [qemu args...]: MODE is cd-bios, cd-uefi, usb-bios, usb-uefi, or kernel
# (no medium of ours attached: the extra args bring -kernel/-initrd/-append and any disks; IMAGE may be "").
vm_start() {
	local name=$1 mode=$2 image=$3 media=()
	shift 3
	[ -z "$VM_PID" ] || vm_stop
	case "$mode" in
	cd-* | usb-*)
		[ -f "$image" ] || { vm_note "vm_start: image '$image' does not exist"; return 1; } ;;
	kernel) ;;
	*) vm_note "vm_start: unknown mode '$mode'"; return 1 ;;
	esac
	case "$mode" in
	*-uefi) media+=(-bios "$OVMF") ;; # the combined image keeps its variables in memory: nothing to copy
	esac
	case "$mode" in
	cd-*) media+=(-drive "file=$image,if=ide,index=2,media=cdrom,readonly=on" -boot order=d) ;;
	usb-*) # snapshot=on: the guest may write to its "stick", the image on the host never changes
		# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
		media+=(-device qemu-xhci,id=xhci
			-drive "if=none,id=stick,format=raw,file=$image,snapshot=on"
			-device usb-storage,bus=xhci.0,drive=stick,bootindex=1) ;;
	esac
	VM_NAME=$name
	mkdir -p "$OUT/tests/qemu" || return 1
	VM_LOG=$OUT/tests/qemu/$name.log
	: >"$VM_LOG" || return 1
	VM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-vm.XXXXXX") || return 1
	mkfifo "$VM_DIR/con.in" "$VM_DIR/con.out" || return 1
	# cat copies each read() straight to the log; tr or sed would buffer and hide the newest output.
	cat "$VM_DIR/con.out" >>"$VM_LOG" &
	VM_CAT=$!
	VM_MARK=0 VM_SEQ=0 VM_OUT='' VM_MATCH='' VM_BANNER=''
	printf '%s\n' "$VM_QEMU -accel tcg -M $VM_MACHINE -smp $VM_SMP -m $VM_MEM ${media[*]} $*" >"$VM_DIR/cmd"
	VM_T0=$(now_ms)
	timeout -k 5 "$VM_TIMEOUT" "$VM_QEMU" -accel tcg -M "$VM_MACHINE" -smp "$VM_SMP" -m "$VM_MEM" \
		-display none -vga std -nic none -monitor none -parallel none \
		-serial "pipe:$VM_DIR/con" "${media[@]}" "$@" </dev/null >"$VM_DIR/qemu.err" 2>&1 &
	VM_PID=$!
	# Read-write open: never blocks on qemu's side of the FIFO, and our writes never hit a closed pipe.
	exec {VM_IN}<>"$VM_DIR/con.in"
	vm_note "$name: qemu pid $VM_PID, console log $VM_LOG"
}

vm_alive() { [ -n "$VM_PID" ] && kill -0 "$VM_PID" 2>/dev/null; }

vm_since_mark() { tail -c +$((VM_MARK + 1)) "$VM_LOG" 2>/dev/null; }
# vm_mark: later waits only look at output from here on; vm_run cuts its command's output from here.
vm_mark() { VM_MARK=$(stat -c %s "$VM_LOG"); VM_MARK_RUN=$VM_MARK; }
VM_MARK_RUN=0

vm_tail_log() {
	vm_note "---- last 40 lines of $VM_LOG ----"
	tail -n 40 "$VM_LOG" | tr -d '\r' | sed 's/^/| /' >&2
	[ -s "$VM_LOG" ] || vm_note "(the console printed nothing: the firmware or boot loader never reached the kernel's serial console)"
	[ -s "$VM_DIR/qemu.err" ] && sed 's/^/qemu: /' "$VM_DIR/qemu.err" >&2
	vm_note "----"
}

# vm_wait REGEX [TIMEOUT]: first console line after the mark that matches REGEX (grep -E); the mark moves past it.
vm_wait() {
	local re=$1 to=${2:-$VM_WAIT_TIMEOUT} deadline line off size dead=0
	deadline=$(($(now_ms) + to * 1000))
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
		[ "$(now_ms)" -lt "$deadline" ] || { vm_note "$VM_NAME: no /$re/ within ${to}s"; vm_tail_log; return 1; }
		sleep "$VM_POLL"
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
	vm_wait "@@Q$n@@" 30
}

# vm_login: log in as root on the console (empty password), keep what was shown in VM_BANNER.
vm_login() {
	local start
	vm_mark
	vm_wait 'login: *' "$VM_BOOT_TIMEOUT" || return 1
	start=$VM_MARK
	vm_send root
	vm_wait '[Pp]assword:|# ' 60 || return 1
	case "$VM_MATCH" in
	*assword:*) vm_send '' && vm_wait '# ' 60 || return 1 ;;
	esac
	VM_BANNER=$(tail -c +$((start + 1)) "$VM_LOG" | head -c $((VM_MARK - start)) | tr -d '\r')
	vm_quiet
}

# vm_run CMD [TIMEOUT]: run CMD in the guest shell (stdin /dev/null, stderr merged); output in VM_OUT, returns its status.
# CMD runs in the current shell (cd and variables persist); it travels as one tty line: keep it under ~4000 bytes.
vm_run() {
	local cmd=$1 to=${2:-$VM_WAIT_TIMEOUT} n rc
	n=$((++VM_SEQ))
	VM_OUT=''
	vm_mark
	vm_send "echo '@@B''$n@@'; { $cmd
} </dev/null 2>&1; echo \"@@E\"'$n'\"@@ \$?\"" || { vm_note "vm_run: qemu is not running"; return 255; }
	vm_wait "@@E$n@@ [0-9]+"$'\r'"?\$" "$to" || return 255
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

# vm_reboot: reboot the guest in the same qemu process and log in again on the next boot.
vm_reboot() {
	vm_mark
	vm_send reboot || return 1
	vm_login
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

lib_exit() {
	local c
	vm_stop
	for c in "${LIB_CLEANUP[@]}"; do eval "$c"; done
}
trap lib_exit EXIT
trap 'exit 130' INT TERM

# check NAME COMMAND...: one assertion.
check() {
	local name=$1
	shift
	if "$@"; then
		printf 'ok %s\n' "$name"
		T_PASS=$((T_PASS + 1))
	else
		printf 'FAIL %s\n' "$name"
		T_FAIL=$((T_FAIL + 1))
		[ -n "$VM_OUT" ] && printf '%s\n' "$VM_OUT" | tail -n 15 | sed 's/^/#   guest: /' >&2
		return 1
	fi
}

# require NAME COMMAND...: like check, but nothing after it can be meaningful when it fails.
require() { check "$@" || finish; }

# finish: the summary line; the log is kept either way (it is small and the runner may want it).
finish() {
	printf '%s passed, %s failed\n' "$T_PASS" "$T_FAIL"
	[ "$T_FAIL" -eq 0 ] && [ "$T_PASS" -gt 0 ] && exit 0
	[ -n "$VM_LOG" ] && vm_note "console log kept: $VM_LOG"
	exit 1
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
out_has() { printf '%s\n' "$VM_OUT" | grep -Eq -- "$1"; }
fails() { ! "$@"; }
# Not grep -q: it stops at the first match, tr then dies of SIGPIPE and pipefail turns a match into a failure
# (seen with a match early in a long systemd log).
log_has() { tr -d '\r' <"$VM_LOG" | grep -E -- "$1" >/dev/null; }

# boot_scenario MODE: the issue-2 assertions for one way of booting the ISO (boot-*.sh call this).
boot_scenario() {
	local mode=$1 token version
	version=$(cat "$TOP/VERSION")
	token="liveunion-$mode-$$-$RANDOM"
	require iso-exists test -f "$ISO"
	require "$mode-qemu-starts" vm_start "boot-$mode" "$mode" "$ISO"
	require "$mode-login" vm_login
	check banner-shows-version banner_has "liveunion $version"
	# every CPU qemu gives is used (CONFIG_SMP): nproc counts the CPUs the kernel brought online
	check "nproc-runs" vm_run nproc
	check "nproc-is-$VM_SMP" out_is "$VM_SMP"
	vm_run "grep ' / ' /proc/mounts | tail -n 1"
	check root-is-overlay out_has '^[^ ]+ / overlay '
	check overlay-upper-is-run-live-upper out_has 'upperdir=/run/live/upper/upper,'
	check overlay-lower-has-10-base out_has 'lowerdir[+]?=[^ ]*/run/live/layers/10-base'
	vm_run "grep ' /run/live/medium ' /proc/mounts"
	check medium-mounted-ro out_has '^[^ ]+ /run/live/medium [^ ]+ ro[, ]'
	case "$mode" in # the medium must be the device this mode attached, not some other path to the image
	cd-*) check medium-is-the-cd out_has '^/dev/sr[0-9]+ ' ;;
	usb-*) check medium-is-the-usb-disk out_has '^/dev/sd[a-z]+[0-9]* ' ;;
	esac
	check medium-write-fails fails vm_run "echo x >/run/live/medium/$token"
	check medium-write-error-is-read-only out_has 'Read-only file system'
	check medium-has-no-written-file fails vm_run "test -e /run/live/medium/$token"
	check root-write-works vm_run "echo $token >/$token && sync && cat /$token"
	check root-write-reads-back out_is "$token"
	check root-write-lands-in-upper vm_run "test -f /run/live/upper/upper/$token"
	check run-live-lists-stack vm_run 'ls -1 /run/live'
	check run-live-has-medium-layers-upper-plan out_has_all medium layers upper plan
	check layer-10-base-mounted vm_run "grep ' /run/live/layers/10-base squashfs ro' /proc/mounts"
	check plan-is-key-value vm_run "grep -c '^[a-z][a-z0-9._]*=' /run/live/plan"
	check plan-has-lines out_has '^[1-9][0-9]*$'
	# the init's whole story is in dmesg (first and last line), and the kernel's limit on writers is back on
	check dmesg-has-init-start vm_run "dmesg | grep -c 'liveunion: init '"
	check dmesg-has-switch vm_run "dmesg | grep -c 'liveunion: switching to '"
	check devkmsg-limit-restored vm_run 'cat /proc/sys/kernel/printk_devkmsg'
	check devkmsg-limit-is-ratelimit out_is ratelimit
	require reboot-in-same-vm vm_reboot
	check banner-after-reboot banner_has "liveunion $version"
	vm_run "grep ' / ' /proc/mounts | tail -n 1"
	check root-is-overlay-after-reboot out_has '^[^ ]+ / overlay '
	check written-file-gone-after-reboot vm_run "test ! -e /$token && test ! -e /run/live/upper/upper/$token"
	vm_stop
	finish
}
banner_has() { printf '%s\n' "$VM_BANNER" | grep -Fq -- "$1"; }
out_has_all() {
	local w
	for w in "$@"; do printf '%s\n' "$VM_OUT" | grep -qx -- "$w" || return 1; done
}

# conformance_iso: $OUT/tests/conformance.iso = the built kernel, initramfs and 10-base plus the 50-middle and
# 90-conformance test layers (tests/conformance/mklayer.sh): three squashfs lowers. Both steps are cached by their
# inputs and never rebuild a build stage.
CONFORMANCE_ISO=$OUT/tests/conformance.iso
conformance_iso() {
	"$TOP/tests/conformance/mklayer.sh" >&2 &&
		"$TOP/build.sh" iso-with "$CONFORMANCE_ISO" "$OUT/tests/50-middle.squashfs" "$OUT/tests/90-conformance.squashfs" >&2
}
# The overlayfs limits README.md (Tests) documents for the init's options with a tmpfs upper (index=on,
# redirect_dir=on, kernel/patches/0002 and 0003): the conformance scenarios fail on any other known-limit line.
# shellcheck disable=SC2034 # read by unionfs-conformance.sh and profile-debian-conformance.sh
CONFORMANCE_KNOWN_LIMITS='mmap.shared-lower-then-write namemax.lower-256-remove'

#!/usr/bin/env bash
# summary: dm-verity: a copy of the ISO with a verified layer deleted stops the boot naming it; one flipped byte in a layer of a copy of the ISO stops the boot naming the layer (live.verify from the menu; live.check for a block the mount never reads); a tampered block read later is an I/O error; live.verify=off boots with a warning and reads the altered data
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"

# said_failed: the init said layer 20-data FAILED: the console line, or (if a kernel message tore it on the console) the same record in the kernel log
# shellcheck disable=SC2317 # called through check
said_failed() {
	log_has '^liveunion: live\.check: layer 20-data FAILED' && return 0
	vm_quiet && vm_run 'dmesg | grep -c "liveunion: live\.check: layer 20-data FAILED"' && out_has '^[1-9]'
}

iso=$OUT/tests/verity.iso
head_bad=$OUT/tests/verity-damaged-head.iso
mid_bad=$OUT/tests/verity-damaged-middle.iso
no_layer=$OUT/tests/verity-no-20-data.iso
at_exit "rm -f '$head_bad' '$mid_bad' '$no_layer'"

# 20-data: one 2 MiB incompressible file, so a byte offset in the layer is a byte of /data/blob.
mkdir -p "$MDIR/20-data/data"
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(20).randbytes(2 << 20))' >"$MDIR/20-data/data/blob"
echo clean >"$MDIR/20-data/data/small"
blob_sum=$(sha256sum <"$MDIR/20-data/data/blob" | cut -d' ' -f1)
require test-iso-built "$TOP/build.sh" iso-with "$iso" "$MDIR/20-data"
check menus-carry-both-root-hashes test "$(iso_menu_lines "$iso" | grep -cE 'live\.verify=10-base:[0-9a-f]{64},20-data:[0-9a-f]{64}( |$)')" = 6
read -r off size < <(iso_file_offset "$iso" /live/20-data.squashfs)
require layer-located test -n "${off:-}" -a "${size:-0}" -gt $((2 << 20))
# Byte 8192 of the layer: inside the first 64 KiB the init reads through dm-verity at mount (and inside
# /data/blob). Byte 1 MiB: in the middle of /data/blob, a block nothing reads at boot.
cp "$iso" "$head_bad" && cp "$iso" "$mid_bad"
require head-byte-flipped flip_byte "$head_bad" $((off + 8192))
require middle-byte-flipped flip_byte "$mid_bad" $((off + (1 << 20)))
check copies-differ-by-one-byte test "$(cmp -l "$iso" "$head_bad" | wc -l)" = 1

# 1. The flipped head under the menus' command line (live.verify=): the boot stops.
# Kernel-mode boots with loglevel=4 from here on: the kernel's info lines on the serial console cannot
# cut into the init's lines the checks read (the menus carry the same command line, checked above).
require qemu-starts-head vm_start verity-head cd-bios "$head_bad" --keys "loglevel=4"
require rescue-prompt-head vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
check head-names-the-layer log_has '^liveunion: layer 20-data \([^)]*20-data\.squashfs\): the data in bytes 8192-[0-9]+ does not match its root hash from live\.verify=.*: I/O error$'
check head-step-layers-failed log_has '^liveunion: step layers failed'
check head-10-base-was-fine log_has '^liveunion: layer 10-base: dm-verity /dev/dm-0'
check head-no-login log_lacks 'login: *$'
# Leaving the shell retries the step, and the init can still speak on the console the shell hung up.
require head-shell-quiet vm_quiet
vm_mark
vm_send exit
check head-retry-said vm_wait '^liveunion: rescue shell exited: retrying step layers' 30
check head-retry-unmounts-10-base vm_wait '^liveunion: layer 10-base: unmounted /run/live/layers/10-base left by an earlier try' 30
check head-retry-fails-again vm_wait '^liveunion: layer 20-data \(.*: I/O error' 30
vm_stop

# 2. The same ISO with live.verify=off: boots, warns, and the altered byte is read silently.
require qemu-starts-off vm_start verity-off cd-bios "$head_bad" --keys "loglevel=4 live.verify=off"
require login-off vm_login
check off-warns log_has '^liveunion: WARNING: live\.verify=off: the layers are not verified'
check off-stack-unverified log_has '^liveunion: stack, bottom to top \(2 layer\(s\), unverified\): 10-base 20-data$'
check off-no-dm-device vm_none 'cat /proc/mounts' '^/dev/dm-'
check off-reads-altered-data vm_run 'sha256sum /data/blob | cut -d" " -f1'
check off-altered-data-differs fails out_is "$blob_sum"
vm_stop

# 3. The flipped middle under live.verify: the mount reads only the first and last blocks, so the system
# boots; reading the file is then an I/O error, never the altered data.
require qemu-starts-middle vm_start verity-middle cd-bios "$mid_bad" --keys "loglevel=4"
require login-middle vm_login
check middle-clean-file-reads vm_fact 'cat /data/small' clean
check middle-blob-is-io-error fails vm_run 'cat /data/blob >/dev/null'
check middle-blob-error-text out_has 'I/O error|Input/output error'
check middle-kernel-names-corruption vm_run 'dmesg | grep -c "verity.*is corrupted"'
check middle-kernel-count out_has '^[1-9]'
vm_stop

# 4. The flipped middle under live.check: every layer read in full at boot; stops naming the layer.
require qemu-starts-check vm_start verity-check cd-bios "$mid_bad" --keys "loglevel=4 live.check"
require rescue-prompt-check vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
check check-10-base-passed log_has 'layer 10-base passed: [0-9]+ bytes read through dm-verity'
check check-progress-line log_has 'live\.check 10-base: [0-9.]+ / [0-9.]+ MiB \(100%\), [0-9.]+ MB/s'
check check-progress-where-it-stopped log_has '^liveunion: live\.check 20-data: 1\.0 / 2\.0 MiB \(49%\)'
check check-names-the-layer log_has '^liveunion: layer 20-data \([^)]*20-data\.squashfs\): the data in bytes 1048576-[0-9]+ does not match its root hash .*: I/O error$'
check check-says-failed said_failed
check check-no-login log_lacks 'login: *$'
vm_stop

# 5. The undamaged ISO under live.check: every layer passes and the system boots.
require qemu-starts-clean vm_start verity-clean cd-bios "$iso" --keys "loglevel=4 live.check"
require login-clean vm_login
check clean-both-passed log_has '^liveunion: live\.check: layer 20-data passed: [0-9]+ bytes read through dm-verity'
check clean-plan-check-result vm_fact 'grep "^check.result=" /run/live/plan' 'check.result=passed: 2 layer(s) read in full'
check clean-blob-intact vm_fact 'sha256sum /data/blob | cut -d" " -f1' "$blob_sum"
check clean-plan-covers vm_fact 'grep "^verify.covers=" /run/live/plan' 'verify.covers=10-base,20-data'
check clean-plan-outside vm_fact 'grep "^verify.outside=" /run/live/plan' 'verify.outside=upper:tmpfs'
vm_stop

# 6. The attack on the verified set: 20-data.squashfs and 20-data.verity deleted from a copy, the menus (both root
# hashes) and the medium's UUID kept. The boot stops naming the missing layer and what it found; with live.layers=
# leaving it out (the same command line a UKI signs) it boots.
require layer-deleted iso_without "$iso" "$no_layer" /live/20-data.squashfs /live/20-data.verity
check copy-lacks-the-layer fails iso_file_offset "$no_layer" /live/20-data.squashfs
check copy-keeps-both-hashes test "$(iso_menu_lines "$no_layer" | grep -c '20-data:[0-9a-f]\{64\}')" = 6
require qemu-starts-missing vm_start verity-missing cd-bios "$no_layer" --keys "loglevel=4"
require rescue-prompt-missing vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
check missing-named log_has '^liveunion: choose layers in .*: live\.verify= has a root hash for layer 20-data, which is not on the medium as live/20-data\.squashfs \(found: 10-base\)'
check missing-step-layers-failed log_has '^liveunion: step layers failed'
check missing-no-login log_lacks 'login: *$'
vm_stop
require qemu-starts-left-out vm_start verity-left-out cd-bios "$no_layer" --keys "loglevel=4 live.layers=-data"
require login-left-out vm_login
check left-out-plan-covers vm_fact 'grep "^verify.covers=" /run/live/plan' 'verify.covers=10-base'
check left-out-no-data vm_none 'ls /' '^data$'
vm_stop
finish

#!/usr/bin/env bash
# summary: vm_boot --snapshot: a scenario run twice by liveunion-check on the tiny ISO: the first run boots (kernel lines on its console), logs in and takes the snapshot, then writes a file; the second starts from the snapshot (no kernel line, no boot), its shell answers at once and the file written after the snapshot is not there; the seconds from qemu start to a shell of both runs are printed
# shellcheck source=tests/qemu/lib/check.bash
. "$(dirname "$0")/lib/check.bash"
work=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-check-snapshot.XXXXXX")
at_exit "rm -rf '$work'"
cat >"$work/snap.sh" <<'SCN'
# snap.sh: a machine from its snapshot
t0=$(now_ms)
require booted vm_boot --snapshot
require login vm_login
vm_note "qemu start to a shell: $(($(now_ms) - t0)) ms"
check file-from-before-absent vm_run 'test ! -e /after-snapshot'
check file-written vm_run 'echo x >/after-snapshot'
check powers-off vm_poweroff
SCN
ISO=${ISO:-$OUT/liveunion.iso}
for run in 1 2; do
	rc=0
	"$TOP/tests/check/liveunion-check" --iso "$ISO" --out "$work/out" "$work/snap.sh" >"$work/tap$run" 2>&1 || rc=$?
	sed "s/^/#   run $run: /" "$work/tap$run" >&2
	check "run-$run-passes" test "$rc" -eq 0
	cp "$work/out/tests/snap/snap.log" "$work/console$run"
done
check run-1-took-the-snapshot grep -q '^# snap: snapshot .*\.qcow2 taken in [0-9]* ms$' "$work/tap1"
check run-1-booted grep -q 'Linux version' "$work/console1"
check run-2-started-from-it grep -q '^# snap: started from the snapshot ' "$work/tap2"
check run-2-did-not-boot no_line 'Linux version|liveunion: init ' "$work/console2"
check run-2-file-written-in-run-1-absent grep -q '^ok 3 - snap/file-from-before-absent$' "$work/tap2"
t1=$(sed -n 's/^# qemu start to a shell: \([0-9]*\) ms$/\1/p' "$work/tap1")
t2=$(sed -n 's/^# qemu start to a shell: \([0-9]*\) ms$/\1/p' "$work/tap2")
vm_note "qemu start to a shell: booted ${t1:-?} ms, from the snapshot ${t2:-?} ms"
check snapshot-is-quicker test "${t2:-99999999}" -lt "${t1:-0}"
finish

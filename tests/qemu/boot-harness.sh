#!/usr/bin/env bash
# summary: the qemu harness itself: vm_run returns the guest's exit status and exactly the command's output; a hung guest and a dead VM fail a test through vm_run and through `fails vm_run`, and an absence check fails on a command that failed
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "$0")/lib/vm.bash"

require iso-exists test -f "$ISO"
require qemu-starts vm_start boot-harness cd-bios "$ISO"
require login vm_login
check status-zero vm_run true
check status-one-propagates fails vm_run false
vm_run '(exit 7)'
check status-seven test $? = 7
vm_run 'printf no-newline'
check output-without-newline out_is no-newline
vm_run 'printf "a\nb\n\nc\n"'
check output-multiline out_is $'a\nb\n\nc'
vm_run 'echo to-stderr >&2'
check stderr-captured out_is to-stderr
vm_run "echo \"it's \\\"quoted\\\"\""
check quotes-survive out_is "it's \"quoted\""
long=$(printf 'x%.0s' $(seq 1 1500))
vm_run "echo $long | wc -c"
check long-command out_is 1501
vm_run 'cd /tmp && v=kept'
# shellcheck disable=SC2016 # $v is the guest's variable
vm_run 'pwd; echo "$v"'
check shell-state-kept out_is $'/tmp\nkept'
check stdin-is-not-the-console vm_run 'cat; echo after-cat'
check stdin-output out_is after-cat
check fact-one-check vm_fact 'echo one; echo two' $'one\ntwo'
check fact-wrong-output-fails fails vm_fact 'echo one' two
check none-when-absent vm_none 'ls -1 /' '^no-such-entry$'
check none-fails-when-present fails vm_none 'ls -1 /' '^etc$'
check none-fails-when-the-command-fails fails vm_none 'ls /no/such/dir'
check log-lacks-absent log_lacks 'no such line, ever'
check log-lacks-fails-when-present fails log_lacks 'login: *'

# The harness on a VM that cannot answer. Each probe is a check run in a subshell with counts and a harness-error
# file of its own (tests/lib.sh: T_BROKEN), so the failures it was meant to cause stay out of this test's counts.
# shellcheck disable=SC2317 # probes run through check
probe_failed() { # probe_failed WHAT COMMAND...: `check probe COMMAND...` said FAIL, not ok, and the harness named WHAT
	local out
	out=$( (T_BROKEN=$VM_WORK/probe.broken && rm -f "$T_BROKEN" && check probe "${@:2}"; cat "$T_BROKEN") 2>/dev/null)
	grep -qx 'FAIL probe' <<<"$out" && ! grep -qx 'ok probe' <<<"$out" && grep -q -- "$1" <<<"$out" && return 0
	printf '#   probe said: %s\n' "$out" >&2
	return 1
}
# A hung guest: the command does not end in time.
check hung-vm-run-fails probe_failed 'did not end within 2s' vm_run 'sleep 6' 2
check hung-fails-vm-run-fails probe_failed 'did not end within 2s' fails vm_run 'sleep 6' 2
check guest-answers-after-hang vm_wait '@@E[0-9]+@@ 0' 30
# A dead VM: qemu killed under the running test.
vm_powercut
check dead-vm-run-fails probe_failed 'is not running' vm_run true
check dead-fails-vm-run-fails probe_failed 'is not running' fails vm_run true
check dead-vm-none-fails probe_failed 'is not running' vm_none 'ls -1 /' '^no-such-entry$'
check dead-vm-fact-fails probe_failed 'is not running' fails vm_fact true x
# Outside a check too: a dead VM under a bare vm_run fails the whole test.
# shellcheck disable=SC2317
dead_run_fails_test() {
	local out rc
	out=$( (T_BROKEN=$VM_WORK/bare.broken T_PASS=1 T_FAIL=0 && rm -f "$T_BROKEN" && vm_run true; finish) 2>/dev/null) &&
		rc=0 || rc=$?
	[ "$rc" -eq 1 ] && grep -qx '1 passed, 1 failed, 0 skipped' <<<"$out" && return 0
	printf '#   said: %s (exit %s)\n' "$out" "$rc" >&2
	return 1
}
check dead-bare-vm-run-fails-the-test dead_run_fails_test
finish

#!/usr/bin/env bash
# summary: the qemu harness itself: vm_run returns the guest's exit status and exactly the command's output
# shellcheck source=tests/qemu/lib.sh
. "$(dirname "$0")/lib.sh"

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
vm_stop
finish

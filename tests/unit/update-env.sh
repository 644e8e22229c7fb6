#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check and require (tests/lib.sh)
# summary: liveunion update --env on GRUB environment blocks: Debian's grub-editenv reads what it writes and it reads what grub-editenv writes; --good ends a trial, --rollback switches and records a slot on trial as failed, another variable is kept, a file that is not a 1024-byte block is refused untouched
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
LU=$OUT/liveunion/liveunion
require "make -C liveunion builds the command" make -s -C "$TOP/liveunion" OUT="$OUT"
require "grub-editenv (Debian package grub-common)" command -v grub-editenv
W=$(mktemp -d "${TMPDIR:-/tmp}/update-env.XXXXXX")
at_exit "rm -rf '$W'"
env=$W/grubenv
lu() { "$LU" update --env "$env" "$@" >"$W/out" 2>&1; }
said() { grep -qx -- "$1" "$W/out"; }
list() { grub-editenv "$env" list >"$W/list" 2>&1; }
listed() { list && grep -qx -- "$1" "$W/list"; }

# a block as the stick's GRUB leaves it after an update's first boot: slot b on trial, 2 tries left
check made-by-grub-editenv grub-editenv "$env" set slot=b tries=2 failed= other=kept
check status lu --status
check status-boots-b said 'slot b boots'
check status-on-trial said 'slot b is on trial: 2 boot(s) left before slot a boots again'
check good lu --good
check good-said said 'liveunion: slot b came up healthy: kept (slot a stays the way back)'
check good-ends-trial listed 'tries='
check good-keeps-slot listed 'slot=b'
check good-keeps-other-variable listed 'other=kept'
check still-1024-bytes test "$(stat -c %s "$env")" = 1024
check good-again lu --good
check good-again-said said 'slot b is good already'
check rollback-good-slot lu --rollback
check rollback-switches listed 'slot=a'
check rollback-of-good-slot-no-failure listed 'failed='
check trial-again grub-editenv "$env" set slot=b tries=1
check rollback-trial lu --rollback
check rollback-trial-switches listed 'slot=a'
check rollback-trial-records-failed listed 'failed=b'
check status-says-rolled-back lu
check status-rolled-back-said said 'rolled back: slot b did not come up healthy in its tries'
# refusals, nothing written
printf 'not a block\n' >"$env"
check short-file-refused fails lu --good
check short-file-says said "liveunion update: $env: not a 1024-byte GRUB environment block"
check short-file-untouched test "$(cat "$env")" = 'not a block'
head -c 1024 /dev/zero | tr '\0' '#' >"$env"
check no-header-refused fails lu --rollback
check no-header-says said "liveunion update: $env: not a GRUB environment block (no header)"
check bad-option-usage fails lu --frob
finish

#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check and require (tests/lib.sh)
# summary: liveunion update --env on GRUB environment blocks: Debian's grub-editenv reads what it writes and it reads what grub-editenv writes; --good ends a trial, --rollback switches and records a slot on trial as failed, another variable is kept, a file that is not a 1024-byte block is refused untouched; a torn grubenv (zeroed sector, or a header and no slot=) read from grubenv.bak and both written whole (grubenv.bak first); tries= outside 0-3 and a backslash escape refused by --good; the block reader fuzzed (tests/fuzz/update-env.c)
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
# Double-buffered: a grubenv torn by a power cut (its first sector zeroed, or the new sector over the old one's end
# missing) is read from grubenv.bak, as the menu reads it; --good then writes grubenv.bak, then grubenv, both whole.
rm -f "$env" && grub-editenv "$env" set slot=b tries=2 failed= && cp "$env" "$env.bak"
dd if=/dev/zero of="$env" bs=512 count=1 conv=notrunc status=none
check torn-status lu --status
check torn-reads-bak said 'slot b is on trial: 2 boot(s) left before slot a boots again'
check torn-says-so grep -q "$env: not a whole environment block (torn?): read $env.bak" "$W/out"
check torn-good lu --good
check torn-good-said said 'liveunion: slot b came up healthy: kept (slot a stays the way back)'
check torn-repaired listed 'slot=b'
check torn-repaired-tries listed 'tries='
check torn-bak-written sh -c "grub-editenv '$env.bak' list | grep -qx 'tries=' && grub-editenv '$env.bak' list | grep -qx slot=b"
check torn-still-1024-bytes test "$(stat -c %s "$env")" = 1024
# a header but no slot= (the start of a sector torn): grubenv.bak too
printf '# GRUB Environment Block\n' | dd of="$env" bs=512 count=1 conv=notrunc,sync status=none
grub-editenv "$env.bak" set slot=b tries=1
check half-torn-reads-bak lu --status
check half-torn-bak-said said 'slot b is on trial: 1 boot(s) left before slot a boots again'
# the switch writes grubenv.bak before grubenv: its copy is complete when grubenv is written
rm -f "$env" "$env.bak" && grub-editenv "$env" set slot=a && cp "$env" "$env.bak"
check rollback-writes-both lu --rollback
check rollback-bak-same cmp "$env" "$env.bak"
rm -f "$env.bak"
# tries= the menu does not count down (not 0-3): taken as 0 there, so --good refuses and says why
grub-editenv "$env" set slot=b tries=7
check tries-7-status lu --status
check tries-7-status-said said 'slot b: tries=7 is not 0-3: the menu takes it as 0 and boots slot a next'
check tries-7-good-refused fails lu --good
check tries-7-good-says said "liveunion update: $env: tries= is not 0-3: the stick's menu takes it as 0 and boots the other slot next; nothing marked"
check tries-7-untouched listed 'tries=7'
# GRUB escapes a backslash or a newline in a value with a backslash: refused, not read wrong
grub-editenv "$env" set slot=b tries= note='a\b'
check backslash-refused fails lu --good
check backslash-says said "liveunion update: $env: a value holds a backslash escape, which no writer of a stick's block puts there: refusing to read or rewrite it"
check backslash-untouched grep -qF 'note=a\\b' "$env"
# the block reader under libFuzzer (clang, ASan/UBSan), from the committed seeds, for a bounded time
build_fuzz() {
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -Wno-unused-function -I"$TOP/liveunion/include" -I"$TOP/liveunion/lib" \
		-I"$TOP/liveunion/cmd" -o "$W/update-env-fuzz" "$TOP/tests/fuzz/update-env.c"
}
run_fuzz() {
	mkdir -p "$W/corpus" && cp "$TOP"/tests/fuzz/corpus/update-env/* "$W/corpus/" || return 1
	fuzz_run "$W/fuzz.log" "$W/update-env-fuzz" "${UPDATE_ENV_FUZZ_SECONDS:-5}" "$W/corpus" -max_len=1024
}
check "build the block reader's fuzz target (tests/fuzz/update-env.c)" build_fuzz
check "fuzz the block reader, ${UPDATE_ENV_FUZZ_SECONDS:-5} s" run_fuzz
finish

#!/usr/bin/env bash
# summary: the test harness itself (tests/lib.sh, tests/run): a failed check, a harness error under `fails`, an
# absence that is really a failed command, and a skip each fail what they should; tests/run sums skips and fails
# the run on one unless LIVEUNION_ALLOW_SKIPS=1; a test without a summary line fails. No VM (boot-harness has it).
# shellcheck disable=SC2317 # its functions run through check
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-harness.XXXXXX")
at_exit "rm -rf '$W'"

# A throw-away test tree: tests/run and tests/lib.sh as they are, and scripts that pass, fail, skip, or say nothing.
mkdir -p "$W/tree/tests/unit"
cp "$TOP/tests/run" "$TOP/tests/lib.sh" "$W/tree/tests/"
script() { # NAME BODY: a unit script of the throw-away tree
	# shellcheck disable=SC2016 # the $(...) is the script's own
	printf '#!/usr/bin/env bash\n. "$(dirname "$0")/../lib.sh"\n%s\n' "$2" >"$W/tree/tests/unit/$1.sh"
}
script passes 'check one true; finish'
script fails 'check one true; check two false; finish'
script skips 'check one true; skip two "not here"; finish'
script silent 'exit 0'
script broken 'check one fails harness_error "a dead VM"; finish'
script bare-error 'check one true; (harness_error "in a subshell"); finish'
run() { (OUT=$W/out "$W/tree/tests/run" "$@" >"$W/run.out" 2>&1); }
said() { grep -Eq -- "$1" "$W/run.out" || { sed 's/^/#   | /' "$W/run.out" >&2; return 1; }; }

check run-passes run unit/passes
check run-passes-total said '^1 passed, 0 failed, 0 skipped'
check run-fails fails run unit/fails
check run-fails-total said '^1 passed, 1 failed, 0 skipped'
check run-skip-fails-the-run fails run unit/skips
check run-skip-is-shown said '^   \| skip two: not here$'
check run-skip-total said '^1 passed, 0 failed, 1 skipped'
allowed() { LIVEUNION_ALLOW_SKIPS=1 OUT=$W/out "$W/tree/tests/run" unit/skips >"$W/run.out" 2>&1; }
check run-skip-allowed allowed
check run-skip-allowed-said said '^LIVEUNION_ALLOW_SKIPS=1: the skips above do not fail this run$'
check run-no-summary-fails fails run unit/silent
check run-no-summary-said said "no 'N passed, N failed, N skipped' line from unit/silent"
check harness-error-under-fails-fails fails run unit/broken
check harness-error-under-fails-counted said '^0 passed, 2 failed, 0 skipped'
check harness-error-in-subshell-counted fails run unit/bare-error
check harness-error-in-subshell-total said '^1 passed, 1 failed, 0 skipped'
check run-sums-two fails run unit/passes unit/skips
check run-sums-two-total said '^2 passed, 0 failed, 1 skipped'

# The absence helpers: nothing found passes; something found, or a command or file that failed, does not.
printf 'a\nb\n' >"$W/ab"
check no-line-absent no_line '^c$' "$W/ab"
check no-line-present fails no_line '^b$' "$W/ab"
check no-line-missing-file fails no_line '^c$' "$W/nothere"
check absent-absent absent '^c$' cat "$W/ab"
check absent-present fails absent '^a$' cat "$W/ab"
check absent-command-failed fails absent '^c$' cat "$W/nothere"
check fact-right output_is $'a\nb' cat "$W/ab"
check fact-wrong fails output_is 'a' cat "$W/ab"
check fact-command-failed fails output_is '' cat "$W/nothere"
# Partitions: part_read and part_write find partition 2 of an MBR image and refuse a file larger than it.
truncate -s 4M "$W/disk"
printf 'start=2048, size=2048, type=83\nstart=4096, size=2048, type=83\n' | sfdisk -q "$W/disk" >/dev/null 2>&1
head -c 1M /dev/urandom >"$W/p2"
check part-write part_write "$W/disk" 2 "$W/p2"
check part-read-same cmp -s "$W/p2" <(part_read "$W/disk" 2)
check part-1-untouched test "$(part_read "$W/disk" 1 | tr -d '\0' | wc -c)" -eq 0
head -c 2M /dev/zero >"$W/big"
check part-write-refuses-too-big fails part_write "$W/disk" 2 "$W/big"
finish

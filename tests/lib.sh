# shellcheck shell=bash
# The one test harness (build host), sourced by every tests/unit/*.sh and, through tests/qemu/lib/vm.bash, by
# every qemu scenario. A test is a list of checks ending in finish:
#   check NAME COMMAND...       one assertion: prints `ok NAME` or `FAIL NAME`
#   ok NAME, bad NAME           the same for an outcome the script tells apart itself (bad prints FAIL NAME)
#   fact NAME WANT COMMAND...   one fact in one check: COMMAND succeeds and prints exactly WANT
#   require NAME COMMAND...     a check nothing after it can mean anything without: finish at once when it fails
#   skip NAME REASON            what this machine cannot check, and why: counted and shown, and tests/run fails
#                               the run for it unless LIVEUNION_ALLOW_SKIPS=1 (docs/tests.md)
#   no_line ERE [FILE...]       no line of the files (or stdin) matches ERE; a file that cannot be read is no absence
#   absent ERE COMMAND...       COMMAND succeeds and no line of its output matches ERE
#   finish                      `N passed, N failed, N skipped`, the exit status
#   needs_root WHY, private_mounts "$@" (re-runs the script in a mount namespace of its own)
#   part_read IMAGE N [FILE], part_write IMAGE N FILE: partition N of a disk image, out and back in
#   at_exit COMMAND             run at exit (after the VM is stopped, for the qemu scenarios)
[ -z "${LIVEUNION_TEST_LIB:-}" ] || return 0
LIVEUNION_TEST_LIB=1
set -uo pipefail
export LC_ALL=C

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
OUT=${OUT:-$TOP/out}
export TOP OUT
T_NAME=$(basename "$0" .sh)
T_PASS=0 T_FAIL=0 T_SKIP=0
# Where harness_error leaves its mark: a file, so that an error inside a subshell or a $(...) still counts.
T_BROKEN=${TMPDIR:-/tmp}/liveunion-test-$$.broken
CHECK_ON_FAIL=${CHECK_ON_FAIL:-} # a command run after each FAIL line (the qemu harness shows the guest's output)
LIB_CLEANUP=()

at_exit() { LIB_CLEANUP+=("$1"); }
lib_exit() {
	local c
	for c in "${LIB_CLEANUP[@]}"; do eval "$c"; done
	rm -f "$T_BROKEN"
}
trap lib_exit EXIT
trap 'exit 130' INT TERM

broken_count() { if [ -f "$T_BROKEN" ]; then wc -l <"$T_BROKEN"; else echo 0; fi; }

# harness_error WHAT: the harness could not do what a check asked (a dead or hung VM). It fails the test here,
# not through the caller's status, so no wrapper (fails, a helper, a negation) can turn it into a pass.
harness_error() {
	printf 'FAIL harness: %s\n' "$*"
	printf '%s\n' "$*" >>"$T_BROKEN"
}

ok() {
	printf 'ok %s\n' "$*"
	T_PASS=$((T_PASS + 1))
}
bad() {
	printf 'FAIL %s\n' "$*"
	T_FAIL=$((T_FAIL + 1))
	[ -z "$CHECK_ON_FAIL" ] || $CHECK_ON_FAIL
}

check() {
	local name=$1 broken
	shift
	broken=$(broken_count)
	if "$@" && [ "$(broken_count)" -eq "$broken" ]; then
		ok "$name"
	else
		bad "$name"
		# Under set -e (the setup steps of some unit scripts) a failed check must not end the script unsummed:
		# there the failure is only counted.
		[[ $- == *e* ]] || return 1
	fi
}

# output_is WANT COMMAND...: COMMAND succeeds and its standard output is WANT (what differs is shown).
output_is() {
	local want=$1 got rc
	shift
	got=$("$@") && rc=0 || rc=$?
	[ "$rc" -eq 0 ] && [ "$got" = "$want" ] && return 0
	printf '#   %s: exit %s, output:\n' "$*" "$rc" >&2
	printf '%s\n' "$got" | tail -n 15 | sed 's/^/#   | /' >&2
	printf '#   wanted:\n%s\n' "$want" | sed '2,$s/^/#   | /' >&2
	return 1
}
fact() {
	local name=$1
	shift
	check "$name" output_is "$@"
}

require() {
	local failed=$T_FAIL
	check "$@"
	[ "$T_FAIL" -eq "$failed" ] || finish
}

skip() {
	printf 'skip %s: %s\n' "$1" "$2"
	T_SKIP=$((T_SKIP + 1))
}

# fails COMMAND...: COMMAND fails (a harness error inside it fails the check all the same, see harness_error).
fails() { ! "$@"; }

no_line() {
	local re=$1 text
	shift
	text=$(cat -- "$@") || { printf '#   no_line: cannot read %s: not an absence\n' "${*:-its input}" >&2; return 1; }
	grep -Eq -- "$re" <<<"$text" || return 0
	printf '#   found: %s\n' "$(grep -E -m1 -- "$re" <<<"$text")" >&2
	return 1
}

absent() {
	local re=$1 out rc
	shift
	out=$("$@" 2>&1) && rc=0 || rc=$?
	if [ "$rc" -ne 0 ]; then
		printf '#   %s: exit %s (an error, not an absence): %s\n' "$*" "$rc" "$(printf '%s' "$out" | tail -n 3)" >&2
		return 1
	fi
	no_line "$re" <<<"$out"
}

finish() {
	local broken
	broken=$(broken_count)
	T_FAIL=$((T_FAIL + broken))
	printf '%s passed, %s failed, %s skipped\n' "$T_PASS" "$T_FAIL" "$T_SKIP"
	[ "$T_FAIL" -eq 0 ] && [ "$T_PASS" -gt 0 ] && exit 0
	exit 1
}

# fuzz_run LOG FUZZER SECONDS CORPUS [OPTION...]: a libFuzzer run of FUZZER from seed 1 for SECONDS over CORPUS (it
# adds what it finds there; a crash's input is kept beside LOG), OPTIONs passed on (-max_len=, -dict=, -timeout=).
# A crash, leak, UB report or violated invariant fails it with the log's last 30 lines; else its executions and new
# units are printed.
fuzz_run() {
	local log=$1 fuzzer=$2 seconds=$3 corpus=$4 dir
	shift 4
	dir=$(dirname "$log")
	if ! "$fuzzer" -artifact_prefix="$dir/" -seed=1 -max_total_time="$seconds" -print_final_stats=1 \
		"$@" "$corpus" >"$log" 2>&1; then
		tail -30 "$log"
		return 1
	fi
	grep -E '^stat::(number_of_executed_units|new_units_added)' "$log"
}

needs_root() {
	if [ "$(id -u)" -ne 0 ]; then
		bad "$T_NAME: needs root ($*)"
		finish
	fi
}

# private_mounts "$@": the rest of the script runs in a mount namespace of its own (mounts vanish with it).
private_mounts() {
	if [ -z "${LIVEUNION_TEST_NS:-}" ]; then
		LIVEUNION_TEST_NS=1 exec unshare -m --propagation private bash "$0" "$@"
	fi
}

# part_of IMAGE N: "OFFSET SIZE" in bytes of partition N of a disk image.
part_of() { partx -g -o START,SECTORS -n "$2" "$1" | awk '{ print $1 * 512, $2 * 512 }'; }
part_read() {
	local off size
	read -r off size < <(part_of "$1" "$2") && [ -n "${size:-}" ] || return 1
	dd if="$1" of="${3:-/dev/stdout}" bs=512 skip=$((off / 512)) count=$((size / 512)) status=none
}
part_write() {
	local off size
	read -r off size < <(part_of "$1" "$2") && [ -n "${size:-}" ] || return 1
	[ "$(stat -c %s "$3")" -le "$size" ] || return 1
	dd if="$3" of="$1" bs=512 seek=$((off / 512)) conv=notrunc status=none
}

#!/bin/bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# Host unit tests of the liveunion union reader library, under ASan/UBSan,
# plus a bounded libFuzzer run (20 s, seed 1) of its xattr/whiteout parsing.
# Needs root (0/0 whiteouts, trusted.* xattrs); writes only under $OUT/tests.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
umask 022
needs_root 0/0 whiteouts, trusted.* xattrs
B=$OUT/tests/union-lib
LIB=$TOP/rootfs/liveunion
mkdir -p "$B"
san=(-g -O1 "-fsanitize=address,undefined" -fno-sanitize-recover=all)
build_unit() {
	cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-format-truncation "${san[@]}" -I"$LIB" -o "$B/union-lib-test" \
		"$TOP/tests/unit/union-lib-test.c" "$LIB"/union_*.c
}
run_unit() {
	local t rc=0
	t=$(mktemp -d)
	ASAN_OPTIONS=detect_leaks=1 "$B/union-lib-test" "$t" || rc=$?
	rm -rf "$t"
	return "$rc"
}
build_fuzz() {
	clang -g -O1 -fsanitize=fuzzer,address,undefined -I"$LIB" -o "$B/union-xattr-fuzz" \
		"$TOP/tests/fuzz/union-xattr.c" "$LIB/union_xattr.c"
}
run_fuzz() {
	mkdir -p "$B/corpus"
	"$B/union-xattr-fuzz" -seed=1 -max_total_time="${UNION_FUZZ_SECONDS:-20}" -max_len=4200 \
		-dict="$TOP/tests/fuzz/union-xattr.dict" -print_final_stats=1 "$B/corpus" >"$B/fuzz.log" 2>&1 ||
		{ tail -30 "$B/fuzz.log"; return 1; }
	grep -E '^stat::(number_of_executed_units|new_units_added)' "$B/fuzz.log"
}
build_cmd() { make -s -C "$LIB" OUT="$OUT" >/dev/null; }

check "build unit tests (ASan/UBSan)" build_unit
check "library unit tests" run_unit
check "build fuzz target (libFuzzer)" build_fuzz
check "fuzz xattr/whiteout parsing, ${UNION_FUZZ_SECONDS:-20} s (libFuzzer, ASan/UBSan)" run_fuzz
check "build liveunion (-Wall -Wextra -Werror)" build_cmd
finish

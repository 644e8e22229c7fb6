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
LU=$TOP/liveunion
mkdir -p "$B"
build_unit() {
	local cf
	make -s -C "$LU" OUT="$OUT" san >/dev/null && read -ra cf < <(make -s -C "$LU" print-cflags-san) &&
		cc "${cf[@]}" -Wno-format-truncation -o "$B/union-lib-test" "$TOP/tests/unit/union-lib-test.c" \
			"$OUT/liveunion/san/libliveunion.a"
}
run_unit() {
	local t rc=0
	t=$(mktemp -d)
	ASAN_OPTIONS=detect_leaks=1 "$B/union-lib-test" "$t" || rc=$?
	rm -rf "$t"
	return "$rc"
}
build_fuzz() {
	local cf
	make -s -C "$LU" OUT="$OUT" fuzz >/dev/null && read -ra cf < <(make -s -C "$LU" print-cflags-fuzz) &&
		clang "${cf[@]}" -o "$B/union-xattr-fuzz" "$TOP/tests/fuzz/union-xattr.c" "$OUT/liveunion/fuzz/libliveunion.a"
}
run_fuzz() {
	mkdir -p "$B/corpus"
	fuzz_run "$B/fuzz.log" "$B/union-xattr-fuzz" "${UNION_FUZZ_SECONDS:-20}" "$B/corpus" -max_len=4200 \
		-dict="$TOP/tests/fuzz/union-xattr.dict"
}
build_cmd() { make -s -C "$LU" OUT="$OUT" >/dev/null; }

check "build unit tests (ASan/UBSan)" build_unit
check "library unit tests" run_unit
check "build fuzz target (libFuzzer)" build_fuzz
check "fuzz xattr/whiteout parsing, ${UNION_FUZZ_SECONDS:-20} s (libFuzzer, ASan/UBSan)" run_fuzz
check "build liveunion (-Wall -Wextra -Werror)" build_cmd
finish

#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check (tests/lib.sh)
# libFuzzer runs of the init's parsers of untrusted bytes (tests/fuzz/init-*.c: the ISO9660 identity, MBR/GPT,
# the FAT/exFAT block map, the ext4 superblock, the LUKS2 header, the store's meta file, network boot's MANIFEST, NBD replies, ip=, live.fetch= and live.nbd=, paths.conf, the command line), built with clang from the init's own
# flags under ASan and UBSan: each for INIT_FUZZ_SECONDS (default 10) with -seed=1, over a copy of its committed
# seed corpus (tests/fuzz/corpus/init-NAME, crash-* files included: every crash found once stays a case). A crash,
# leak, UB report or violated invariant fails it. bench/fuzz runs the same targets for longer.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
B=$OUT/tests/init-fuzz
SRC=$TOP/initramfs/init
FZ=$TOP/tests/fuzz
SECONDS_EACH=${INIT_FUZZ_SECONDS:-10}
TARGETS=(cmdline extsb fat iso luks meta net part paths) # in name order
mkdir -p "$B"
read -ra LIVE_CFLAGS <<<"$(make -s -C "$SRC" cflags)"
SAN=(-g -O1 '-fsanitize=address,undefined' -fno-sanitize-recover=all -fno-omit-frame-pointer)

# Every source of the init but main.c (libFuzzer has its own main) into one archive with coverage: a target
# links only what it calls.
build_lib() {
	local f o objs=()
	rm -rf "$B/obj" "$B/libinit.a"
	mkdir -p "$B/obj"
	for f in "$SRC"/*.c; do
		[ "${f##*/}" != main.c ] || continue
		o=$B/obj/$(basename "$f" .c).o
		clang "${LIVE_CFLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer-no-link -c -o "$o" "$f" || return 1
		objs+=("$o")
	done
	ar rcs "$B/libinit.a" "${objs[@]}"
}
build_target() {
	clang "${LIVE_CFLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer -I"$SRC" -o "$B/init-$1-fuzz" "$FZ/init-$1.c" \
		"$B/libinit.a"
}
# run_fuzzer NAME BINARY SEEDS: the seeds first (each crash-* case among them), then SECONDS_EACH of fuzzing
run_fuzzer() {
	local t=$1 dict=()
	rm -rf "$B/corpus/$t"
	mkdir -p "$B/corpus"
	cp -r "$3" "$B/corpus/$t"
	[ ! -f "$FZ/$t.dict" ] || dict=(-dict="$FZ/$t.dict")
	(cd "$B" && "$2" -seed=1 -max_total_time="$SECONDS_EACH" -timeout=10 -print_final_stats=1 "${dict[@]}" \
		"$B/corpus/$t" >"$B/$t.log" 2>&1) || {
		tail -40 "$B/$t.log"
		return 1
	}
	printf '%s: %s executions, %s new units\n' "$t" \
		"$(sed -n 's/^stat::number_of_executed_units: *//p' "$B/$t.log")" \
		"$(sed -n 's/^stat::new_units_added: *//p' "$B/$t.log")"
}
run_target() { run_fuzzer "init-$1" "$B/init-$1-fuzz" "$FZ/corpus/init-$1"; }
# The other side: a target that aborts on one of its seeds (a crash-* case) fails run_fuzzer.
planted_crash_fails() {
	mkdir -p "$B/planted/seeds"
	printf 'crash' >"$B/planted/seeds/crash-planted"
	printf '%s\n' '#include <stdint.h>' '#include <stdlib.h>' '#include <string.h>' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)' \
		'{ if (n == 5 && !memcmp(d, "crash", 5)) abort(); return 0; }' >"$B/planted/planted.c"
	clang -fsanitize=fuzzer -o "$B/planted/fuzz" "$B/planted/planted.c" || return 1
	! run_fuzzer planted "$B/planted/fuzz" "$B/planted/seeds" >/dev/null && grep -q 'deadly signal' "$B/planted.log"
}

require "clang with libFuzzer (clang 14, libclang-rt-14-dev) builds the init's sources with coverage" build_lib
for t in "${TARGETS[@]}"; do
	if check "build tests/fuzz/init-$t.c" build_target "$t"; then
		check "fuzz init-$t, $SECONDS_EACH s (libFuzzer, ASan/UBSan, seed 1)" run_target "$t"
	fi
done
fuzz_sources() {
	local f names=()
	for f in "$FZ"/init-*.c; do
		f=${f##*/init-}
		names+=("${f%.c}")
	done
	echo "${names[*]}"
}
check "a target that crashes on a crash-* seed fails its run" planted_crash_fails
# every target in the tree is run here: a new one cannot be forgotten
fact "every tests/fuzz/init-*.c is run" "${TARGETS[*]}" fuzz_sources
finish

#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# tests/powerloss/replay-log (the write-log replayer of tests/qemu/persist-powerloss.sh), built with -Werror and run
# under ASan/UBSan: qemu-io (Debian package qemu-utils) writes a known pattern through qemu's blklogwrites driver
# (writes, flushes, a FUA write, write-zeroes, a discard); the tool lists it and replays it to several points, and
# the bytes on both sides of each point are checked: a write before a flush is there at that flush, a write after
# it is not, the writes a seeded draw drops are really not there (and a FUA write is never dropped). Malformed logs
# (wrong magic, version, sector size, unknown flags, cut short, a write beyond the image) are refused, naming why,
# with nothing written. A short libFuzzer run of the log parser (tests/fuzz/replay-log.c) ends it.
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
B=$OUT/tests/replay-log
rm -rf "$B" && mkdir -p "$B" || exit 1
RL=$B/san/replay-log
K=1024

# iso/Makefile is the one recipe: the variant the power-loss scenarios use, then the same under ASan/UBSan
build_plain() { make -s -C "$TOP/iso" O="$B" replay-log; }
build_san() { make -s -C "$TOP/iso" O="$B/san" SAN=1 replay-log; }
require "build replay-log (iso/Makefile: gcc -std=c11 -Wall -Wextra -Werror)" build_plain
require "build replay-log under ASan/UBSan" build_san
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
have() { command -v "$1" >/dev/null; }
require "qemu-io is there (Debian package qemu-utils; ./build.sh test installs it)" have qemu-io

# The original image: 1 MiB of 0x5a, so a write of zeros (write -z, a discard) is told apart from no write.
head -c $((1024 * K)) /dev/zero | tr '\0' '\132' >"$B/orig" || exit 1
cp "$B/orig" "$B/disk" && : >"$B/log" || exit 1
# qemu-io -t writeback: no flush after every write (the default, writethrough, adds them)
logged_writes() {
	qemu-io -t writeback --image-opts \
		"driver=blklogwrites,file.driver=file,file.filename=$B/disk,log.driver=file,log.filename=$B/log,log-sector-size=512" \
		-c 'write -P 0x11 0 4k' -c 'write -P 0x12 64k 8k' -c flush \
		-c 'write -P 0x21 128k 4k' -c 'write -P 0x22 192k 4k' -c 'write -P 0x23 256k 4k' \
		-c 'write -P 0x24 320k 4k' -c 'write -P 0x25 384k 4k' -c 'write -P 0x26 448k 4k' -c flush \
		-c 'write -f -P 0x31 512k 4k' -c 'write -P 0x41 0 2k' -c 'write -z 576k 8k' -c 'discard 64k 4k' \
		>"$B/qemu-io.out" 2>&1 || { cat "$B/qemu-io.out"; return 1; }
}
require "qemu-io writes through blklogwrites" logged_writes

# What qemu 7.2 logs: one entry per write (sectors of 512 bytes), FLUSH entries for the flushes and one when it
# closes the image; the FUA write is logged as a plain write (blklogwrites passes FUA on to the file below without
# a flag), write-zeroes as a write of zeros.
fact "list: every entry, its flags, sector and size, and the flush/FUA points" "log $B/log: version 1, sector size 512, 15 entries, 59392 bytes used of 59392
entry 0 flags - sector 0 sectors 8 bytes 4096
entry 1 flags - sector 128 sectors 16 bytes 8192
entry 2 flags FLUSH sector 0 sectors 0 bytes 0
entry 3 flags - sector 256 sectors 8 bytes 4096
entry 4 flags - sector 384 sectors 8 bytes 4096
entry 5 flags - sector 512 sectors 8 bytes 4096
entry 6 flags - sector 640 sectors 8 bytes 4096
entry 7 flags - sector 768 sectors 8 bytes 4096
entry 8 flags - sector 896 sectors 8 bytes 4096
entry 9 flags FLUSH sector 0 sectors 0 bytes 0
entry 10 flags - sector 1024 sectors 8 bytes 4096
entry 11 flags - sector 0 sectors 4 bytes 2048
entry 12 flags - sector 1152 sectors 16 bytes 8192
entry 13 flags DISCARD sector 128 sectors 8 bytes 4096
entry 14 flags FLUSH sector 0 sectors 0 bytes 0
flush/FUA points: 2 9 14" "$RL" list "$B/log"
fact "count" 15 "$RL" count "$B/log"
fact "points" $'2\n9\n14' "$RL" points "$B/log"

# bytes_are IMAGE OFFSET LENGTH BYTE: LENGTH bytes of IMAGE from OFFSET are all BYTE (two hex digits).
bytes_are() {
	local got
	got=$(dd if="$1" bs=4096 iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none | od -An -v -tx1 |
		tr ' ' '\n' | sort -u | grep .) || return 1
	[ "$got" = "$4" ] && return 0
	printf '#   %s bytes %s+%s: %s, wanted only %s\n' "$1" "$2" "$3" "$(echo "$got" | tr '\n' ' ')" "$4" >&2
	return 1
}

# entries 0..2: the two writes before the first flush, nothing after it
check "replay to the first flush point" "$RL" replay "$B/log" "$B/orig" "$B/at2" 3
check "at the first flush: the first write is there" bytes_are "$B/at2" 0 $((4 * K)) 11
check "at the first flush: the second write is there" bytes_are "$B/at2" $((64 * K)) $((8 * K)) 12
check "at the first flush: the writes after it are not" bytes_are "$B/at2" $((128 * K)) $((384 * K)) 5a
check "at the first flush: the FUA write after it is not" bytes_are "$B/at2" $((512 * K)) $((4 * K)) 5a
check "at the first flush: nothing else changed" bytes_are "$B/at2" $((4 * K)) $((60 * K)) 5a
# entries 0..9
check "replay to the second flush point" "$RL" replay "$B/log" "$B/orig" "$B/at9" 10
for i in 1 2 3 4 5 6; do
	check "at the second flush: write 2$i before it is there" bytes_are "$B/at9" $(((64 + 64 * i) * K)) $((4 * K)) "2$i"
done
check "at the second flush: the FUA write after it is not" bytes_are "$B/at9" $((512 * K)) $((4 * K)) 5a
check "at the second flush: the overwrite after it is not" bytes_are "$B/at9" 0 $((4 * K)) 11
# everything: the image qemu wrote, byte for byte
check "replay of every entry gives the image qemu wrote" "$RL" replay "$B/log" "$B/orig" "$B/all" 15
check "... byte for byte" cmp "$B/all" "$B/disk"
check "the later overwrite of half a block" bytes_are "$B/all" 0 $((2 * K)) 41
check "... and the half it left" bytes_are "$B/all" $((2 * K)) $((2 * K)) 11
check "write-zeroes replayed as zeros" bytes_are "$B/all" $((576 * K)) $((8 * K)) 00
check "a discard replayed as zeros" bytes_are "$B/all" $((64 * K)) $((4 * K)) 00
check "... next to what it left" bytes_are "$B/all" $((68 * K)) $((4 * K)) 12
check "replay of no entry is a copy of the original" "$RL" replay "$B/log" "$B/orig" "$B/none" 0
check "... byte for byte" cmp "$B/none" "$B/orig"
check "the original image is never written" bytes_are "$B/orig" 0 $((1024 * K)) 5a
# incremental: 0..2, then 3..9, then 10..14 onto one copy is the same as the replays from scratch
incremental() {
	"$RL" replay "$B/log" "$B/orig" "$B/inc" 0 && "$RL" apply "$B/log" "$B/inc" 0 3 && cmp "$B/inc" "$B/at2" &&
		"$RL" apply "$B/log" "$B/inc" 3 10 && cmp "$B/inc" "$B/at9" &&
		"$RL" apply "$B/log" "$B/inc" 10 15 && cmp "$B/inc" "$B/disk"
}
check "incremental replay (apply FROM N) gives the same images" incremental

# The draw after the first flush (entry 2) over the six writes up to the next flush (entries 3..8).
# random_at SEED NAME: replays into $B/NAME, keeps the kept/dropped lines in $B/NAME.txt
random_at() { "$RL" random "$B/log" "$B/orig" "$B/$2" 2 "$1" >"$B/$2.txt"; }
# drop_checks NAME: each write the draw kept is there, each one it dropped is not; entries 0..1 are there, the
# writes after the next flush are not. Prints how many were dropped.
drop_checks() {
	local name=$1 word i sector sectors n=0 kept=0
	bytes_are "$B/$name" 0 $((4 * K)) 11 && bytes_are "$B/$name" $((64 * K)) $((8 * K)) 12 || return 1
	bytes_are "$B/$name" $((512 * K)) $((4 * K)) 5a || return 1
	while read -r word i _ sector _ sectors; do
		case "$word" in
		kept) bytes_are "$B/$name" $((sector * 512)) $((sectors * 512)) "2$((i - 2))" || return 1
			kept=$((kept + 1)) ;;
		dropped) bytes_are "$B/$name" $((sector * 512)) $((sectors * 512)) 5a || return 1
			n=$((n + 1)) ;;
		esac
	done <"$B/$name.txt"
	[ $((n + kept)) -eq 6 ] || { echo "# $((n + kept)) of 6 writes drawn" >&2; return 1; }
	echo "$n"
}
check "random point after flush 2, seed 1" random_at 1 r1
fact "seed 1: kept and dropped as drawn (3..8)" "kept 3 sector 256 sectors 8
kept 4 sector 384 sectors 8
kept 5 sector 512 sectors 8
dropped 6 sector 640 sectors 8
dropped 7 sector 768 sectors 8
kept 8 sector 896 sectors 8
subset of entries 3..9 (seed 1): 4 kept, 2 dropped" cat "$B/r1.txt"
fact "seed 1: the two dropped writes are not in the image, the four kept ones are" 2 drop_checks r1
check "seed 1 again" random_at 1 r1b
check "... the same draw" cmp "$B/r1.txt" "$B/r1b.txt"
check "... the same image" cmp "$B/r1" "$B/r1b"
check "random point after flush 2, seed 3" random_at 3 r3
fact "seed 3: the three dropped writes are not in the image, the three kept ones are" 3 drop_checks r3
check "seed 3 draws otherwise than seed 1" fails cmp -s "$B/r1.txt" "$B/r3.txt"
# the subset command does the same draw onto an image already at the flush point
subset_same() {
	cp "$B/at2" "$B/sub" && "$RL" subset "$B/log" "$B/sub" 3 9 3 >"$B/sub.txt" && cmp "$B/sub" "$B/r3" &&
		cmp "$B/sub.txt" "$B/r3.txt"
}
check "subset FROM END SEED onto the flush point's image = random at that flush" subset_same
check "random: an entry that is not a FLUSH is refused" fails "$RL" random "$B/log" "$B/orig" "$B/rx" 3 1
check "... and nothing was made" test ! -e "$B/rx"

# Torn writes (random/subset ... tear): the last write the draw keeps is torn, only its first sectors written.
# torn_checks NAME UNTORN: the torn write of $B/NAME.txt has exactly its prefix new and the rest as it was (0x5a),
# the keep-or-drop lines are those of the draw without tear ($B/UNTORN.txt) and $B/NAME differs from $B/UNTORN only
# in the sectors left unwritten. Prints "ENTRY PREFIX".
torn_checks() {
	local name=$1 untorn=$2 word i sector sectors prefix diffs
	read -r word i _ sector _ sectors _ prefix < <(grep '^torn ' "$B/$name.txt") && [ "$word" = torn ] || return 1
	if [ "$prefix" -lt 1 ] || [ "$prefix" -ge "$sectors" ]; then echo "# prefix $prefix of $sectors" >&2; return 1; fi
	bytes_are "$B/$name" $((sector * 512)) $((prefix * 512)) "2$((i - 2))" || return 1
	bytes_are "$B/$name" $(((sector + prefix) * 512)) $(((sectors - prefix) * 512)) 5a || return 1
	# the same draw, the torn entry named kept there
	diff <(grep -v '^subset ' "$B/$name.txt") <(grep -v '^subset ' "$B/$untorn.txt" | sed "s/^kept $i \(.*\)\$/torn $i \1 prefix $prefix/") >&2 ||
		return 1
	# cmp -l: the 1-based offset of each byte that differs; wanted: how many, the first (0-based), the last + 1
	diffs=$(cmp -l "$B/$name" "$B/$untorn" | awk 'NR == 1 { f = $1 } { l = $1; n++ } END { print n + 0, f - 1, l }')
	[ "$diffs" = "$(((sectors - prefix) * 512)) $(((sector + prefix) * 512)) $(((sector + sectors) * 512))" ] ||
		{ echo "# torn and untorn images differ: $diffs (bytes, first, last+1)" >&2; return 1; }
	echo "$i $prefix"
}
random_tear() { "$RL" random "$B/log" "$B/orig" "$B/$2" 2 "$1" tear >"$B/$2.txt"; }
check "random point after flush 2, seed 1, tear" random_tear 1 t1
fact "seed 1, tear: the draw of seed 1, its last kept write (8) torn after its first sector" "kept 3 sector 256 sectors 8
kept 4 sector 384 sectors 8
kept 5 sector 512 sectors 8
dropped 6 sector 640 sectors 8
dropped 7 sector 768 sectors 8
torn 8 sector 896 sectors 8 prefix 1
subset of entries 3..9 (seed 1): 3 kept, 1 torn, 2 dropped" cat "$B/t1.txt"
fact "seed 1, tear: entry 8 has 1 sector new, 7 old; the image is seed 1's but for those 7" "8 1" torn_checks t1 r1
check "random point after flush 2, seed 4, tear" random_tear 4 t4
check "random point after flush 2, seed 4" random_at 4 r4
fact "seed 4, tear: entry 8 has 6 sectors new, 2 old" "8 6" torn_checks t4 r4
check "random point after flush 2, seed 8, tear" random_tear 8 t8
check "random point after flush 2, seed 8" random_at 8 r8
fact "seed 8, tear: the last kept write is 6 (7 and 8 dropped), 1 sector of it new" "6 1" torn_checks t8 r8
check "seed 1 after tear: the plain draw and image as before" sh -c "'$RL' random '$B/log' '$B/orig' '$B/r1c' 2 1 | cmp - '$B/r1.txt' && cmp '$B/r1c' '$B/r1'"
subset_tear_same() {
	cp "$B/at2" "$B/subt" && "$RL" subset "$B/log" "$B/subt" 3 9 4 tear >"$B/subt.txt" && cmp "$B/subt" "$B/t4" &&
		cmp "$B/subt.txt" "$B/t4.txt"
}
check "subset ... tear onto the flush point's image = random ... tear" subset_tear_same
# never torn: a FUA write (entry 5 of fua.log, made below), a discard (entry 13: its window 10..13 drawn alone)
never_torn() { # LOG FROM END ENTRY [alone]: over seeds 1..16 ENTRY is never torn, while some other entry is (unless alone)
	local s out other=''
	for s in $(seq 1 16); do
		cp "$B/orig" "$B/nt.img" && out=$("$RL" subset "$1" "$B/nt.img" "$2" "$3" "$s" tear) || return 1
		! grep -q "^torn $4 " <<<"$out" || { echo "# seed $s tore entry $4" >&2; return 1; }
		grep -q '^torn ' <<<"$out" && other=1
	done
	[ -n "$other" ] || [ "${5:-}" = alone ]
}
check "a discard is never torn (entries 13..13, seeds 1..16)" never_torn "$B/log" 13 14 13 alone
check "... with writes before it, those are (entries 10..13)" never_torn "$B/log" 10 14 13
check "tear: a wrong last word is a wrong command line (exit 2)" \
	sh -c "'$RL' random '$B/log' '$B/orig' '$B/x.img' 2 1 tears 2>/dev/null; [ \$? = 2 ] && [ ! -e '$B/x.img' ]"

# flag_entry FILE INDEX FLAGS: a copy of the log with entry INDEX's flags field set (a byte) - the entries are
# found from the listing's sizes, as the format lays them out (header sector, then data sectors).
entry_offset() { # LOG INDEX: byte offset of entry INDEX's header
	# awk reads to the end: an early exit could kill the lister with SIGPIPE (a failure under pipefail)
	"$RL" list "$1" | awk -v want="$2" '$1 == "entry" { if ($2 == want && !done++) print off
		off += 512 + ($4 ~ /DISCARD/ ? 0 : $10) } BEGIN { off = 512 }'
}
put_byte() { # FILE OFFSET BYTE(decimal)
	# shellcheck disable=SC2059 # the format is the byte, built on purpose
	printf "$(printf '\\%03o' "$3")" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
fua_log() {
	local off
	cp "$B/log" "$B/fua.log" && off=$(entry_offset "$B/log" 5) && [ -n "$off" ] &&
		put_byte "$B/fua.log" $((off + 16)) 2
}
require "a log with entry 5 marked FUA" fua_log
fact "list names the FUA point" "flush/FUA points: 2 5 9 14" sh -c "'$RL' list '$B/fua.log' | tail -n 1"
fua_never_dropped() {
	local s out dropped=''
	for s in 1 2 3 4 5 6 7 8; do
		out=$("$RL" random "$B/fua.log" "$B/orig" "$B/fua.img" 2 "$s") || return 1
		bytes_are "$B/fua.img" $((256 * K)) $((4 * K)) 23 || return 1
		! grep -q '^dropped 5 ' <<<"$out" || return 1
		grep -q '^subset .*: [0-9]* kept, [1-9][0-9]* dropped$' <<<"$out" && dropped=1
	done
	[ -n "$dropped" ]
}
check "a FUA write after the flush is kept by every draw (seeds 1..8), while others are dropped" fua_never_dropped
check "a FUA write is never torn (seeds 1..16), while others are" never_torn "$B/fua.log" 3 9 5

# Malformed logs: refused with exit 1 and a message naming what is wrong; OUT is not made.
# refused NAME LOG ERE [ORIG]: replay of LOG fails naming ERE, and writes nothing
refused() {
	local log=$2 re=$3 orig=${4:-$B/orig} rc=0
	rm -f "$B/bad.img"
	"$RL" replay "$log" "$orig" "$B/bad.img" 15 >"$B/bad.out" 2>"$B/bad.err" || rc=$?
	if [ "$rc" -ne 1 ] || ! grep -Eq -- "$re" "$B/bad.err" || [ -e "$B/bad.img" ]; then
		printf '#   exit %s, stderr: %s, image made: %s\n' "$rc" "$(cat "$B/bad.err")" \
			"$([ -e "$B/bad.img" ] && echo yes || echo no)" >&2
		return 1
	fi
	sed 's/^/#   /' "$B/bad.err"
}
cp "$B/log" "$B/magic.log" && put_byte "$B/magic.log" 0 0
check "wrong magic refused" refused magic "$B/magic.log" 'replay-log: .*magic.log: wrong magic 0x6a7366777368'
cp "$B/log" "$B/version.log" && put_byte "$B/version.log" 8 2
check "unknown version refused" refused version "$B/version.log" 'log version 2'
cp "$B/log" "$B/ss.log" && put_byte "$B/ss.log" 25 3 # 768
check "sector size not a power of two refused" refused ss "$B/ss.log" 'sector size 768 is not a power of two'
cp "$B/log" "$B/flags.log" && put_byte "$B/flags.log" $(($(entry_offset "$B/log" 4) + 17)) 1 # 0x100
check "unknown flags refused" refused flags "$B/flags.log" 'entry 4: unknown flags 0x100'
# cut inside the data of entry 12 (write-zeroes, 16 sectors): the entries up to it are whole
cut_log() { cp "$B/log" "$B/cut.log" && truncate -s $(($(entry_offset "$B/log" 12) + 512 + 4096)) "$B/cut.log"; }
check "a log cut inside entry 12's data" cut_log
check "truncated entry refused" refused cut "$B/cut.log" 'truncated entry 12 \(-, sector 1152\): 16 sectors of data'
cut_header() { cp "$B/log" "$B/cuth.log" && truncate -s $(($(entry_offset "$B/log" 14) + 100)) "$B/cuth.log"; }
check "a log cut inside the last entry's header" cut_header
check "... refused" refused cuth "$B/cuth.log" 'truncated entry 14: its header at byte [0-9]+ runs past the end'
printf 'short' >"$B/short.log"
check "a 5-byte file refused" refused short "$B/short.log" 'too short for a log super block'
head -c 100 "$B/log" >"$B/super.log"
check "a log cut inside its super block's sector refused" refused super "$B/super.log" \
	'truncated: 100 bytes, less than the super block.s sector \(512 bytes\)'
: >"$B/empty.log"
check "an empty log (qemu before its first flush) refused" refused empty "$B/empty.log" '0 bytes: too short'
check "a log that is not a regular file refused" refused dev /dev/null 'not a regular file'
head -c $((512 * K)) "$B/orig" >"$B/small.img"
check "a write beyond the image refused (512 KiB image, entry 10 writes at 512 KiB)" \
	refused beyond "$B/log" 'entry 10 writes sectors 1024\+8, beyond the end of .*small.img \(1024 sectors of 512 bytes\)' \
	"$B/small.img"
check "replay of more entries than the log has refused" fails "$RL" replay "$B/log" "$B/orig" "$B/more.img" 16
check "a wrong command line: exit 2" sh -c "'$RL' replay '$B/log' '$B/orig' '$B/x.img' -1 2>/dev/null; [ \$? = 2 ]"
check "apply beyond the image refused before writing" fails "$RL" apply "$B/log" "$B/small.img" 0 15
check "... the image untouched" bytes_are "$B/small.img" 0 $((512 * K)) 5a

# the parser under libFuzzer (clang, ASan/UBSan), seeded with the logs above, for a bounded time
build_fuzz() {
	clang -std=c11 -g -O1 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-Wno-unused-function \
		-o "$B/replay-log-fuzz" "$TOP/tests/fuzz/replay-log.c"
}
run_fuzz() {
	mkdir -p "$B/corpus" && cp "$B/log" "$B/fua.log" "$B/cut.log" "$B/flags.log" "$B/corpus/" || return 1
	fuzz_run "$B/fuzz.log" "$B/replay-log-fuzz" "${REPLAY_FUZZ_SECONDS:-10}" "$B/corpus" -max_len=70000
}
check "build the log parser's fuzz target (clang -fsanitize=fuzzer,address,undefined)" build_fuzz
check "fuzz the log parser and replay, ${REPLAY_FUZZ_SECONDS:-10} s" run_fuzz
finish

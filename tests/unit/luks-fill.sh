#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check and require (tests/lib.sh)
# iso/luks-fill (mkusb --encrypt writes the store's ext4 into a LUKS2 container with it; the power-loss test of an
# encrypted store reads each crash point back out with -d), built with -Werror and run under ASan/UBSan, on a real
# LUKS2 header made by cryptsetup with a known volume key: what it writes is not the plain text, leaves the header and
# everything outside the segment alone, and -d gives back the plain bytes exactly (sector numbers counted from the
# segment's start, also when the container is a whole disk image); a wrong key does not. Bad arguments are refused
# naming what was wrong, with nothing written. That dm-crypt itself reads and writes the same bytes is shown in qemu
# (persist-luks.sh unlocks a stick made this way; persist-powerloss-luks.sh decrypts what the guest's dm-crypt wrote).
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
B=$OUT/tests/luks-fill
rm -rf "$B" && mkdir -p "$B" || exit 1
LF=$B/luks-fill
M=$((1024 * 1024))

# iso/Makefile is the one recipe: the build's variant, then the same under ASan/UBSan, which the checks run
build_plain() { make -s -C "$TOP/iso" O="$B/build" luks-fill; }
build_san() { make -s -C "$TOP/iso" O="$B" SAN=1 luks-fill; }
require "build luks-fill (iso/Makefile: gcc -std=c11 -Wall -Wextra -Werror)" build_plain
require "build luks-fill under ASan/UBSan" build_san
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
have() { command -v "$1" >/dev/null; }
require "cryptsetup is there (Debian package cryptsetup-bin)" have cryptsetup

# A LUKS2 container: 16 MiB of header (cryptsetup's default), a 3 MiB segment; a cheap key slot (this is not a stick)
head -c 64 /dev/urandom >"$B/key" && head -c 64 /dev/urandom >"$B/other-key" && printf 'pw\n' >"$B/pass" || exit 1
make_container() {
	truncate -s $((19 * M)) "$B/c" &&
		cryptsetup luksFormat --batch-mode --type luks2 --cipher aes-xts-plain64 --key-size 512 --sector-size 512 \
			--pbkdf pbkdf2 --pbkdf-force-iterations 1000 --volume-key-file "$B/key" --key-file "$B/pass" "$B/c" >/dev/null
}
require luks2-container-made make_container
seg=$(cryptsetup luksDump "$B/c" | awk '/^Data segments:/ { d = 1 } d && $1 == "offset:" { print $2; exit }')
fact segment-at-16-MiB $((16 * M)) echo "$seg"
dumped_key() { cryptsetup luksDump --batch-mode --dump-volume-key --volume-key-file "$B/dumped" --key-file "$B/pass" "$B/c" >/dev/null && cmp "$B/dumped" "$B/key"; }
check volume-key-dumps-back-as-given dumped_key
head -c $((3 * M)) /dev/urandom >"$B/plain" || exit 1
header=$(head -c "$seg" "$B/c" | sha256sum)
require fills "$LF" "$B/key" "$B/plain" "$B/c" "$seg"
check header-untouched test "$(head -c "$seg" "$B/c" | sha256sum)" = "$header"
segment_is_not_plain() { ! tail -c +$((seg + 1)) "$B/c" | cmp -s - "$B/plain"; }
check segment-is-not-the-plain-text segment_is_not_plain
# no 512-byte sector of the plain text appears anywhere in the container
sectors_hidden() {
	mkdir -p "$B/ps" "$B/cs" && split -b 512 -a 5 "$B/plain" "$B/ps/" && split -b 512 -a 6 "$B/c" "$B/cs/" &&
		[ -z "$(comm -12 <(find "$B/ps" -type f -exec sha256sum {} + | cut -d' ' -f1 | sort -u) \
			<(find "$B/cs" -type f -exec sha256sum {} + | cut -d' ' -f1 | sort -u))" ]
}
check no-plain-sector-in-the-container sectors_hidden
rm -rf "$B/ps" "$B/cs"
check decrypts-back "$LF" -d "$B/key" "$B/c" "$seg" $((3 * M)) "$B/back"
check back-is-the-plain-text cmp "$B/back" "$B/plain"
part_of_it() { "$LF" -d "$B/key" "$B/c" "$seg" $((64 * 1024)) "$B/head" && cmp "$B/head" <(head -c $((64 * 1024)) "$B/plain"); }
check decrypts-a-prefix part_of_it
wrong_key() { "$LF" -d "$B/other-key" "$B/c" "$seg" $((3 * M)) "$B/wrong" && ! cmp -s "$B/wrong" "$B/plain"; }
check other-key-gives-other-bytes wrong_key

# The container as partition 2 of a disk image at 5 MiB: the same ciphertext there, the rest of the disk untouched
disk() {
	head -c $((5 * M)) /dev/urandom >"$B/disk" && cat "$B/c" >>"$B/disk" && head -c $((2 * M)) /dev/urandom >>"$B/disk" &&
		cp "$B/disk" "$B/disk.orig" && "$LF" "$B/key" "$B/plain" "$B/disk" $((5 * M + seg)) &&
		cmp "$B/disk" "$B/disk.orig" && "$LF" -d "$B/key" "$B/disk" $((5 * M + seg)) $((3 * M)) "$B/disk-back" &&
		cmp "$B/disk-back" "$B/plain"
}
check at-a-disk-offset-same-bytes disk

# bad arguments: refused, naming what was wrong; the container unchanged
sum=$(sha256sum <"$B/c")
refused() { # WANT ARGS...: exit 1 and WANT on stderr
	local want=$1 err
	shift
	if err=$("$LF" "$@" 2>&1 >/dev/null); then
		printf '#   accepted: %s\n' "$*" >&2
		return 1
	fi
	printf '#   %s\n' "$err"
	grep -qF -- "$want" <<<"$err" && [ "$(sha256sum <"$B/c")" = "$sum" ]
}
head -c 63 /dev/urandom >"$B/short-key" && head -c 65 /dev/urandom >"$B/long-key" && head -c 1000 /dev/urandom >"$B/odd" || exit 1
check short-key-refused refused "not a 64-byte volume key" "$B/short-key" "$B/plain" "$B/c" "$seg"
check long-key-refused refused "not a 64-byte volume key" "$B/long-key" "$B/plain" "$B/c" "$seg"
check odd-offset-refused refused "multiple of 512" "$B/key" "$B/plain" "$B/c" 1000
check word-offset-refused refused "multiple of 512" "$B/key" "$B/plain" "$B/c" 16M
check odd-size-refused refused "whole number of 512-byte sectors" "$B/key" "$B/odd" "$B/c" "$seg"
check too-long-plain-refused refused "too short" "$B/key" "$B/plain" "$B/c" $((17 * M))
check decrypt-beyond-the-end-refused refused "too short" -d "$B/key" "$B/c" "$seg" $((4 * M)) "$B/x"
check decrypt-odd-size-refused refused "multiple of 512" -d "$B/key" "$B/c" "$seg" 1000 "$B/x"
check missing-container-refused refused "$B/none" "$B/key" "$B/plain" "$B/none" "$seg"
check usage-named refused "usage" "$B/key" "$B/plain"
finish

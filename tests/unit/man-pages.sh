#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check and require (tests/lib.sh)
# summary: the man pages. liveunion-boot(7) lists exactly the keys of the init's table (initramfs/keys-to-man.sh,
# like docs/boot.md's table), the live root carries that very page and liveunion(1), both are clean roff (groff -ww,
# mandoc -Tlint when installed), liveunion(1) names every subcommand and option the program's --help does and
# no other, and `make -C liveunion install` puts the command and both pages under DESTDIR/PREFIX.
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then # build.sh's default, so the page matches the one the build made
	SOURCE_DATE_EPOCH=$(git -C "$TOP" log -1 --format=%ct -- VERSION 2>/dev/null || true)
	SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600}
fi
export SOURCE_DATE_EPOCH
init=$OUT/initramfs/init
base=$OUT/rootfs/10-base.squashfs
page1=$TOP/liveunion/man/liveunion.1
tmp=$(mktemp -d)
at_exit "rm -rf '$tmp'"
require "init-built ($init; run ./build.sh first)" test -e "$init"
require "base-built ($base; run ./build.sh first)" test -e "$base"

# keys_match PAGE: its parameter entries are exactly the keys of the table, in its order.
keys_match() {
	diff <("$init" --help-keys | tail -n +2 | cut -f1) \
		<(sed -n 's/^\\fB\(live\.[a-z.]*\)=\\fR.*/\1/p' "$1" | sed 's/\\-/-/g')
}
have() { command -v "$1" >/dev/null; }
for c in groff mandoc man; do
	require "$c is there (apt-get install -y groff-base mandoc man-db)" have "$c"
done

# lint PAGE: nothing from groff's warnings (all of them) nor from mandoc's checker (style notes included)
lint() {
	local out
	if ! out=$( { groff -z -ww -man "$1" && mandoc -Tlint "$1"; } 2>&1) || [ -n "$out" ]; then
		printf '%s\n' "$out"
		return 1
	fi
}
silent() { "$@" >/dev/null 2>&1; } # with fails, the other way: a broken input must be caught
renders() { MANWIDTH=80 man -l "$1" 2>/dev/null | grep "^NAME" >/dev/null; } # not grep -q: see tests/qemu/lib/vm.bash out_has

gen=$tmp/liveunion-boot.7
"$TOP/initramfs/keys-to-man.sh" "$init" "$(cat "$TOP/VERSION")" "$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)" >"$gen"
check "liveunion-boot(7) lists every key of init --help-keys and no other" keys_match "$gen"
# the comparison sees a missing key: the page without the live.toram entry
sed '/^\\fBlive\.toram=/d' "$gen" >"$tmp/missing.7"
check "a page without live.toram is caught" fails silent keys_match "$tmp/missing.7"
check "liveunion-boot(7) is clean roff" lint "$gen"
check "liveunion(1) is clean roff" lint "$page1"
printf '.SH NAME\nx \\- y\n.XY bad\n' >"$tmp/bad.7"
check "the roff check sees an unknown macro" fails silent lint "$tmp/bad.7"
check "liveunion-boot(7) renders with man -l" renders "$gen"
check "liveunion(1) renders with man -l" renders "$page1"

# The live root carries both pages, the boot page as generated from this init's table.
unsquashfs -cat "$base" usr/share/man/man7/liveunion-boot.7 >"$tmp/root.7" 2>/dev/null
check "10-base's /usr/share/man/man7/liveunion-boot.7 is the generated page" cmp -s "$gen" "$tmp/root.7"
unsquashfs -cat "$base" usr/share/man/man1/liveunion.1 >"$tmp/root.1" 2>/dev/null
check "10-base's /usr/share/man/man1/liveunion.1 is liveunion/man/liveunion.1" cmp -s "$page1" "$tmp/root.1"

# liveunion(1) against the program: every subcommand has its entry, every option of every usage is in the
# page, and every option the page names exists.
built() { make -s -C "$TOP/liveunion" OUT="$OUT" >/dev/null; }
require "make -C liveunion builds the command" built
lu=$OUT/liveunion/liveunion
mapfile -t cmds < <("$lu" --help | sed -n 's/^  \([a-z]*\) .*/\1/p')
check "liveunion --help lists subcommands (${cmds[*]})" test ${#cmds[@]} -ge 4
missing=()
for c in "${cmds[@]}"; do grep -q "^\\\\fB$c\\\\fR" "$page1" || missing+=("$c"); done
check "liveunion(1) has an entry for every subcommand${missing[*]:+ (missing: ${missing[*]})}" test ${#missing[@]} -eq 0
for c in "${cmds[@]}"; do "$lu" "$c" --help; done >"$tmp/help.txt" 2>&1
# options: --long ones and -x ones, not the hyphens inside words (read-only, a-z, 10-base)
opts_in() { sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' "$1" | grep -oE -- '(^|[^A-Za-z0-9-])--?[a-z][a-z-]*' |
	grep -oE -- '--?[a-z][a-z-]*$' | grep -E '^(--[a-z]|-[a-z]$)' | sort -u; }
# same_opts PAGE: the program's options (every usage, and -h/--help) and the page's are the same set
same_opts() {
	local only_prog only_page
	only_prog=$(comm -23 <({ opts_in "$tmp/help.txt"; printf '%s\n' -h --help; } | sort -u) <(opts_in "$1"))
	only_page=$(comm -13 <({ opts_in "$tmp/help.txt"; printf '%s\n' -h --help; } | sort -u) <(opts_in "$1"))
	[ -z "$only_prog" ] || echo "  not in the page: $only_prog"
	[ -z "$only_page" ] || echo "  not in the program: $only_page"
	[ -z "$only_prog$only_page" ]
}
check "liveunion(1) names every option of every subcommand's usage, and no other" same_opts "$page1"
printf '.TP\n.B \\-\\-frobnicate\nx\n' | cat "$page1" - >"$tmp/extra.1"
check "an option the program lacks is caught" fails silent same_opts "$tmp/extra.1"
grep -v -- 'no\\-redirect' "$page1" >"$tmp/fewer.1"
check "an option the page lacks is caught" fails silent same_opts "$tmp/fewer.1"

# make install on a host: the command and both pages, under DESTDIR and PREFIX.
d=$tmp/dest
make -s -C "$TOP/liveunion" OUT="$OUT" INIT="$init" DESTDIR="$d" PREFIX=/usr install >/dev/null 2>&1
runs() { "$@" >/dev/null; }
check "make install: bin/liveunion runs" runs "$d/usr/bin/liveunion" --help
check "make install: man1/liveunion.1 renders" renders "$d/usr/share/man/man1/liveunion.1"
check "make install: man7/liveunion-boot.7 is the generated page" cmp -s "$gen" "$d/usr/share/man/man7/liveunion-boot.7"
finish

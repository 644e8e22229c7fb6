#!/usr/bin/env bash
# summary: `make -C tests/check install PREFIX=/usr DESTDIR=...` installs liveunion-check, its library and its man page (clean roff); the installed command, run from another directory with its own --out, boots the ISO, logs in and checks, and its make_stick writes a stick; the man page and docs/testing.md name every option the command's usage does
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-check-install.XXXXXX")
at_exit "rm -rf '$work'"
d=$work/root
require installed make -s -C "$TOP/tests/check" install PREFIX=/usr DESTDIR="$d"
for f in bin/liveunion-check share/man/man1/liveunion-check.1 lib/liveunion-check/tests/lib.sh \
	lib/liveunion-check/tests/qemu/lib/check.bash lib/liveunion-check/iso/mkusb.sh lib/liveunion-check/iso/device.bash lib/liveunion-check/libexec/replay-log; do
	check "has-$f" test -s "$d/usr/$f"
done
check command-executable test -x "$d/usr/bin/liveunion-check"
check replay-log-runs fails "$d/usr/lib/liveunion-check/libexec/replay-log" count /nonexistent
check man-page-clean-roff absent . groff -z -ww -man "$d/usr/share/man/man1/liveunion-check.1"
options() { sed -n '5,6p' "$TOP/tests/check/liveunion-check" | grep -o -- '--[a-z-]*' | sort -u; }
check usage-has-options test "$(options | wc -l)" -ge 6
for o in $(options); do
	check "man-page-has-$o" grep -q -- "${o//-/\\\\-}" "$TOP/tests/check/liveunion-check.1"
	check "docs-have-$o" grep -q -- "\`$o" "$TOP/docs/testing.md"
done

ISO=${ISO:-$OUT/liveunion.iso}
require iso-exists test -f "$ISO"
cat >"$work/tiny.sh" <<'SCN'
# tiny.sh: the installed library boots, logs in, runs a command and makes a stick
require booted vm_boot --direct
require login vm_login
check kernel-is-linux vm_fact 'cat /proc/sys/kernel/ostype' Linux
check stick-made make_stick "$CHECK_TMP/s.img" --persist-size 16M
check stick-has-3-partitions test "$(partx -g "$CHECK_TMP/s.img" | wc -l)" -eq 3
check library-is-the-installed-one test -x "$TOP/libexec/replay-log" -a -f "$TOP/tests/qemu/lib/check.bash"
SCN
rc=0
(cd "$work" && "$d/usr/bin/liveunion-check" --iso "$ISO" --out "$work/out" tiny.sh) >"$work/tap" 2>&1 || rc=$?
sed 's/^/#   installed: /' "$work/tap" >&2
check installed-run-passes test "$rc" -eq 0
fact installed-run-total '6 passed, 0 failed, 0 skipped' tail -n 1 "$work/tap"
check installed-run-junit test -s "$work/out/tests/junit.xml"
check installed-run-console-log test -s "$work/out/tests/tiny/tiny.log"
finish

#!/usr/bin/env bash
# summary: debian/: dpkg-buildpackage -b builds the liveunion and liveunion-check packages from the tracked files
# alone (as from a clean clone): each holds its command and man pages (liveunion-check its library, mkusb.sh with
# the device.bash it sources, and replay-log), under /usr; liveunion-check depends on qemu and the tools its
# library calls; the unpacked commands run (liveunion's usage, liveunion-check's usage, which finds its library
# under /usr/lib/liveunion-check), and the man pages render
# shellcheck disable=SC2317 # its functions run through check and require (tests/lib.sh)
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
tmp=$(mktemp -d)
at_exit "rm -rf '$tmp'"
require "dpkg-buildpackage and dh are there (apt-get install -y dpkg-dev debhelper)" \
	eval 'command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null'
# build: the tracked files unpacked in $tmp/src, the packages in $tmp
build() {
	mkdir -p "$tmp/src" || return 1
	(cd "$TOP" && git ls-files -z | xargs -0 tar c) | tar x -C "$tmp/src" || return 1
	if ! (cd "$tmp/src" && dpkg-buildpackage -b -us -uc >"$tmp/build.log" 2>&1); then
		tail -n 20 "$tmp/build.log" >&2
		return 1
	fi
}
require built build
v=$(cat "$TOP/VERSION") arch=$(dpkg --print-architecture)
deb=$tmp/liveunion_${v}_$arch.deb chk=$tmp/liveunion-check_${v}_$arch.deb
check changelog-version-is-VERSION grep -q "^liveunion ($v) " "$TOP/debian/changelog"
require liveunion-deb test -s "$deb"
require liveunion-check-deb test -s "$chk"
files() { dpkg-deb -c "$1" | awk '{ print $6 }' | sed 's|^\./|/|'; }
for f in /usr/bin/liveunion /usr/share/man/man1/liveunion.1.gz /usr/share/man/man7/liveunion-boot.7.gz; do
	check "liveunion-has-$f" eval "files '$deb' | grep -qx '$f'"
done
for f in /usr/bin/liveunion-check /usr/share/man/man1/liveunion-check.1.gz /usr/lib/liveunion-check/tests/lib.sh \
	/usr/lib/liveunion-check/tests/qemu/lib/check.bash /usr/lib/liveunion-check/iso/mkusb.sh \
	/usr/lib/liveunion-check/iso/device.bash /usr/lib/liveunion-check/libexec/replay-log; do
	check "liveunion-check-has-$f" eval "files '$chk' | grep -qx '$f'"
done
check nothing-outside-usr eval "! { files '$deb'; files '$chk'; } | grep -v '^/\$' | grep -v '^/usr/'"
deps=$(dpkg-deb -f "$chk" Depends)
for p in qemu-system-x86 qemu-utils ovmf xorriso python3 netpbm e2fsprogs mtools dosfstools fdisk; do
	check "check-depends-on-$p" eval "printf '%s\n' '$deps' | tr ',' '\n' | grep -qx ' *$p'"
done
# liveunion save and flatten run mksquashfs
check liveunion-depends-on-squashfs-tools eval "dpkg-deb -f '$deb' Depends | tr ',' '\n' | grep -qx ' *squashfs-tools'"
mkdir -p "$tmp/root"
dpkg-deb -x "$deb" "$tmp/root" && dpkg-deb -x "$chk" "$tmp/root"
# usage: (exit status 1 or 2, as without a command), its first line
usage=$("$tmp/root/usr/bin/liveunion" 2>&1) || true
check liveunion-runs grep -q '^usage: liveunion COMMAND' <<<"$usage"
usage=$("$tmp/root/usr/bin/liveunion-check" --help 2>&1) || true
check liveunion-check-runs grep -q '^usage: liveunion-check ' <<<"$usage"
# past the library's loading (which comes first), to the missing ISO
usage=$("$tmp/root/usr/bin/liveunion-check" --iso /nonexistent.iso x.sh 2>&1) || true
check liveunion-check-finds-its-library grep -q 'no ISO at /nonexistent.iso' <<<"$usage"
# a scenario that boots nothing: the whole API is loaded (check.bash and all it sources) from /usr/lib
printf '%s\n' 'check api-loaded declare -F vm_boot vm_login screen_shot make_stick powercut_disk lab_up' >"$tmp/api.sh"
: >"$tmp/none.iso"
check liveunion-check-loads-its-api "$tmp/root/usr/bin/liveunion-check" --iso "$tmp/none.iso" --out "$tmp/o" "$tmp/api.sh"
check liveunion-check-junit test -s "$tmp/o/tests/junit.xml"
check man-pages-render eval "man -l '$tmp/root/usr/share/man/man1/liveunion-check.1.gz' >/dev/null 2>&1 && man -l '$tmp/root/usr/share/man/man7/liveunion-boot.7.gz' >/dev/null 2>&1"
finish

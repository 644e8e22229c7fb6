#!/usr/bin/env bash
# The C style of .clang-format (clang-format 14) holds for the init (initramfs/init) and its tests: each file
# is exactly what clang-format writes, else it is named with the lines that differ. Both sides: a copy of a
# file with its indentation broken must be refused by the same check.
set -euo pipefail
export LC_ALL=C
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pass=0 fail=0
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ] || ! "$cf" --version | grep -q 'version 14\.'; then
	echo "FAIL: clang-format 14 is needed (Debian package clang-format; ./build.sh test installs it)"
	echo "0 passed, 1 failed"
	exit 1
fi
tmp=$(mktemp -d /tmp/c-style.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

formatted() { # formatted FILE: 0 when clang-format leaves it as it is (the style file is found from FILE)
	"$cf" --dry-run --Werror "$1" >"$tmp/why" 2>&1
}

cd "$TOP"
for f in initramfs/init/*.[ch] tests/unit/init-*.c tests/unit/init-test.h; do
	if formatted "$f"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $f is not as .clang-format writes it (fix: $cf -i $f):"
		head -n 20 "$tmp/why"
	fi
done
echo "ok: $pass files as .clang-format writes them"

# the check can fail: a file with its indentation broken, read as if it were in the tree (.clang-format applies)
if sed 's/^\t/  /' initramfs/init/loop.c | "$cf" --dry-run --Werror --assume-filename=initramfs/init/loop.c \
	>/dev/null 2>&1; then
	fail=$((fail + 1))
	echo "FAIL: a misformatted file passed the check"
else
	pass=$((pass + 1))
	echo "ok: a misformatted file is refused"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

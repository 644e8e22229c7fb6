#!/usr/bin/env bash
# shellcheck disable=SC2317 # its functions run through check, require and at_exit (tests/lib.sh)
# The C style of .clang-format (clang-format 14) holds for the C of the tree (tests/conformance/ aside): the init
# (initramfs/init), the `liveunion` command and its library (liveunion/), the host tools (iso/, tests/powerloss/),
# the kiosk's idle watch (rootfs/kiosk/), the unit tests, the fuzz targets and the benchmarks' C: each file is
# exactly what clang-format writes, else it is named with the lines that differ. Both sides: a copy of a file with
# its indentation broken must be refused by the same check.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cf=$(command -v clang-format-14 || command -v clang-format || true)
clang_format_14() { [ -n "$cf" ] && [[ $("$cf" --version) == *'version 14.'* ]]; }
require "clang-format 14 is there (Debian package clang-format; ./build.sh test installs it)" clang_format_14
tmp=$(mktemp -d /tmp/c-style.XXXXXX)
at_exit "rm -rf '$tmp'"

formatted() { # formatted FILE: 0 when clang-format leaves it as it is (the style file is found from FILE)
	"$cf" --dry-run --Werror "$1" >"$tmp/why" 2>&1
}

cd "$TOP"
n=0
for f in initramfs/init/*.[ch] liveunion/lib/*.[ch] liveunion/cmd/*.[ch] liveunion/include/liveunion/*.h \
	iso/*.c rootfs/kiosk/*.c tests/powerloss/*.c tests/unit/*.[ch] tests/fuzz/*.c bench/*.c; do
	if formatted "$f"; then
		n=$((n + 1))
	else
		bad "$f is not as .clang-format writes it (fix: $cf -i $f):"
		head -n 20 "$tmp/why"
	fi
done
[ "$n" -eq 0 ] || ok "$n files as .clang-format writes them"

# the check can fail: a file with its indentation broken, read as if it were in the tree (.clang-format applies)
if sed 's/^\t/  /' initramfs/init/loop.c | "$cf" --dry-run --Werror --assume-filename=initramfs/init/loop.c \
	>/dev/null 2>&1; then
	bad "a misformatted file passed the check"
else
	ok "a misformatted file is refused"
fi
finish

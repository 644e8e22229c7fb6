#!/usr/bin/env bash
# summary: README.md's boot parameter table is exactly what the init's key table says (they cannot drift).
set -uo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$TOP/out}
init=$OUT/initramfs/init
pass=0 fail=0
if [ ! -x "$init" ]; then
	echo "FAIL $init is missing: run ./build.sh first"
	echo "0 passed, 1 failed"
	exit 1
fi
want=$("$TOP/initramfs/keys-to-md.sh" "$init")
have=$(sed -n '/<!-- keys:begin -->/,/<!-- keys:end -->/p' "$TOP/README.md" | sed '1d;$d')
if [ "$want" = "$have" ]; then
	echo "ok README table matches init --help-keys"
	pass=$((pass + 1))
else
	echo "FAIL README.md boot parameters differ from init --help-keys; regenerate with:"
	echo "  initramfs/keys-to-md.sh out/initramfs/init   (paste between the keys:begin/end markers)"
	diff <(printf '%s\n' "$have") <(printf '%s\n' "$want")
	fail=$((fail + 1))
fi
# Every key the table defines is also documented by name, so a key cannot hide in the table alone.
n=$("$init" --help-keys | tail -n +2 | wc -l)
if [ "$n" -ge 10 ]; then
	echo "ok table has $n keys"
	pass=$((pass + 1))
else
	echo "FAIL only $n keys in the init's table"
	fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# summary: docs/boot.md's boot parameter table is exactly what the init's key table says (they cannot drift).
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
init=$OUT/initramfs/init
require "init-built ($init; run ./build.sh first)" test -x "$init"
want=$("$TOP/initramfs/keys-to-md.sh" "$init")
have=$(sed -n '/<!-- keys:begin -->/,/<!-- keys:end -->/p' "$TOP/docs/boot.md" | sed '1d;$d')
if [ "$want" = "$have" ]; then
	ok "docs/boot.md table matches init --help-keys"
else
	bad "docs/boot.md boot parameters differ from init --help-keys; regenerate with:"
	echo "  initramfs/keys-to-md.sh out/initramfs/init   (paste between the keys:begin/end markers of docs/boot.md)"
	diff <(printf '%s\n' "$have") <(printf '%s\n' "$want")
fi
# Every key the table defines is also documented by name, so a key cannot hide in the table alone.
n=$("$init" --help-keys | tail -n +2 | wc -l)
if [ "$n" -ge 10 ]; then ok "table has $n keys"; else bad "only $n keys in the init's table"; fi
finish

#!/bin/bash
# Differential test: 1000 random layer stacks (fixed seed) merged by the kernel's
# overlayfs in a private mount namespace, by the liveunion library, and by
# `liveunion flatten` (to a directory every stack, to a squashfs every 20th);
# all listings must agree, `liveunion changes` must match the difference of two
# kernel merges, and every feature (whiteouts of both forms, opaque dirs,
# redirects, hard links, long and odd names, ...) must have taken effect in some
# stacks. A mismatch prints a minimised reproducing stack; a mutant run (the
# library's symlinks dropped) checks that the minimising works. More stacks:
# bench/union-diff-long.
set -eu -o pipefail
export LC_ALL=C
umask 022
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$TOP/out}
B=$OUT/tests/union-diff
LU=$TOP/liveunion
COUNT=${UNION_DIFF_COUNT:-1000}
SEED=${UNION_DIFF_SEED:-1}
if [ "$(id -u)" != 0 ]; then echo "needs root"; echo "0 passed, 1 failed"; exit 1; fi
mkdir -p "$B/work"
make -s -C "$LU" OUT="$OUT" all san >/dev/null
read -ra cf < <(make -s -C "$LU" print-cflags-san)
cc "${cf[@]}" -Wno-format-truncation -o "$B/union-diff" \
	"$TOP/tests/unit/union-diff.c" "$TOP/tests/unit/union-list.c" "$OUT/liveunion/san/libliveunion.a"
diff_run() { unshare -m --propagation private "$B/union-diff" "$@" "$B/work"; }
rc=0
cov=(); [ "$COUNT" -lt 500 ] || cov=(-C)   # a short run (UNION_DIFF_COUNT) may miss a rare feature
diff_run -s "$SEED" -n "$COUNT" -F 1 -Q 20 "${cov[@]}" -f "$OUT/liveunion/liveunion" | tee "$B/main.log" || rc=$?
read -r p f < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$B/main.log")
p=${p:-0} f=${f:-1}

# The shrinker: with symlinks missing from the library's view, the first failing
# stack must come down to the one op that makes a symlink.
if diff_run -s 1 -n 60 -F 0 -x -M >/dev/null 2>"$B/mutant.log"; then
	echo "FAIL mutant run passed: the comparison misses a dropped symlink"; f=$((f + 1))
elif ops=$(sed -n '/^# stack:/,/^library differs/p' "$B/mutant.log" | grep -c '^l[0-9]') &&
	[ "$ops" = 1 ] && grep -q '^l[0-9] symlink ' "$B/mutant.log"; then
	echo "ok   mismatch minimised to a 1-op reproducing stack"; p=$((p + 1))
else
	echo "FAIL mismatch not minimised to the symlink op:"; cat "$B/mutant.log"; f=$((f + 1))
fi
rmdir "$B/work" 2>/dev/null || true
echo "$p passed, $f failed"
[ "$rc" = 0 ] && [ "$f" = 0 ]

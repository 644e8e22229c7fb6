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
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
umask 022
B=$OUT/tests/union-diff
LU=$TOP/liveunion
COUNT=${UNION_DIFF_COUNT:-1000}
SEED=${UNION_DIFF_SEED:-1}
needs_root overlay mounts, 0/0 whiteouts, trusted.* xattrs
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
T_PASS=${p:-0} T_FAIL=${f:-1}
[ "$rc" = 0 ] || [ "$T_FAIL" -gt 0 ] || T_FAIL=1
# A kernel that ignores xattr whiteouts (before 6.7) gets none in its stacks: that part was not compared.
if grep -q '^xattr whiteouts .*: not honoured by this kernel' "$B/main.log"; then
	skip xattr-whiteouts "this kernel does not honour trusted/user.overlay.whiteout: none were generated or compared"
fi

# The shrinker: with symlinks missing from the library's view, the first failing
# stack must come down to the one op that makes a symlink.
if diff_run -s 1 -n 60 -F 0 -x -M >/dev/null 2>"$B/mutant.log"; then
	bad "mutant run passed: the comparison misses a dropped symlink"
elif ops=$(sed -n '/^# stack:/,/^library differs/p' "$B/mutant.log" | grep -c '^l[0-9]') &&
	[ "$ops" = 1 ] && grep -q '^l[0-9] symlink ' "$B/mutant.log"; then
	ok "mismatch minimised to a 1-op reproducing stack"
else
	bad "mismatch not minimised to the symlink op:"; cat "$B/mutant.log"
fi
rmdir "$B/work" 2>/dev/null || true
finish

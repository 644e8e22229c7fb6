#!/bin/bash
# Differential test: 1000 random layer stacks (fixed seed) merged by the kernel's
# overlayfs in a private mount namespace, by the liveunion library, and by
# `liveunion flatten`; all three listings must agree, and `liveunion changes`
# must match the difference of two kernel merges. A mismatch prints a
# minimised reproducing stack. More stacks: bench/union-diff-long.
set -eu -o pipefail
export LC_ALL=C
umask 022
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$TOP/out}
B=$OUT/tests/union-diff
LIB=$TOP/rootfs/liveunion
COUNT=${UNION_DIFF_COUNT:-1000}
SEED=${UNION_DIFF_SEED:-1}
if [ "$(id -u)" != 0 ]; then echo "needs root"; echo "0 passed, 1 failed"; exit 1; fi
mkdir -p "$B/work"
make -s -C "$LIB" OUT="$OUT" >/dev/null
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-format-truncation -g -O1 \
	-fsanitize=address,undefined -fno-sanitize-recover=all -I"$LIB" -o "$B/union-diff" \
	"$TOP/tests/unit/union-diff.c" "$TOP/tests/unit/union-list.c" "$LIB"/union_*.c
rc=0
unshare -m --propagation private "$B/union-diff" -s "$SEED" -n "$COUNT" \
	-f "$OUT/liveunion/liveunion" "$B/work" || rc=$?
rmdir "$B/work" 2>/dev/null || true
exit $rc

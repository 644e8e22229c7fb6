#!/usr/bin/env bash
# summary: one list of overlayfs known limits. docs/tests.md's table under "What overlayfs cannot do on a live root" is
# exactly the list the conformance scenarios accept (CONFORMANCE_KNOWN_LIMITS in tests/qemu/lib/iso.bash), and the
# suite (tests/conformance/*.c) can report each of them; a table with a row more or less is caught.
# shellcheck disable=SC2317,SC2016 # functions run through check; the backquotes are the table's markdown
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# readme_limits FILE: the check names of the table's rows, sorted.
readme_limits() {
	sed -n '/^### What overlayfs cannot do on a live root/,/^### /p' "$1" |
		sed -n 's/^| `\([a-z0-9.-]*\)` |.*/\1/p' | sort
}
accepted_limits() {
	sed -n "s/^CONFORMANCE_KNOWN_LIMITS='\(.*\)'$/\1/p" "$TOP/tests/qemu/lib/iso.bash" | tr ' ' '\n' | sed '/^$/d' | sort
}
# same_list FILE: FILE's table and the accepted list are the same names (and not empty).
same_list() {
	local r a
	r=$(readme_limits "$1") a=$(accepted_limits)
	[ -n "$r" ] && [ "$r" = "$a" ] && return 0
	printf '# docs/tests.md table: %s\n# accepted:     %s\n' "${r//$'\n'/ }" "${a//$'\n'/ }" >&2
	return 1
}
# reported_by_suite: every accepted name appears as a known_limit() in the suite's sources.
reported_by_suite() {
	local n
	for n in $(accepted_limits); do
		grep -q "known_limit(\"$n\"\|\"$n\"" "$TOP"/tests/conformance/*.c || { note_missing "$n"; return 1; }
	done
}
note_missing() { printf '# %s: no known_limit() in tests/conformance/*.c reports it\n' "$1" >&2; }

check "docs/tests.md's table is the accepted list ($(accepted_limits | tr '\n' ' '))" same_list "$TOP/docs/tests.md"
check "the suite reports each accepted limit by name" reported_by_suite
tmp=$(mktemp -d)
at_exit "rm -rf '$tmp'"
# both sides: a table row more, and a row less, are caught
sed '/^| `mmap.shared-lower-then-write` |/a | `made.up-limit` | x | y | z |' "$TOP/docs/tests.md" >"$tmp/more.md"
check "a table with an extra row is caught" fails same_list "$tmp/more.md"
sed '/^| `namemax.lower-256-remove` |/d' "$TOP/docs/tests.md" >"$tmp/less.md"
check "a table without a row is caught" fails same_list "$tmp/less.md"
finish

#!/usr/bin/env bash
# summary: the example that opens docs/testing.md, taken from the page, run word for word by liveunion-check against the ISO: every check passes, TAP and junit.xml list them; with one expectation changed the run fails, naming that check with what it expected, what the guest printed and the console's last lines, in TAP and in junit.xml
# shellcheck disable=SC2317 # junit_is runs through check
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-check-example.XXXXXX")
at_exit "rm -rf '$work'"
mkdir -p "$work/right" "$work/wrong"
# the first bash block of the page, as a reader copies it
awk '/^```bash$/ { on = 1; next } on && /^```$/ { exit } on' "$TOP/docs/testing.md" >"$work/right/survives.sh"
check example-at-most-15-lines test "$(wc -l <"$work/right/survives.sh")" -le 15 -a -s "$work/right/survives.sh"
check example-ends-with-the-survival-check grep -q "^check file-survived vm_fact 'cat /etc/greeting' hello$" "$work/right/survives.sh"
sed 's/ hello$/ goodbye/' "$work/right/survives.sh" >"$work/wrong/survives.sh"
check wrong-copy-differs-in-one-line test "$(diff "$work/right/survives.sh" "$work/wrong/survives.sh" | grep -c '^>')" -eq 1

run() { # DIR: liveunion-check on DIR/survives.sh, results under DIR/out; its exit status in DIR/rc
	local rc=0
	"$TOP/tests/check/liveunion-check" --iso "$ISO" --out "$1/out" "$1/survives.sh" >"$1/tap" 2>"$1/err" || rc=$?
	echo "$rc" >"$1/rc"
	sed 's/^/#   '"$(basename "$1")"': /' "$1/tap" "$1/err" >&2
}
ISO=${ISO:-$OUT/liveunion.iso}
require iso-exists test -f "$ISO"
run "$work/right"
fact right-exits-0 0 cat "$work/right/rc"
check right-tap-all-ok grep -qx 'ok 6 - survives/file-survived' "$work/right/tap"
fact right-tap-total '7 passed, 0 failed, 0 skipped' tail -n 1 "$work/right/tap"
check right-tap-plan grep -qx '1\.\.7' "$work/right/tap"
junit_is() { # DIR TESTS FAILURES
	python3 - "$1/out/tests/junit.xml" "$2" "$3" <<-'PY'
	import sys, xml.etree.ElementTree as ET
	s = ET.parse(sys.argv[1]).getroot().find("testsuite")
	names = [c.get("name") for c in s.findall("testcase")]
	bad = [c.get("name") for c in s.findall("testcase") if c.find("failure") is not None]
	print(s.get("name"), s.get("tests"), s.get("failures"), names[-2:], bad, file=sys.stderr)
	ok = s.get("name") == "survives" and s.get("tests") == sys.argv[2] and s.get("failures") == sys.argv[3]
	ok = ok and names[-2:] == ["file-survived", "powered-off"] and len(bad) == int(sys.argv[3])
	if bad:
	    text = s.find("testcase[@name='file-survived']/failure").text
	    ok = ok and bad == ["file-survived"] and "expected: goodbye" in text and "guest: hello" in text
	    ok = ok and "console (last" in text and "@@E" in text
	sys.exit(0 if ok else 1)
	PY
}
check right-junit-7-checks-none-failed junit_is "$work/right" 7 0
check right-console-log-kept test -s "$work/right/out/tests/survives/survives.log"

run "$work/wrong"
fact wrong-exits-1 1 cat "$work/wrong/rc"
check wrong-tap-names-the-check grep -qx 'not ok 6 - survives/file-survived' "$work/wrong/tap"
check wrong-tap-says-expected grep -qx '# vm_fact: expected: goodbye' "$work/wrong/tap"
check wrong-tap-says-got grep -qx '#   guest: hello' "$work/wrong/tap"
check wrong-tap-shows-console-tail grep -q '^#   console (last 12 lines of .*/survives/survives.log):$' "$work/wrong/tap"
check wrong-the-checks-after-still-run grep -qx 'ok 7 - survives/powered-off' "$work/wrong/tap"
fact wrong-tap-total '6 passed, 1 failed, 0 skipped' tail -n 1 "$work/wrong/tap"
check wrong-junit-names-the-failure junit_is "$work/wrong" 7 1
finish

#!/usr/bin/env bash
# summary: the boot benchmarks' arithmetic (bench/lib/stats.bash): medians, spread, systemd-analyze's spans, and the
# baseline check of bench/boot --check (a stage more than 10% slower fails it, a stage within 10% does not).
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=bench/lib/stats.bash
. "$TOP/bench/lib/stats.bash"
w=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-stats.XXXXXX")
at_exit "rm -rf '$w'"

fact "median of an odd count" 300 median <<<$'500\n100\n300'
fact "median of an even count: the mean of the middle two" 250 median <<<$'400\n100\n300\n200'
fact "median leaves out failed runs" 7 median <<<$'7\nfailed\n-'
fact "median of nothing is empty" '' median </dev/null
fact "spread is min-max, failed runs left out" 100-500 spread <<<$'500\nfailed\n100\n300'
fact "spread of no number is empty" '' spread <<<'failed'
fact "ratio with two decimals" 1.18 ratio 11200 9500
check "ratio of a zero base fails" fails ratio 1 0

fact "systemd-analyze span in ms" 862 sa_ms 862ms
fact "systemd-analyze span in s" 4123 sa_ms 4.123s
fact "systemd-analyze span in min and s" 62345 sa_ms '1min 2.345s'
fact "systemd-analyze span in h, min and s" 3723000 sa_ms '1h 2min 3s'
check "a word that is no span fails" fails sa_ms '2.3 parsecs'
fact "systemd-analyze time: kernel + userspace" '2822 0 33186 36008' sa_time 'Startup finished in 2.822s (kernel) + 33.186s (userspace) = 36.008s'
fact "systemd-analyze time: with an initrd, a span of minutes" '1500 3200 60000 64700' sa_time 'Startup finished in 1.500s (kernel) + 3.200s (initrd) + 1min (userspace) = 1min 4.700s'
fact "systemd-analyze time: firmware and loader left out" '0 0 5000 9000' sa_time 'Startup finished in 2s (firmware) + 2s (loader) + 5s (userspace) = 9s'
check "a line that is not systemd-analyze's fails" fails sa_time 'Bootup is not yet finished.'

printf '# stage ms\nlogin 10000\ninit 200\n' >"$w/base"
printf 'login 11000\ninit 210\n' >"$w/ok"      # +10.0% and +5%: within
printf 'login 11001\ninit 200\n' >"$w/slow"    # +10.01%
printf 'login 9000\n' >"$w/missing"
printf 'login 10000\ninit 200\nnew 5\n' >"$w/new"
printf 'login ten\n' >"$w/bad"
check "no stage more than 10% slower passes" baseline_check "$w/base" "$w/ok"
check "a stage 10.01% slower fails" fails baseline_check "$w/base" "$w/slow"
# shellcheck disable=SC2317 # runs through check (tests/lib.sh)
names() { { baseline_check "$1" "$2" || true; } | grep -q -- "$3"; }
check "the slower stage is named" names "$w/base" "$w/slow" 'login .*+10.01% *SLOWER'
check "a stage within is not" fails names "$w/base" "$w/slow" 'init .*SLOWER'
check "a stage missing now fails" fails baseline_check "$w/base" "$w/missing"
check "a new stage alone passes" baseline_check "$w/base" "$w/new"
check "a malformed line fails" fails baseline_check "$w/base" "$w/bad"
check "5% allowed: +10% fails" fails baseline_check "$w/base" "$w/ok" 5
check "an empty baseline fails" fails baseline_check /dev/null "$w/ok"
finish

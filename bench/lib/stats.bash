# shellcheck shell=bash
# The arithmetic of the boot benchmarks (bench/boot-installed, bench/boot --check), pure functions with no VM,
# tested by tests/unit/bench-stats.sh.
# median: the median of the whole numbers on stdin, one a line (other lines, e.g. "failed", are left out); the
# mean of the two middle ones, rounded down, for an even count; nothing for none.
median() {
	{ grep -E '^[0-9]+$' || true; } | sort -n |
		awk '{ v[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
# spread: "MIN-MAX" of the whole numbers on stdin (as median reads them); nothing for none.
spread() {
	{ grep -E '^[0-9]+$' || true; } | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) print lo "-" hi }'
}
# ratio A B: A / B with two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) exit 1; printf "%.2f\n", a / b }'; }
# sa_ms TEXT: systemd-analyze's span ("1min 2.345s", "862ms", "4.123s", "1h 2min 3s") in whole milliseconds.
sa_ms() {
	awk -v s="$1" 'BEGIN {
		n = split(s, w, " "); t = 0; if (n == 0) exit 1
		for (i = 1; i <= n; i++) {
			if (match(w[i], /^[0-9.]+/) == 0) exit 1
			v = substr(w[i], 1, RLENGTH); u = substr(w[i], RLENGTH + 1)
			if (u == "ms") t += v; else if (u == "s") t += v * 1000; else if (u == "min") t += v * 60000
			else if (u == "h") t += v * 3600000; else if (u == "us") t += v / 1000; else exit 1
		}
		printf "%d\n", t + 0.5 }'
}
# sa_time LINE: "KERNEL INITRD USERSPACE TOTAL" in ms from systemd-analyze's "Startup finished in ..." line
# (0 for a part it does not name: the initrd is named only when systemd ran in it); fails on any other line.
sa_time() {
	local l=$1 part k=0 i=0 u=0 tot
	case "$l" in *"Startup finished in "*" = "*) ;; *) return 1 ;; esac
	l=${l#*Startup finished in } tot=${l##* = } l=${l% = *}
	tot=$(sa_ms "${tot%%[!0-9a-z. ]*}") || return 1
	while [ -n "$l" ]; do
		part=${l%% + *}
		[ "$part" = "$l" ] && l='' || l=${l#* + }
		case "$part" in
		*' (kernel)') k=$(sa_ms "${part% (kernel)}") || return 1 ;;
		*' (initrd)') i=$(sa_ms "${part% (initrd)}") || return 1 ;;
		*' (userspace)') u=$(sa_ms "${part% (userspace)}") || return 1 ;;
		*' (firmware)' | *' (loader)') ;; # UEFI only, and not part of what the others add up to
		*) return 1 ;;
		esac
	done
	echo "$k $i $u $tot"
}
# baseline_check BASELINE CURRENT [PERCENT]: both files of "NAME MILLISECONDS" lines (a stage, its median);
# prints one line per stage of BASELINE (slower/ok/missing) and fails when a stage is missing from CURRENT or
# took more than PERCENT (default 10) per cent longer than in BASELINE. Stages only in CURRENT are listed as new.
baseline_check() {
	awk -v pct="${3:-10}" '
		/^[ \t]*(#|$)/ { next }
		NF != 2 || $2 !~ /^[0-9]+$/ { printf "bad line %d of %s: %s (want: STAGE MILLISECONDS)\n", FNR, FILENAME, $0; bad = 1; next }
		FILENAME == ARGV[1] { if (!($1 in base)) order[++nb] = $1; base[$1] = $2; next }
		{ cur[$1] = $2; if (!($1 in base)) extra[++ne] = $1 }
		END {
			if (nb == 0) { print "the baseline names no stage"; exit 1 }
			for (i = 1; i <= nb; i++) {
				s = order[i]
				if (!(s in cur)) { printf "  %-24s %8d ms  now missing\n", s, base[s]; bad = 1; continue }
				d = base[s] ? (cur[s] - base[s]) * 100 / base[s] : (cur[s] ? 100 : 0)
				v = d > pct ? "SLOWER" : "ok"
				if (d > pct) bad = 1
				printf "  %-24s %8d ms -> %8d ms  %+7.2f%%  %s\n", s, base[s], cur[s], d, v
			}
			for (i = 1; i <= ne; i++) printf "  %-24s %8s    -> %8d ms  (new: not in the baseline)\n", extra[i], "", cur[extra[i]]
			exit bad
		}' "$1" "$2"
}

#!/usr/bin/env bash
# summary: the kiosk's fleet configuration on the host (rootfs/kiosk/kiosk fleet-once, schedule, metrics) against
# python3's web server on the loopback: a configuration signed by the admin's key is taken and its section for
# this kiosk ([group], [host], [mac], in that order of precedence) applied (allowlist, browser restarted, idle watch
# or cage restarted through systemctl); a tampered, unsigned, wrongly signed, older, invalid or secret-carrying one
# is refused, named, counted in the metrics, and the last good one kept, also across a reboot; the command line
# still wins; scheduled reload and reboot fire once, on time, staggered
# shellcheck disable=SC2317 # its functions run through check (tests/lib.sh)
# shellcheck disable=SC2016 # the single-quoted scripts are written for the fake tools and the kiosk to expand
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
w=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-kiosk-fleet.XXXXXX")
at_exit "rm -rf '$w'"
K=$TOP/rootfs/kiosk/kiosk

# The admin's key pair and another one (EC P-256); the image carries the admin's public key only.
require admin-key openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$w/admin.key"
require other-key openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$w/other.key"
require admin-pubkey openssl pkey -in "$w/admin.key" -pubout -out "$w/admin.pem"

# The server: python3's http.server on a free loopback port, serving $w/www; /huge* a reply of 3 MiB in chunks
# (Transfer-Encoding: chunked, no Content-Length: what curl's --max-filesize cannot see).
mkdir -p "$w/www"
cat >"$w/server.py" <<'P'
import functools, http.server, sys
class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if not self.path.startswith("/huge"):
            return super().do_GET()
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        chunk = b"#" * 65535 + b"\n"
        try:
            for _ in range(48):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=sys.argv[1]))
print("Serving HTTP on 127.0.0.1 port %d ..." % server.server_port, flush=True)
server.serve_forever()
P
python3 "$w/server.py" "$w/www" >"$w/httpd.log" 2>&1 &
at_exit "kill $! 2>/dev/null"
port=''
for _ in $(seq 100); do
	port=$(sed -n 's/^Serving HTTP on .* port \([0-9]*\) .*/\1/p' "$w/httpd.log")
	[ -z "$port" ] || break
	sleep 0.1
done
require server-listening test -n "$port"
CFG=http://127.0.0.1:$port/kiosk.conf

# publish [KEY]: $w/conf as kiosk.conf on the server, signed by KEY (default the admin's) as kiosk.conf.sig
publish() {
	cp "$w/conf" "$w/www/kiosk.conf"
	openssl dgst -sha256 -sign "${1:-$w/admin.key}" -out "$w/www/kiosk.conf.sig" "$w/www/kiosk.conf"
}

# The kiosk: its profile file, command line, run and state directories, a fake systemctl that notes its arguments,
# a "browser" (a sleep) whose PID the session would have noted. The kiosk user is nobody: a fake runuser (the user
# it was asked for in USER_WAS) runs the command as nobody, which owns the data directory, as the image's user owns
# its own; root's files are root's.
printf 'kiosk.url=http://profile.example/\nkiosk.data=%s/data\n' "$w" >"$w/kiosk.conf"
mkdir -p "$w/bin" "$w/policy" "$w/textfile" "$w/data"
chmod 0755 "$w"
chown 65534:65534 "$w/data"
printf '#!/bin/sh\necho "$*" >>%s/systemctl.log\n' "$w" >"$w/bin/systemctl"
AS_NOBODY='setpriv --reuid=65534 --regid=65534 --clear-groups'
printf '#!/bin/sh\n[ "$1" = -u ] || exit 9\nu=$2; shift 3\nUSER_WAS=$u exec %s "$@"\n' "$AS_NOBODY" >"$w/bin/runuser"
chmod +x "$w/bin/systemctl" "$w/bin/runuser"
CMDLINE="quiet kiosk.config=$CFG kiosk.group=lobby"
kiosk() { # ARGS: the kiosk script as this test's kiosk (host k7, one matching and one foreign MAC address)
	printf '%s\n' "$CMDLINE" >"$w/cmdline"
	# (env execs the script: started with &, $! is the script's own PID)
	env PATH="$w/bin:$PATH" KIOSK_CMDLINE="$w/cmdline" KIOSK_CONF="$w/kiosk.conf" KIOSK_RUN="$w/run" \
		KIOSK_PUBKEY="$w/admin.pem" KIOSK_TEXTFILE="$w/textfile" KIOSK_POLICY_DIR="$w/policy" \
		KIOSK_HOSTNAME="${HOST:-k7}" KIOSK_MACS="${MACS:-52:54:00:AA:BB:CC 02:00:00:00:00:01}" "$K" "$@"
}
fetch() { kiosk fleet-once >"$w/log" 2>&1; }
said() { grep -Eq -- "$1" "$w/log" || { sed 's/^/#   | /' "$w/log" >&2; return 1; }; }
metric() { fact "$1" "$3" sed -n "s/^liveunion_kiosk_$2 //p" "$w/textfile/liveunion-kiosk.prom"; }
browser() { # a new "browser" for the session's PID file
	mkdir -p "$w/run"
	BROWSER=$($AS_NOBODY sleep 600 >/dev/null 2>&1 & echo $!)
	echo "$BROWSER" >"$w/run/browser"
	at_exit "kill $BROWSER 2>/dev/null"
}
ended() { # the "browser" is gone or a zombie (not this shell's child: nobody here reaps it)
	sleep 0.2
	case "$(ps -o stat= -p "$BROWSER" 2>/dev/null)" in '' | Z*) return 0 ;; esac
	return 1
}

# 1. A first configuration: everything before the first section for all, then sections in an order that is not
# their precedence (mac > host > group > all).
cat >"$w/conf" <<'C'
# the fleet of the museum
version=1
url=http://all.example/
idle=5min
[mac 52:54:00:aa:bb:cc]
url=http://mac.example/page
[group lobby hall]
url=http://group.example/
zoom=1.25
allow=cdn.example.org
[host k7 k8]
url=http://host.example/
zoom=1.5
[host k9]
url=http://other-host.example/
C
publish
browser
check signed-taken fetch
check signed-taken-said said 'fleet configuration version=1 in use'
fact mac-section-wins-for-url http://mac.example/page kiosk get url
fact host-section-beats-group-for-zoom 1.5 kiosk get zoom
fact group-section-applies cdn.example.org kiosk get allow
fact all-section-applies 5min kiosk get idle
resolved_url() { kiosk resolve "$w/www/kiosk.conf" | sed -n 's/^url=//p' | tail -n 1; }
HOST=k8 MACS=02:00:00:00:00:09 fact other-kiosk-by-host-gets-host http://host.example/ resolved_url
HOST=k8 MACS=02:00:00:00:00:09 CMDLINE="quiet" fact other-kiosk-without-group-by-host http://host.example/ resolved_url
HOST=x1 MACS=02:00:00:00:00:09 CMDLINE="quiet" fact foreign-kiosk-gets-all http://all.example/ resolved_url
# [mac] matches the address of the default route's interface only, not every interface's (fake /proc/net/route and
# /sys/class/net: ens3 and wlan0, the second with the [mac] section's address)
mkdir -p "$w/sysnet/ens3" "$w/sysnet/wlan0"
echo 02:00:00:00:00:09 >"$w/sysnet/ens3/address"
echo 52:54:00:AA:BB:CC >"$w/sysnet/wlan0/address"
set_route() { # LAN-IFACE DEFAULT-ROUTE-IFACE
	printf 'Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n' >"$w/route"
	printf '%s\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n' "$1" >>"$w/route"
	printf '%s\t00000000\t0102000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n' "$2" >>"$w/route"
}
mac_url() {
	env KIOSK_CMDLINE="$w/cmdline" KIOSK_CONF="$w/kiosk.conf" KIOSK_RUN="$w/run" KIOSK_HOSTNAME=k8 KIOSK_PROC_ROUTE="$w/route" \
		KIOSK_SYSNET="$w/sysnet" "$K" resolve "$w/www/kiosk.conf" | sed -n 's/^url=//p' | tail -n 1
}
set_route ens3 wlan0
fact mac-of-default-route-matches http://mac.example/page mac_url
set_route wlan0 ens3
fact mac-of-other-interface-not-matched http://host.example/ mac_url
: >"$w/route"
fact mac-without-default-route-not-matched http://host.example/ mac_url
check allowlist-written grep -q '"http://mac.example:80", "http://cdn.example.org", "https://cdn.example.org"' "$w/policy/liveunion-kiosk-allow.json"
check browser-restarted-for-new-url ended
check last-good-stored cmp "$w/conf" "$w/data/fleet/kiosk.conf"
metric metric-version config_version 1
metric metric-signature-ok config_signature_ok 1
metric metric-fetch-ok config_fetch_ok 1
prom_text() { test -s "$1" && ! grep -Eqv '^(# (HELP|TYPE) liveunion_kiosk_[a-z_]+ .+|liveunion_kiosk_[a-z_]+ [0-9]+)$' "$1"; }
check metrics-prometheus-text prom_text "$w/textfile/liveunion-kiosk.prom"

# 2. The same file fetched again: nothing restarted.
browser
: >"$w/systemctl.log"
check same-again fetch
check same-again-browser-kept fails ended
check same-again-no-restart test ! -s "$w/systemctl.log"

# 3. A change of idle= and rotate=: the idle watch and cage started again (through systemctl), not a reboot.
sed -i 's/^version=1$/version=2/; s/^idle=5min$/idle=2min\nrotate=90/' "$w/conf"
publish
check changed-taken fetch
check changed-idle-restarts-idle-watch grep -qx 'restart liveunion-kiosk-idle.service' "$w/systemctl.log"
check changed-rotate-restarts-cage grep -qx 'restart liveunion-kiosk.service' "$w/systemctl.log"
check changed-no-reboot no_line reboot "$w/systemctl.log"
metric metric-version-2 config_version 2

# 4. Refused, each named, the configuration in use (version 2) kept and the metrics saying so.
refused() { # NAME MESSAGE-ERE SIGNATURE-OK: the published file is not taken
	browser
	fetch
	said "$2" && [ "$(kiosk get idle)" = 2min ] && ! ended &&
		grep -qx "liveunion_kiosk_config_version 2" "$w/textfile/liveunion-kiosk.prom" &&
		grep -qx "liveunion_kiosk_config_signature_ok $3" "$w/textfile/liveunion-kiosk.prom" &&
		cmp -s "$w/data/fleet/kiosk.conf" "$w/good"
}
cp "$w/conf" "$w/good"
sed 's/^version=2$/version=3/; s/^url=http:\/\/mac.example\/page$/url=http:\/\/evil.example\//' "$w/conf" >"$w/evil"
cp "$w/conf" "$w/conf.2"
cp "$w/evil" "$w/conf"
publish
cp "$w/conf.2" "$w/www/kiosk.conf" # signed new file, old contents: any byte changed after signing
sed -i 's/^zoom=1.5$/zoom=3.5/' "$w/www/kiosk.conf"
check tampered-refused refused tampered 'signature does not verify with the admin.s key' 0
metric tampered-not-taken config_ok 0
publish "$w/other.key"
check wrong-key-refused refused wrong-key 'signature does not verify' 0
rm "$w/www/kiosk.conf.sig"
check unsigned-refused refused unsigned 'cannot fetch .*kiosk.conf.sig: .*404' 0
metric unsigned-fetch-failed config_fetch_ok 0
cp "$w/conf.2" "$w/conf"
sed -i 's/^version=2$/version=1/' "$w/conf"
publish
check older-refused refused older 'version=1 is older than the configuration in use \(version=2\)' 1
cp "$w/conf.2" "$w/conf"
sed -i 's/^zoom=1.5$/zoom=2/' "$w/conf"
publish
check same-version-changed-refused refused same-version 'changed without a higher version=' 1
for bad in 'rotate=45|rotate=45: use 0, 90, 180 or 270' 'password=hunter2|unknown key .password.' \
	'url=http://admin:secret@intranet.example/|url=http://admin:secret@intranet.example/: use an http:// or https:// address \(no user:password@\)' \
	'url=file:///etc/passwd|url=file:///etc/passwd: use an http' 'allow=chrome://settings|allow=: .chrome://settings. is not' \
	'reboot-at=25:00|reboot-at=25:00: use HH:MM' '[room 12]|not a section' 'allow=*|allow=: .\*. is not an http' \
	'allow=cdn.example.org,127.0.0.1:8080|allow=: .127.0.0.1:8080. names the kiosk itself' \
	'allow=localhost|allow=: .localhost. names the kiosk itself' 'allow=http://[::1]/|allow=: .http://\[::1\]/. names the kiosk' \
	'allow=printer.example:9100|allow=: .printer.example:9100. names the kiosk.s own port 9100'; do
	printf '%s\n' "$(sed 's/^version=2$/version=9/' "$w/conf.2")" "${bad%%|*}" >"$w/conf"
	publish
	name=${bad%%|*} name=${name//[^a-z0-9]/-}
	check "invalid-refused-$name" refused invalid "line [0-9]+: .*${bad#*|}" 1
	metric "invalid-$name-counted" config_ok 0
done

# 5. A reboot: nothing in /run; the server now serves a tampered file. The kept configuration (verified again) is
# used; then a kept file tampered with on the store is not.
rm -rf "$w/run" "$w/run.fleet"
cp "$w/conf.2" "$w/www/kiosk.conf"
sed -i 's/^zoom=1.5$/zoom=4/' "$w/www/kiosk.conf"
check reboot-fetch fetch
fact reboot-last-good-used 2min kiosk get idle
check reboot-tampered-refused said 'signature does not verify'
rm -rf "$w/run" "$w/run.fleet"
sed -i 's/^idle=2min$/idle=1h/' "$w/data/fleet/kiosk.conf"
check reboot-kept-tampered fetch
check reboot-kept-tampered-refused said "$w/data/fleet: the signature does not verify"
fact reboot-kept-tampered-not-used http://profile.example/ kiosk get url
cp "$w/good" "$w/data/fleet/kiosk.conf"
check reboot-good-again fetch

# 5b. What the kiosk user (the browser's account) writes in its own directories is not root's to trust or follow:
# a fleet.kv planted there is not read (url=, data=, user=); symlinks planted where root wrote before lead nowhere
# (root's files are in its own directory, the kept copy is written as the kiosk user); a PID planted as the
# browser's ends only the kiosk user's processes.
printf 'version=99\nurl=http://planted.example/\ndata=%s/planted\nuser=root\nallow=*\n' "$w" >"$w/run/fleet.kv"
fact root-directory-root-only 700 stat -c %a "$w/run.fleet"
fact planted-fleet-kv-url-not-read http://mac.example/page kiosk get url
fact planted-fleet-kv-data-not-read "$w/data" kiosk get data
fact planted-fleet-kv-user-not-read kiosk kiosk get user kiosk
printf 'precious\n' >"$w/victim"
mkdir -p "$w/run/stats" "$w/run/fleet"
for f in run/stats/config_version.new run/stats/config_fetch_time.new run/fleet.err run/fleet.conf run/fleet/new \
	run/fleet/new.sig data/fleet/kiosk.conf.new data/fleet/kiosk.conf.sig.new; do
	ln -sfn "$w/victim" "$w/$f"
done
sed 's/^version=2$/version=5/' "$w/conf.2" >"$w/conf"
publish
check symlinks-planted-fetch fetch
check symlinks-planted-taken said 'fleet configuration version=5 in use'
fact symlinks-planted-not-followed precious cat "$w/victim"
rm -f "$w/data/fleet/kiosk.conf.new" "$w/data/fleet/kiosk.conf.sig.new"
sleep 600 &
rootpid=$!
at_exit "kill $rootpid 2>/dev/null"
echo "$rootpid" >"$w/run/browser"
sed 's/^version=2$/version=6/; s/^zoom=1.5$/zoom=1.1/' "$w/conf.2" >"$w/conf"
publish
check planted-pid-fetch fetch
check planted-pid-tried said 'changed: zoom'
check planted-pid-root-process-alive kill -0 "$rootpid"

# 5c. version= above 2^31 - 1 is refused by name (dash's test fails past 2^63: from then on every version was
# taken); the image's floor (the profile's kiosk.config.min-version=) refuses an older signed file at a boot with
# nothing in use, fetched or swapped onto the store.
for v in 2147483648 9223372036854775808; do
	sed "s/^version=2\$/version=$v/" "$w/conf.2" >"$w/conf"
	publish
	check "version-$v-fetch" fetch
	check "version-$v-refused" said "version=$v is above 2147483647"
	metric "version-$v-not-in-use" config_version 6
done
sed 's/^version=2$/version=7/' "$w/conf.2" >"$w/conf"
publish
check version-after-refused-fetch fetch
metric version-after-refused-taken config_version 7
rm -rf "$w/run" "$w/run.fleet" "$w/data/fleet"
cp "$w/kiosk.conf" "$w/kiosk.conf.nofloor"
echo kiosk.config.min-version=8 >>"$w/kiosk.conf"
check floor-boot-fetch fetch
check floor-boot-refused said 'version=7 is below this image.s floor \(kiosk.config.min-version=8\)'
metric floor-boot-nothing-in-use config_version 0
fact floor-boot-profile-kept http://profile.example/ kiosk get url
rm -rf "$w/run" "$w/run.fleet"
mkdir -p "$w/data/fleet"
cp "$w/www/kiosk.conf" "$w/www/kiosk.conf.sig" "$w/data/fleet/"
check floor-store-fetch fetch
check floor-store-refused said "$w/data/fleet: version=7 is below this image.s floor"
fact floor-store-profile-kept http://profile.example/ kiosk get url
cp "$w/kiosk.conf.nofloor" "$w/kiosk.conf"
check floor-none-fetch fetch
metric floor-none-taken config_version 7

# 5d. A reply larger than 1 MiB, sent in chunks (no Content-Length for curl's --max-filesize): refused by name
# after 1 MiB + 1 byte, nothing of it left in root's directory, the configuration in use kept.
CMDLINE="quiet kiosk.config=http://127.0.0.1:$port/huge.conf kiosk.group=lobby"
check huge-fetch fetch
check huge-refused said 'huge.conf is larger than 1048576 bytes: refused'
check huge-not-left test ! -e "$w/run.fleet/fleet/new" -a ! -e "$w/run.fleet/fleet/new.sig"
metric huge-fetch-failed config_fetch_ok 0
metric huge-version-kept config_version 7
CMDLINE="quiet kiosk.config=$CFG kiosk.group=lobby"

# 6. The command line still wins over the fleet; the fleet over the profile.
CMDLINE="quiet kiosk.config=$CFG kiosk.group=lobby kiosk.url=http://cmdline.example/"
fact cmdline-wins http://cmdline.example/ kiosk get url
CMDLINE="quiet kiosk.config=$CFG kiosk.group=lobby"
fact fleet-over-profile http://mac.example/page kiosk get url

# 7. Scheduled reload and reboot: due at this minute, once; a time two hours on is not due; the stagger offset is
# below it and the same at every call.
now=$(date +%H:%M) later=$(date -d '+2 hours' +%H:%M)
sed "s/^version=2\$/version=10\nreload-at=$now\nreboot-at=$later/" "$w/conf.2" >"$w/conf"
publish
check schedule-config fetch
browser
: >"$w/systemctl.log"
check schedule-runs kiosk schedule 2>>"$w/log"
check reload-at-fires ended
browser
check schedule-again kiosk schedule
check reload-at-once fails ended
check reboot-at-later-not-yet no_line reboot "$w/systemctl.log"
sed "s/^version=2\$/version=11\nreboot-at=$now/" "$w/conf.2" >"$w/conf"
publish
check schedule-reboot-config fetch
check schedule-reboot-runs kiosk schedule 2>>"$w/log"
check reboot-at-fires grep -qx reboot "$w/systemctl.log"
kiosk fleet-once >/dev/null 2>&1
metric scheduled-reload-counted scheduled_reloads_total 1
a=$(HOST=k7 kiosk offset 10min) b=$(HOST=k8 kiosk offset 10min)
check stagger-in-range test "$a" -ge 0 -a "$a" -lt 600 -a "$b" -ge 0 -a "$b" -lt 600
check stagger-differs test "$a" != "$b"
fact stagger-stable "$a" env HOST=k7 bash -c "$(declare -f kiosk); w=$w K=$K kiosk offset 10min"
fact no-stagger 0 kiosk offset 0

# 8. The service's loop itself (kiosk fleet: restore, fetch every kiosk.poll=, metrics every tick): a new version
# published while it runs is in use within a poll; the server gone, the one in use stays and the metrics say so.
rm -rf "$w/run" "$w/run.fleet"
sed 's/^version=2$/version=20/' "$w/conf.2" >"$w/conf"
publish
CMDLINE="quiet kiosk.config=$CFG kiosk.group=lobby kiosk.poll=2s"
printf '%s\n' "$CMDLINE" >"$w/cmdline"
env PATH="$w/bin:$PATH" KIOSK_CMDLINE="$w/cmdline" KIOSK_CONF="$w/kiosk.conf" KIOSK_RUN="$w/run" KIOSK_PUBKEY="$w/admin.pem" \
	KIOSK_TEXTFILE="$w/textfile" KIOSK_POLICY_DIR="$w/policy" KIOSK_HOSTNAME=k7 KIOSK_MACS=52:54:00:AA:BB:CC KIOSK_TICK=1 \
	"$K" fleet >"$w/loop.log" 2>&1 &
loop=$! # the script itself (env execs it), not a subshell that would leave it running
at_exit "kill $loop 2>/dev/null"
until_metric() { # NAME VALUE: within 15 s
	for _ in $(seq 30); do
		grep -qx "liveunion_kiosk_$1 $2" "$w/textfile/liveunion-kiosk.prom" 2>/dev/null && return 0
		sleep 0.5
	done
	sed 's/^/#   | /' "$w/loop.log" >&2
	return 1
}
check loop-first-fetch until_metric config_version 20
sed 's/^version=2$/version=21/; s/^zoom=1.5$/zoom=1.75/' "$w/conf.2" >"$w/conf"
publish
check loop-change-within-a-poll until_metric config_version 21
fact loop-change-applied 1.75 kiosk get zoom
mv "$w/www/kiosk.conf" "$w/www/kiosk.conf.away"
check loop-server-gone-said until_metric config_fetch_ok 0
fact loop-server-gone-kept 1.75 kiosk get zoom
check loop-uptime-written until_metric uptime_seconds "$(cut -d. -f1 /proc/uptime | sed 's/.$/[0-9]/')"
kill "$loop"
CMDLINE="quiet kiosk.config=$CFG kiosk.group=lobby"

# 9. The admin's screenshot server as the image has it (busybox httpd, the hash file kiosk.sh writes, the CGI
# program), a fake grim (a PNG header and the Wayland socket it was given) and runuser (the user it ran as): no
# token or a wrong one 401, the token the PNG; no Wayland socket 503, named.
if ! command -v busybox >/dev/null; then
	skip screenshot-server "no busybox on this host (Debian: apt-get install busybox)"
	finish
fi
(
	die() { echo "die: $*" >&2; exit 1; }
	# shellcheck source=rootfs/kiosk.sh
	. "$TOP/rootfs/kiosk.sh"
	printf 'Zq3-token_0123456789abcdef\n' >"$w/token"
	kiosk_admin_httpd "$w/token" fleettest "$w/admin-httpd.conf"
)
mkdir -p "$w/admin/cgi-bin" "$w/xdg"
printf '#!/bin/sh\nexec env PATH=%s/bin:$PATH KIOSK_RUN=%s/run KIOSK_CONF=%s/kiosk.conf KIOSK_CMDLINE=%s/cmdline KIOSK_XDG_RUNTIME_DIR=%s/xdg %s screenshot\n' \
	"$w" "$w" "$w" "$w" "$w" "$K" >"$w/admin/cgi-bin/screenshot"
printf '#!/bin/sh\nprintf "\\211PNG\\r\\n\\032\\n%%s %%s" "$WAYLAND_DISPLAY" "$USER_WAS"\n' >"$w/bin/grim"
chmod +x "$w/admin/cgi-bin/screenshot" "$w/bin/grim"
# (busybox httpd cannot say which port it took: one found free)
aport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
busybox httpd -f -p "127.0.0.1:$aport" -c "$w/admin-httpd.conf" -h "$w/admin" -r liveunion-kiosk &
at_exit "kill $! 2>/dev/null"
sleep 0.5
S=http://127.0.0.1:$aport/cgi-bin/screenshot
code() { curl -s -o "$w/shot" -w '%{http_code}' "$@"; }
fact screenshot-no-token 401 code "$S"
fact screenshot-wrong-token 401 code -u admin:Zq3-token_0123456789abcdeX "$S"
fact screenshot-no-wayland 503 code -u admin:Zq3-token_0123456789abcdef "$S"
check screenshot-no-wayland-said grep -q "no Wayland socket in $w/xdg" "$w/shot"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$w/xdg/wayland-0"
: >"$w/xdg/wayland-0.lock"
fact screenshot-with-token 200 code -u admin:Zq3-token_0123456789abcdef "$S"
check screenshot-is-png grep -q $'^\x89PNG' "$w/shot"
check screenshot-grim-as-kiosk-on-cage-socket grep -q 'wayland-0 kiosk$' "$w/shot"
not_served() { c=$(code --path-as-is -u admin:Zq3-token_0123456789abcdef "http://127.0.0.1:$aport/$1") && [ "$c" != 200 ] && ! grep -qF '$1$' "$w/shot"; }
check screenshot-hash-file-not-served not_served ../admin-httpd.conf
finish

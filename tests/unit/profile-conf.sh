#!/usr/bin/env bash
# summary: profile files are data: rootfs/profile.sh reads key=value (comments, last occurrence wins), refuses unknown keys, bad names and missing profiles by name, sorts package lists; kiosk persistence keys reach the command line; kernel=tiny|pc (default tiny, inherited from base=, debian and kiosk on pc) and the firmware it brings; the shipped profiles load; the debian profile (and the kiosk on it) installs liveunion-good.service, enabled, after multi-user.target and boot-complete.target (an A/B stick's slot on trial kept)
# shellcheck disable=SC2016 # the single-quoted snippets are evaluated by run_profile
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-profile-conf.XXXXXX")
at_exit "rm -rf '$work'"

# run_profile SNIPPET: SNIPPET in a subshell with the profile code sourced against $work/profiles; stdout+stderr.
run_profile() {
	(
		# shellcheck disable=SC2317 # called by the sourced code
		log() { printf '%s\n' "liveunion: $*" >&2; }
		# shellcheck disable=SC2317
		die() { printf '%s\n' "liveunion: error: $*" >&2; exit 1; }
		# shellcheck source=rootfs/profile.sh
		. "$TOP/rootfs/profile.sh"
		# shellcheck source=rootfs/kiosk.sh
		. "$TOP/rootfs/kiosk.sh"
		PROFILE_DIR=${PDIR:-$work/profiles}
		eval "$1"
	) 2>&1
}
expect() { # NAME WANT-REGEX SNIPPET [fail]: SNIPPET's output matches WANT-REGEX (and its status is as expected)
	local name=$1 want=$2 out rc
	out=$(run_profile "$3")
	rc=$?
	if [ "${4:-ok}" = fail ] && [ "$rc" -eq 0 ]; then bad "$name (succeeded: $out)"; return; fi
	if [ "${4:-ok}" = ok ] && [ "$rc" -ne 0 ]; then bad "$name (exit $rc: $out)"; return; fi
	if grep -Eq -- "$want" <<<"$out"; then ok "$name"; else bad "$name (output: $out)"; fi
}

mkdir -p "$work/profiles"
cat >"$work/profiles/a.conf" <<'C'
# a comment
rootfs=debootstrap
hostname=first
hostname=second   # the last occurrence wins; a trailing comment is dropped

cmdline=live.timeout=5
C
printf 'zlib1g\n# comment\n  perl  \n\nbash\nperl\n' >"$work/profiles/a.packages"
printf 'rootfs=debootstrap\nhostnme=typo\n' >"$work/profiles/typo.conf"
printf 'hostname=x\n' >"$work/profiles/nobase.conf"
printf 'base=a\nkiosk.command=/bin/app --full\nkiosk.persist=yes\nkiosk.data=/srv/app\ncmdline=quiet\n' >"$work/profiles/k.conf"
printf 'base=a\nkiosk.command=/bin/app\n' >"$work/profiles/k2.conf"
printf 'base=k\n' >"$work/profiles/deep.conf"
printf 'rootfs=debootstrap\njust text\n' >"$work/profiles/notkv.conf"

expect last-occurrence-wins '^second$' 'profile_load a; echo "${PCONF[hostname]}"'
expect name-recorded '^a$' 'profile_load a; echo "${PCONF[name]}"'
expect unknown-key-named 'typo.conf:2: unknown key .hostnme.' 'profile_load typo' fail
expect not-key-value-named 'notkv.conf:2: not key=value: just text' 'profile_load notkv' fail
expect rootfs-or-base-required 'rootfs=debootstrap or base=OTHER is required' 'profile_load nobase' fail
expect missing-profile-lists-profiles "no profile 'nope'.*profiles: a .*k " 'profile_load nope' fail
expect bad-name-refused "profile name '../a'" 'profile_load ../a' fail
expect one-level-of-base 'has base= itself' 'profile_load deep' fail
expect packages-sorted-unique-no-comments '^bash,perl,zlib1g$' 'profile_packages a | paste -sd, -'
expect base-keys-visible '^second$' 'profile_load k; echo "${PCONF[base.hostname]}"'
expect kiosk-persist-paths-cmdline '^live.timeout=5 consoleblank=0 live.persist.paths=/srv/app quiet$' 'profile_load k; profile_cmdline'
expect kiosk-default-persistence-off '^live.timeout=5 consoleblank=0 live.persist=off$' 'profile_load k2; profile_cmdline'
expect plain-profile-cmdline '^live.timeout=5$' 'profile_load a; profile_cmdline'
printf 'rootfs=debootstrap\nkernel=pc\n' >"$work/profiles/pc.conf"
printf 'rootfs=debootstrap\nkernel=pc\nfirmware.nonfree=no\n' >"$work/profiles/pcfree.conf"
printf 'base=pc\n' >"$work/profiles/onpc.conf"
printf 'rootfs=debootstrap\nkernel=big\n' >"$work/profiles/badkernel.conf"
printf 'rootfs=debootstrap\nkernel=pc\nfirmware.nonfree=maybe\n' >"$work/profiles/badfw.conf"
expect kernel-default-tiny '^tiny:$' 'profile_load a; echo "$PFLAVOUR:$(profile_firmware | paste -sd, -)"'
expect kernel-pc-nonfree-firmware '^pc:firmware-linux-free,firmware-misc-nonfree,firmware-amd-graphics,firmware-realtek,firmware-iwlwifi$' \
	'profile_load pc; echo "$PFLAVOUR:$(profile_firmware | paste -sd, -)"'
expect kernel-pc-free-firmware-only '^pc:firmware-linux-free$' 'profile_load pcfree; echo "$PFLAVOUR:$(profile_firmware | paste -sd, -)"'
expect kernel-from-base '^pc$' 'profile_load onpc; echo "$PFLAVOUR"'
expect kernel-bad-value-named 'kernel=big: use tiny or pc' 'profile_load badkernel' fail
expect firmware-bad-value-named 'firmware.nonfree=maybe: use yes or no' 'profile_load badfw' fail
# The browser kiosk's keys: each wrong value named with what it should be (rootfs/kiosk.sh kiosk_check).
expect kiosk-url-ok '^ok$' 'declare -A c=([kiosk.url]=http://x/ [kiosk.idle]=5min [kiosk.rotate]=90 [kiosk.zoom]=1.5 [kiosk.cursor]=yes); kiosk_check c t; echo ok'
expect kiosk-text-ok '^ok$' 'declare -A c=([kiosk.command]=/bin/app); kiosk_check c t; echo ok'
expect kiosk-url-and-command 'kiosk.command= and kiosk.url= are both set' 'declare -A c=([kiosk.url]=http://x/ [kiosk.command]=/bin/app); kiosk_check c t' fail
expect kiosk-neither 'kiosk.url= .* or kiosk.command= .* is required' 'declare -A c=(); kiosk_check c t' fail
expect kiosk-bad-browser 'kiosk.browser=opera: use chromium or firefox' 'declare -A c=([kiosk.url]=http://x/ [kiosk.browser]=opera); kiosk_check c t' fail
expect kiosk-bad-idle 'kiosk.idle=5 minutes: use N, Ns, Nmin or Nh' 'declare -A c=([kiosk.url]=http://x/ [kiosk.idle]="5 minutes"); kiosk_check c t' fail
expect kiosk-bad-rotate 'kiosk.rotate=45: use 0, 90, 180 or 270' 'declare -A c=([kiosk.url]=http://x/ [kiosk.rotate]=45); kiosk_check c t' fail
expect kiosk-bad-zoom 'kiosk.zoom=big: use a number' 'declare -A c=([kiosk.url]=http://x/ [kiosk.zoom]=big); kiosk_check c t' fail
expect kiosk-bad-cursor 'kiosk.cursor=maybe: use yes or no' 'declare -A c=([kiosk.url]=http://x/ [kiosk.cursor]=maybe); kiosk_check c t' fail
expect kiosk-bad-url 'kiosk.url=file:///etc/passwd: use an http:// or https:// address' 'declare -A c=([kiosk.url]=file:///etc/passwd); kiosk_check c t' fail
expect kiosk-min-version-ok '^ok$' 'declare -A c=([kiosk.url]=http://x/ [kiosk.config.min-version]=2147483647); kiosk_check c t; echo ok'
for v in 2147483648 9223372036854775808 7a -1; do
	expect "kiosk-bad-min-version-$v" "kiosk.config.min-version=$v: use a whole number below 2\\^31" "declare -A c=([kiosk.url]=http://x/ [kiosk.config.min-version]=$v); kiosk_check c t" fail
done
# The screenshot token (rootfs/kiosk.sh kiosk_admin_httpd): varied, base64 taken; the salt of its hash from the
# token (another token, another salt). (More of it below.)
# shellcheck disable=SC2317 # called through expect (eval)
token_hash() { printf '%s\n' "$1" >"$work/token" && kiosk_admin_httpd "$work/token" "${2:-t}" "$work/admin-httpd.conf" && sed -n 's|^/cgi-bin:admin:||p' "$work/admin-httpd.conf"; }
expect kiosk-token-one-char-refused 'at least 8 of them different' 'token_hash aaaaaaaaaaaaaaaaaaaaaaaaaaaa' fail
expect kiosk-token-low-variety-refused 'at least 8 of them different' 'token_hash abcdefgabcdefgabcdefgabcdefg' fail
expect kiosk-token-base64-taken '^\$1\$[0-9a-f]{8}\$' 'token_hash "q9Zr+7Kd/2Lm8XwPq1Vb0Nc3Ft5Hy6Ua="'
expect kiosk-token-salt-differs '^ok$' '[ "$(token_hash Zq3-token_0123456789abcdef | cut -d\$ -f3)" != "$(token_hash Zq3-token_0123456789abcdeX | cut -d\$ -f3)" ] && echo ok'
expect kiosk-idle-seconds '^300 45 7200$' 'for v in 5min 45s 2h; do "$TOP/rootfs/kiosk/kiosk" seconds $v; done | paste -sd" " -'
# kiosk prepare's allowlist (the managed policy beside URLBlocklist "*"): kiosk.url='s origin, http(s) entries as
# given, an entry without a scheme as its http and https forms (chromium would match it against chrome:// too), and
# every other scheme, or a scheme:path without //, left out and named; "*" is not expanded to the working
# directory's files (one named zz is there).
# shellcheck disable=SC2317 # called through expect (eval)
allow_run() { # KIOSK-ALLOW: the allowlist written for kiosk.url=https://kiosk.example.org/page and it, as one line
	local d=$work/allow
	rm -rf "$d" && mkdir -p "$d/policy" "$d/cwd" && touch "$d/cwd/zz" &&
		printf 'quiet kiosk.url=https://kiosk.example.org/page kiosk.allow=%s\n' "$1" >"$d/cmdline" &&
		(cd "$d/cwd" && KIOSK_CMDLINE=$d/cmdline KIOSK_CONF=/dev/null KIOSK_POLICY_DIR=$d/policy "$TOP/rootfs/kiosk/kiosk" allowlist 2>&1) | tr '\n' ' ' &&
		tr -d ' \n' <"$d/policy/liveunion-kiosk-allow.json"
}
AW='"http://127.0.0.1:47800/waiting.html","https://kiosk.example.org:443"'
# (the page's origin with its port: https://kiosk.example.org:443, not every port of the host)
expect kiosk-allow-http-as-given "^\{\"URLAllowlist\":\[$AW,\"https://x.org/a\",\"http://cdn.example.org:8080/p\"\]\}\$" \
	'allow_run https://x.org/a,http://cdn.example.org:8080/p'
expect kiosk-allow-no-scheme-as-http-and-https "^\{\"URLAllowlist\":\[$AW,\"http://cdn.example.org\",\"https://cdn.example.org\",\"http://\.example.net/img\",\"https://\.example.net/img\"\]\}\$" \
	'allow_run cdn.example.org,.example.net/img'
expect kiosk-allow-star-not-expanded-refused "'\*' is not an http\(s\) URL filter.*left out.*\{\"URLAllowlist\":\[$AW\]\}\$" 'allow_run "*"'
for a in chrome:settings chrome://settings file:///etc/passwd devtools:x view-source:http:x data:text/html javascript:x settings:x \
	http://* '*.example.org' localhost https://LocalHost:8080/x sub.localhost 127.0.0.1 http://127.1.2.3:47800/ '[::1]' \
	'http://[::1]:631/' 0.0.0.0 kiosk-12:9100 http://kiosk-12.example:9101/cgi-bin/screenshot; do
	expect "kiosk-allow-refuses-${a//[^a-z0-9]/-}" "left out.*\{\"URLAllowlist\":\[$AW\]\}\$" "allow_run '$a'"
done
expect kiosk-chromium-packages '^alsa-utils,busybox,ca-certificates,cage,chromium,curl,fonts-dejavu-core,grim,openssl,prometheus-node-exporter,seatd,xkb-data,xwayland$' 'declare -A c=([name]=none [kiosk.url]=http://x/); kiosk_packages c | paste -sd, -'
expect kiosk-firefox-packages '^alsa-utils,busybox,ca-certificates,cage,curl,firefox-esr,' 'declare -A c=([name]=none [kiosk.url]=http://x/ [kiosk.browser]=firefox); kiosk_packages c | paste -sd, -'
# The fleet's keys (rootfs/kiosk.sh kiosk_check, kiosk_admin_key): the admin's key is a PEM public key or
# certificate, never a private key, and kiosk.config= needs one.
expect kiosk-config-ok '^ok$' 'declare -A c=([kiosk.url]=http://x/ [kiosk.config]=https://admin.example/k.conf [kiosk.config.key]=admin.pem [kiosk.poll]=2min [kiosk.group]=lobby-2); kiosk_check c t; echo ok'
expect kiosk-config-needs-key 'kiosk.config= needs kiosk.config.key=' 'declare -A c=([kiosk.url]=http://x/ [kiosk.config]=https://admin.example/k.conf); kiosk_check c t' fail
expect kiosk-config-bad-url 'kiosk.config=ftp://a/k: use an http:// or https:// address' 'declare -A c=([kiosk.url]=http://x/ [kiosk.config]=ftp://a/k [kiosk.config.key]=k); kiosk_check c t' fail
expect kiosk-schedule-ok '^ok$' 'declare -A c=([kiosk.url]=http://x/ [kiosk.reload-at]=06:00 [kiosk.reboot-at]=23:59 [kiosk.stagger]=20min); kiosk_check c t; echo ok'
expect kiosk-bad-reboot-at 'kiosk.reboot-at=4:30: use HH:MM' 'declare -A c=([kiosk.url]=http://x/ [kiosk.reboot-at]=4:30); kiosk_check c t' fail
expect kiosk-bad-stagger 'kiosk.stagger=lots: use N, Ns' 'declare -A c=([kiosk.url]=http://x/ [kiosk.stagger]=lots); kiosk_check c t' fail
expect kiosk-bad-poll 'kiosk.poll=often: use N, Ns, Nmin or Nh' 'declare -A c=([kiosk.url]=http://x/ [kiosk.poll]=often); kiosk_check c t' fail
expect kiosk-bad-group "kiosk.group=a b: use letters" 'declare -A c=([kiosk.url]=http://x/ [kiosk.group]="a b"); kiosk_check c t' fail
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/admin.key" 2>/dev/null
openssl pkey -in "$work/admin.key" -pubout -out "$work/admin.pub" 2>/dev/null
openssl req -x509 -new -key "$work/admin.key" -subj /CN=kiosk-admin -days 3650 -out "$work/admin.crt" 2>/dev/null
expect kiosk-admin-key-from-public-key '^same$' 'kiosk_admin_key "$work/admin.pub" "$work/out.pem" && cmp "$work/admin.pub" "$work/out.pem" && echo same'
expect kiosk-admin-key-from-certificate '^same$' 'kiosk_admin_key "$work/admin.crt" "$work/out.pem" && cmp "$work/admin.pub" "$work/out.pem" && echo same'
expect kiosk-admin-key-not-private 'neither a PEM certificate nor a PEM public key \(a private key never goes into the image' 'kiosk_admin_key "$work/admin.key" "$work/out.pem"' fail
expect kiosk-admin-key-missing 'kiosk.config.key=/nonexistent.pem: no such file' 'kiosk_admin_key /nonexistent.pem "$work/out.pem"' fail
expect kiosk-key-file-relative-to-profiles "^$work/profiles/keys/admin.pem /abs.pem\$" 'declare -A a=([kiosk.config.key]=keys/admin.pem) b=([kiosk.config.key]=/abs.pem); echo $(kiosk_key_file a) $(kiosk_key_file b)'
# The screenshot token: only its hash in the image (the same for the same profile), a weak token refused.
printf 'a1b2c3d4e5f60718293a4b5c6d7e8f90\n' >"$work/token"
printf 'secret\n' >"$work/short"
expect kiosk-token-hashed '^/cgi-bin:admin:\$1\$[^:]+$' 'kiosk_admin_httpd "$work/token" kiosk "$work/h1" && grep -v "^#" "$work/h1"'
expect kiosk-token-not-in-clear '^absent$' 'kiosk_admin_httpd "$work/token" kiosk "$work/h1" && ! grep -q a1b2c3d4 "$work/h1" && echo absent'
expect kiosk-token-root-only '^600$' 'kiosk_admin_httpd "$work/token" kiosk "$work/h1" && stat -c %a "$work/h1"'
expect kiosk-token-hash-reproducible '^same$' 'kiosk_admin_httpd "$work/token" kiosk "$work/h1" && kiosk_admin_httpd "$work/token" kiosk "$work/h2" && cmp "$work/h1" "$work/h2" && echo same'
expect kiosk-token-short-refused 'the token must be 16 or more' 'kiosk_admin_httpd "$work/short" kiosk "$work/h3"' fail
# The profiles in the tree load, and their package lists are what docs/profiles.md says the debian one holds.
for p in "$TOP"/configs/profiles/*.conf; do
	n=$(basename "$p" .conf)
	PDIR=$TOP/configs/profiles expect "shipped-profile-$n-loads" "^$n$" "profile_load $n; echo \"\${PCONF[name]}\""
done
PDIR=$TOP/configs/profiles expect debian-packages-systemd-python3-perl-no-initramfs-tools '^ok$' \
	'l=$(profile_packages debian); for p in systemd systemd-sysv udev sudo python3 perl; do grep -qx "$p" <<<"$l" || exit 1; done; grep -Eqx "initramfs-tools|dracut" <<<"$l" && exit 1; echo ok'
PDIR=$TOP/configs/profiles expect debian-and-kiosk-on-pc '^pc pc$' 'profile_load debian; a=$PFLAVOUR; profile_load kiosk; echo "$a $PFLAVOUR"'
# An A/B stick's slot on trial is kept by the debian profile (and the kiosk built on it) once the boot is up:
# liveunion-good.service in the tree, enabled, ordered after multi-user.target and boot-complete.target.
# shellcheck disable=SC2317 # called by the snippets run_profile evaluates
good_unit() { # the unit as debian_configure installs it, in $work/tree
	# shellcheck source=rootfs/debian.sh
	. "$TOP/rootfs/debian.sh" && rm -rf "$work/tree" && debian_good_unit "$work/tree" &&
		cat "$work/tree/etc/systemd/system/liveunion-good.service"
}
expect debian-configure-installs-good-unit '^wired$' '. "$TOP/rootfs/debian.sh"; declare -f debian_configure | grep -q "debian_good_unit \"\$t\"" && echo wired'
expect debian-good-unit-enabled '^enabled$' 'good_unit >/dev/null && systemctl --root="$work/tree" is-enabled liveunion-good.service'
expect debian-good-unit-after-multi-user '^ok$' 'good_unit | grep -Eq "^After=.*multi-user\.target" && echo ok'
expect debian-good-unit-after-boot-complete '^ok$' 'u=$(good_unit) && grep -Eq "^After=.*boot-complete\.target" <<<"$u" && grep -qx "Requires=boot-complete.target" <<<"$u" && echo ok'
expect debian-good-unit-not-before-anything '^ok$' 'good_unit | grep -q "^Before=" || echo ok'
expect debian-good-unit-health-then-good '^ok$' 'good_unit | grep -Eq "^ExecStart=.*/etc/liveunion/health.*exit 1.*liveunion update --good --boot.$" && echo ok'
expect debian-good-unit-verifies '^ok$' 'good_unit >/dev/null && systemd-analyze verify "$work/tree/etc/systemd/system/liveunion-good.service" && echo ok'
PDIR=$TOP/configs/profiles expect kiosk-built-on-debian '^debian$' 'profile_load kiosk; echo "${PCONF[base]}"'
PDIR=$TOP/configs/profiles expect kiosk-menu-persistence-off '^loglevel=4 consoleblank=0 live.persist=off$' 'profile_load kiosk; profile_cmdline'

finish

#!/usr/bin/env bash
# summary: authenticated network boot (namespace lab): ./build.sh netboot --uki makes a signed UKI whose command line carries live.fetch= and the root hashes, serve gives it to UEFI HTTP boot clients (vendor class HTTPClient); an OVMF client with Secure Boot on (the lab's keys in db), q35, no iPXE, boots it by the firmware's own HTTP boot and logs in, its layers fetched through a plain nginx proxy_cache that is trusted with nothing (image URLs content-named, kept as immutable); the UKI changed on the server is refused by the firmware (Access Denied, no kernel); a rogue DHCP server's unsigned boot file is refused; a layer, .verity or MANIFEST changed behind the cache stops the boot naming it (live.panic, signed)
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
# shellcheck disable=SC2317 # functions run through check and require
# shellcheck source=tests/qemu/lib/lab.bash
. "$(dirname "$0")/lib/lab.bash"
# shellcheck source=tests/qemu/lib/media.bash
. "$(dirname "$0")/lib/media.bash"
needs_root "network namespaces, bridges and taps for the lab"

W=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-nbhttp.XXXXXX") || exit 1
at_exit "rm -rf '$W'"
chmod 755 "$W" # the servers read the trees as unprivileged users
NB=$W/nb
CACHE=http://$LAB_ADDR:8080/
SB_VAR=/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
# The lab's firmware trusts Debian's OVMF test certificate (PK, KEK and db: OVMF_VARS_4M.snakeoil.fd, its key ships
# in the ovmf package); the build signs with this checkout's key, which the UKI is re-signed from, as a lab does
# with its own db key (SB_KEY/SB_CERT: passed to the build they would rebuild the ISO everyone's tests use).
LAB_KEY=$W/lab.key LAB_CERT=/usr/share/ovmf/PkKek-1-snakeoil.pem

# ---- the tree: the signed UKI names the cache as where its layers are
require netboot-uki-tree-written "$TOP/build.sh" netboot -o "$NB" --uki --url "$CACHE"
check uki-needs-url fails "$TOP/build.sh" netboot -o "$W/nourl" --uki
ID=$(sed -n 's|^chain images/\([0-9a-f]*\)/boot\.ipxe$|\1|p' "$NB/current.ipxe")
IMG=$NB/images/$ID
UKI=$(readlink "$NB/current.efi")
require current-efi-names-a-uki test -f "$NB/$UKI"
check current-efi-in-the-newest-image test "${UKI%/*}" = "images/$ID"
check uki-named-by-its-content test "liveunion-$(sha256sum "$NB/$UKI" | cut -c1-12).efi" = "${UKI##*/}"
check uki-signed-with-checkout-key sbverify --cert "$OUT/sb/key/db.crt" "$NB/$UKI"
require uki-cmdline objcopy -O binary --only-section=.cmdline "$NB/$UKI" "$W/cmdline"
LINE=$(tr -d '\n' <"$W/cmdline")
check uki-cmdline-is-the-images-with-fetch test "$LINE" = "$(cat "$IMG/cmdline") live.panic live.fetch=${CACHE}images/$ID/"
check uki-cmdline-has-root-hashes grep -qE 'live\.verify=10-base:[0-9a-f]{64}' "$W/cmdline"
# the layer's files also under its content's name, the root hash: the same inode, and the map serve redirects by
ROOT=$(sed -n 's/.*live\.verify=10-base:\([0-9a-f]\{64\}\).*/\1/p' "$W/cmdline")
LAYER=layers/$ROOT/10-base.squashfs
check layer-under-root-hash test "$NB/$LAYER" -ef "$IMG/live/10-base.squashfs"
check verity-under-root-hash test "$NB/layers/$ROOT/10-base.verity" -ef "$IMG/live/10-base.verity"
check layers-map-names-them output_is "10-base.squashfs $LAYER
10-base.verity layers/$ROOT/10-base.verity" cat "$IMG/layers.map"
# the lab's key: the same UKI, its signature replaced
require lab-key openssl pkey -in /usr/share/ovmf/PkKek-1-snakeoil.key -passin pass:snakeoil -out "$LAB_KEY"
require resigned sh -c "cp '$NB/$UKI' '$W/unsigned.efi' && sbattach --remove '$W/unsigned.efi' >/dev/null &&
	sbsign --key '$LAB_KEY' --cert '$LAB_CERT' --output '$W/lab.efi' '$W/unsigned.efi' >/dev/null 2>&1 && cp '$W/lab.efi' '$NB/$UKI'"
check resigned-verifies sbverify --cert "$LAB_CERT" "$NB/$UKI"

# ---- the lab: our server as the lab's DHCP server (UEFI HTTP boot takes no proxyDHCP), the site's beside it
require lab-up lab_up
require serve-starts lab_serve "$NB" --dhcp-range 10.77.0.100,10.77.0.150
check serve-matches-httpclient grep -qx 'dhcp-vendorclass=set:http,HTTPClient' "$LAB_SERVE_LOG"
check serve-answers-as-httpclient grep -qx 'dhcp-option-force=tag:http,60,HTTPClient' "$LAB_SERVE_LOG"
check serve-gives-uki-url grep -qx "dhcp-boot=tag:http,http://$LAB_ADDR/current.efi" "$LAB_SERVE_LOG"
check serve-keeps-pxe grep -qx 'pxe-service=tag:!ipxe,x86PC,"liveunion (BIOS): iPXE",undionly.kpxe' "$LAB_SERVE_LOG"
ACCESS=$(lab_access_log)

# A plain HTTP cache (Debian's nginx, proxy_cache) on :8080 in front of the server: it keeps what the server says
# it may, and is trusted with nothing.
cache_start() {
	rm -rf "$W/cache" && mkdir -p "$W/cache/tmp" && chmod -R 777 "$W/cache" || return 1
	cat >"$W/cache.conf" <<EOF
daemon off;
pid $W/cache/nginx.pid;
error_log stderr warn;
events { worker_connections 64; }
http {
	access_log $W/cache/access.log;
	client_body_temp_path $W/cache/tmp/b; proxy_temp_path $W/cache/tmp/p; fastcgi_temp_path $W/cache/tmp/f;
	uwsgi_temp_path $W/cache/tmp/u; scgi_temp_path $W/cache/tmp/s;
	proxy_cache_path $W/cache/store keys_zone=lab:1m;
	server {
		listen $LAB_ADDR:8080;
		location / {
			proxy_pass http://$LAB_ADDR:80;
			proxy_cache lab;
			add_header X-Cache-Status \$upstream_cache_status;
		}
	}
}
EOF
	ip netns exec "$LAB_NS" nginx -c "$W/cache.conf" -p "$W/cache" >"$W/cache/log" 2>&1 &
	CACHE_PID=$!
	local i
	for i in $(seq 50); do lab_ns curl -s -o /dev/null "$CACHE" && return 0; sleep 0.1; done
	return 1
}
cache_stop() { [ -z "${CACHE_PID:-}" ] || { kill "$CACHE_PID" 2>/dev/null; wait "$CACHE_PID" 2>/dev/null; }; CACHE_PID=''; }
CACHE_PID=''
at_exit cache_stop
require cache-starts cache_start
check image-files-immutable lab_ns sh -c "curl -sfI http://$LAB_ADDR/images/$ID/live/MANIFEST | grep -qi '^Cache-Control: public, max-age=31536000, immutable'"
check layer-url-redirects-to-content-name lab_ns sh -c "curl -sI http://$LAB_ADDR/images/$ID/live/10-base.squashfs | tr -d '\\r' | grep -qx 'Location: /$LAYER'"
check content-name-immutable lab_ns sh -c "curl -sfI http://$LAB_ADDR/$LAYER | grep -qi '^Cache-Control: public, max-age=31536000, immutable'"
check current-efi-not-cached lab_ns sh -c "curl -sfI http://$LAB_ADDR/current.efi | grep -qi '^Cache-Control: no-cache'"
check current-efi-is-efi lab_ns sh -c "curl -sfI http://$LAB_ADDR/current.efi | grep -qi '^Content-Type: application/efi'"

# The client: OVMF with Secure Boot on, q35 (vm_start's VM_SB), a virtio NIC without option ROM, booting from it.
# OVMF tries PXE before HTTP on a NIC; its fw_cfg switches turn PXE off, so the firmware goes to HTTP boot at once.
# shellcheck disable=SC2034 # vm_start reads them
VM_QEMU=$LAB_QEMU VM_SB=snakeoil
http_client() {
	local name=$1 mac=$2
	lab_tap || return 1
	lab_nic_args "$LAB_TAP" "$mac" ""
	vm_start "$name" net-uefi "" "${LAB_NIC[@]}" -fw_cfg name=opt/org.tianocore/IPv4PXESupport,string=n \
		-fw_cfg name=opt/org.tianocore/IPv6PXESupport,string=n
}
# refused REGEX: the firmware printed REGEX and no kernel started.
refused() {
	vm_wait "$1" 240 || return 1
	sleep 3
	log_lacks 'Linux version|liveunion: '
}

# ---- 1. the client boots by HTTP boot with Secure Boot on, its layers through the cache
require http-client-starts http_client nbhttp-boot 52:54:00:77:01:11
check firmware-http-boots-the-uki vm_wait "URI: http://$LAB_ADDR/current\\.efi" 240
require http-client-login vm_login
check http-kernel-says-secure-boot vm_run 'dmesg | grep -q "Secure boot enabled"'
check http-secureboot-variable-is-1 vm_fact "grep -q ' /sys/firmware/efi/efivars ' /proc/mounts || mount -t efivarfs efivarfs /sys/firmware/efi/efivars; od -An -tu1 $SB_VAR | awk '{ print \$NF }'" 1
check http-cmdline-is-the-signed-one vm_fact 'cat /proc/cmdline' "$LINE"
check http-fetched-from-cache vm_run "grep -x 'medium.fetch=${CACHE}images/$ID/' /run/live/plan"
check http-every-layer-verified vm_run 'grep -x "verify.result=every layer through dm-verity" /run/live/plan'
check http-every-block-read vm_run 'grep "^check.result=passed: 1 layer" /run/live/plan'
vm_stop
check firmware-got-uki-from-server grep -qE '"GET /current\.efi HTTP/1\.1" 200 .*UefiHttpBoot' "$ACCESS"
check client-redirected-through-cache grep -qE '^10\.77\.0\.1[0-9][0-9] .*"GET /images/'"$ID"'/live/10-base\.squashfs HTTP/1\.1" 301 ' "$W/cache/access.log"
check layer-through-cache grep -qE '^10\.77\.0\.1[0-9][0-9] .*"GET /'"$LAYER"' HTTP/1\.1" 200 ' "$W/cache/access.log"
check server-sent-layer-to-cache grep -qE '^10\.77\.0\.1 .*"GET /'"$LAYER"' HTTP/1\.[01]" 200 ' "$ACCESS"
check cache-keeps-layer lab_ns sh -c "curl -sfI $CACHE$LAYER | grep -qi '^X-Cache-Status: HIT'"

# ---- 2. the UKI changed on the server (one digit of a root hash in its signed command line): refused
off=$(objdump -h "$NB/$UKI" | awk '$2 == ".cmdline" { print $6 }')
pos=$(grep -bo 'live.verify=10-base:' "$W/cmdline" | cut -d: -f1)
require cmdline-found test -n "$off" -a -n "$pos"
require uki-kept cp "$NB/$UKI" "$W/good.efi"
require uki-changed other_digit "$NB/$UKI" $((0x$off + pos + 20))
check changed-uki-differs fails cmp -s "$W/good.efi" "$NB/$UKI"
require changed-client-starts http_client nbhttp-changed 52:54:00:77:01:22
check changed-uki-refused refused 'Access Denied'
vm_stop
require uki-restored cp "$W/good.efi" "$NB/$UKI"

# ---- 3. a rogue DHCP server (ours stopped: the rogue answers first) offers its own boot file, unsigned
lab_serve_stop
mkdir -p "$W/rogue/www" && chmod -R 755 "$W/rogue"
require rogue-file cp "$W/unsigned.efi" "$W/rogue/www/rogue.efi"
check rogue-file-unsigned sh -c "sbverify --list '$W/rogue/www/rogue.efi' 2>&1 | grep -q 'No signature table present'"
ip netns exec "$LAB_NS" dnsmasq --keep-in-foreground --port=0 --interface=lab0 --bind-interfaces --log-dhcp --log-facility="$W/rogue/log" \
	--dhcp-leasefile="$W/rogue/leases" --pid-file="$W/rogue/pid" --dhcp-range=10.77.0.151,10.77.0.160,255.255.255.0,1h \
	--dhcp-vendorclass=set:http,HTTPClient --dhcp-option-force=tag:http,60,HTTPClient \
	--dhcp-boot="tag:http,http://$LAB_ADDR:8081/rogue.efi" &
ROGUE_DHCP=$!
at_exit "kill $ROGUE_DHCP 2>/dev/null"
ip netns exec "$LAB_NS" python3 -m http.server --bind "$LAB_ADDR" --directory "$W/rogue/www" 8081 >"$W/rogue/http.log" 2>&1 &
ROGUE_HTTP=$!
at_exit "kill $ROGUE_HTTP 2>/dev/null"
require rogue-client-starts http_client nbhttp-rogue 52:54:00:77:01:33
check rogue-file-offered vm_wait "URI: http://$LAB_ADDR:8081/rogue\\.efi" 240
check rogue-file-refused refused 'Access Denied'
check rogue-file-was-fetched grep -q 'GET /rogue.efi' "$W/rogue/http.log"
vm_stop
kill "$ROGUE_DHCP" "$ROGUE_HTTP" 2>/dev/null
wait "$ROGUE_DHCP" "$ROGUE_HTTP" 2>/dev/null
check rogue-servers-gone fails pgrep -f "$W/rogue"

# ---- 4. files changed behind the cache (the server's tree, the cache emptied): the signed line's init refuses
# them naming what, and panics (live.panic). The kernel, initramfs and line are the UKI's, started directly: what
# the firmware checked is not under test here, the init's check of what it fetches is.
# shellcheck disable=SC2034 # vm_start reads it
VM_SB=''
tamper() {
	local name=$1 want=$2 tree=$W/tamper-$1
	rm -rf "$tree" && cp -a "$NB" "$tree" || return 1
	(cd "$tree/images/$ID/live" && "tamper_$name") || { echo "tamper_$name failed"; return 1; }
	require "serve-$name" lab_serve "$tree" --services http
	cache_stop
	require "cache-$name" cache_start
	require "tap-$name" lab_tap
	lab_nic_args "$LAB_TAP" 52:54:00:77:01:44
	require "$name-client-starts" vm_start "nbhttp-$name" none "" --cmdline "$LINE" "${LAB_NIC[@]}"
	check "$name-named" vm_wait "$want" 150
	check "$name-panics" vm_wait 'Kernel panic - not syncing' 60
	check "$name-never-booted" log_lacks 'switching to '
	check "$name-came-through-cache" grep -q "GET /images/$ID/live/MANIFEST" "$W/cache/access.log"
	vm_stop
	rm -rf "$tree"
}
tamper_layer() { python3 -c 'import os; f = open("10-base.squashfs", "r+b"); n = os.path.getsize("10-base.squashfs") // 2; f.seek(n); b = f.read(1); f.seek(n); f.write(bytes([b[0] ^ 0x40]))'; }
tamper_verity() { python3 -c 'f = open("10-base.verity", "r+b"); f.seek(8192); b = f.read(1); f.seek(8192); f.write(bytes([b[0] ^ 1]))'; }
tamper_manifest() { cp 10-base.squashfs 20-extra.squashfs && echo "$(stat -c %s 20-extra.squashfs) 20-extra.squashfs" >>MANIFEST; }
tamper layer 'live\.check: layer 10-base FAILED|layer 10-base.*(I/O error|Input/output error|does not match its root hash)'
tamper verity 'layer 10-base.*(does not match its root hash|I/O error|Input/output error)'
tamper manifest 'layer 20-extra .*live\.verify= has no root hash for layer 20-extra'
cache_stop
finish

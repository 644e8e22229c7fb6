#!/usr/bin/env bash
# summary: network boot in a private lab (two network namespaces): ./build.sh netboot and serve (dnsmasq proxyDHCP beside the site's DHCP server, nginx, nbd-server); a BIOS client (iPXE ROM) and a UEFI client (OVMF's own PXE -> TFTP snponly.efi -> iPXE) boot to login over HTTP with every layer verified, addresses from the site's DHCP; a 256 MiB client boots over NBD and gets named I/O errors, no hang, when the server goes; a flipped byte on the server stops the boot naming the layer; HTTP stopped mid-download and back 10 s later: the client finishes; stopped for good: a clear message within live.timeout; a static ip= with a dead first URL boots from the second; a MANIFEST bigger than the RAM is refused before any download
# shellcheck source=tests/qemu/lib/lab.bash
. "$(dirname "$0")/lib/lab.bash"
# shellcheck source=tests/qemu/lib/media.bash
. "$(dirname "$0")/lib/media.bash"
needs_root "network namespaces, bridges and taps for the lab"

W=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-netboot.XXXXXX")
at_exit "rm -rf '$W'"
chmod 755 "$W" # the servers read the tree as unprivileged users (serve refuses a tree they cannot reach)
NB=$W/nb

# ---- the served tree
require netboot-tree-written "$TOP/build.sh" netboot -o "$NB"
ID=$(sed -n 's|^chain images/\([0-9a-f]*\)/boot\.ipxe$|\1|p' "$NB/current.ipxe")
IMG=$NB/images/$ID
require current-names-an-image test -n "$ID" -a -f "$IMG/boot.ipxe"
check tree-has-debian-ipxe cmp "$NB/tftp/undionly.kpxe" /usr/lib/ipxe/undionly.kpxe
check tree-has-uefi-ipxe test -s "$NB/tftp/snponly.efi" -a -s "$NB/tftp/ipxe.efi"
check manifest-lists-layer-with-its-size grep -qx "$(stat -c %s "$IMG/live/10-base.squashfs") 10-base.squashfs" "$IMG/live/MANIFEST"
check manifest-lists-hash-tree grep -q ' 10-base.verity$' "$IMG/live/MANIFEST"
check script-carries-root-hashes grep -qE 'live\.verify=10-base:[0-9a-f]{64}' "$IMG/boot.ipxe"
check script-passes-bootif grep -qF "BOOTIF=01-\${netX/mac:hexhyp}" "$IMG/boot.ipxe"
check image-name-is-content-hash test "${#ID}" = 12
# the same build published again: the same name, nothing rewritten
before=$(stat -c %Y "$IMG/boot.ipxe")
check same-build-same-image "$TOP/build.sh" netboot -o "$NB"
check same-build-leaves-image test "$(find "$NB/images" -mindepth 1 -maxdepth 1 | wc -l)" = 1 -a "$(stat -c %Y "$IMG/boot.ipxe")" = "$before"

# ---- the lab
require lab-up lab_up
# serve refuses an interface that does not exist, or has no address, naming it
check serve-refuses-missing-interface fails lab_ns "$TOP/build.sh" serve "$NB" --interface nosuch0
lab_ns "$TOP/build.sh" serve "$NB" --interface nosuch0 >"$W/err" 2>&1
check serve-names-missing-interface grep -q "interface 'nosuch0' does not exist" "$W/err"
lab_ns ip link add noaddr0 type veth peer name noaddr1
check serve-refuses-interface-without-address fails lab_ns "$TOP/build.sh" serve "$NB" --interface noaddr0
lab_ns "$TOP/build.sh" serve "$NB" --interface noaddr0 >"$W/err" 2>&1
check serve-names-interface-without-address grep -q "interface 'noaddr0' has no IPv4 address" "$W/err"
require serve-starts lab_serve "$NB"
check serve-prints-proxydhcp-config grep -q '^dhcp-range=10\.77\.0\.0,proxy,255\.255\.255\.0$' "$LAB_SERVE_LOG"
check serve-prints-nginx-config grep -q "root $NB;" "$LAB_SERVE_LOG"
check serve-prints-nbd-export grep -q "^\[liveunion-$ID\]$" "$LAB_SERVE_LOG"
ACCESS=$(lab_access_log)
check http-range-requests lab_ns bash -c "curl -sf -r 4-7 http://$LAB_ADDR/images/$ID/live/MANIFEST | cmp - <(tail -c +5 '$IMG/live/MANIFEST' | head -c 4)"

# plan_net: the address, how it came, the medium (checks for one client)
net_client_checks() {
	local c=$1 mac=$2
	vm_run 'grep -E "^(medium\.fetch|medium\.nbd|net|verify\.result|check\.result|persist\.result|toram\.result)=" /run/live/plan'
	check "$c-booted-from-our-image" out_has "^medium\.fetch=http://$LAB_ADDR/images/$ID/\$"
	# proxyDHCP hands out no address: the site's DHCP server (10.77.0.100-199 from 10.77.0.2) did
	check "$c-address-from-site-dhcp" out_has '^net=eth0 \('"$mac"'\): 10\.77\.0\.1[0-9][0-9]/24 via 10\.77\.0\.2 from DHCP server 10\.77\.0\.2 by DHCP$'
	check "$c-every-layer-verified" out_has '^verify\.result=every layer through dm-verity$'
	check "$c-every-block-read" out_has '^check\.result=passed: 1 layer'
	check "$c-no-persistence" out_has '^persist\.result=none: network boot'
	check "$c-layers-in-ram" out_has '^toram\.result=in RAM already: live\.fetch downloaded'
	check "$c-bootif-passed" vm_run "grep -o 'BOOTIF=01-${mac//:/-}' /proc/cmdline"
	vm_run "grep ' / ' /proc/mounts | tail -n 1"
	check "$c-root-is-overlay" out_has '^[^ ]+ / overlay '
	check "$c-root-writable" vm_fact "echo $c >/$c && cat /$c" "$c"
}

# ---- BIOS: qemu's iPXE ROM (recognised as iPXE: it gets start.ipxe, not iPXE again)
require "tap-$LAB_TAPS" lab_tap
lab_nic_args "$LAB_TAP" 52:54:00:77:00:11
# shellcheck disable=SC2034 # vm_start runs it
VM_QEMU=$LAB_QEMU
require bios-client-starts vm_start netboot-bios net-bios "" "${LAB_NIC[@]}"
require bios-client-login vm_login
net_client_checks bios 52:54:00:77:00:11
check bios-layer-served-by-nginx grep -q "GET /images/$ID/live/10-base.squashfs HTTP" "$ACCESS"
check bios-ipxe-got-script grep -q "GET /start.ipxe HTTP" "$ACCESS"
vm_stop

# ---- UEFI: no iPXE ROM: OVMF's PXE asks as x86-64 UEFI and gets snponly.efi by TFTP, which then gets the script
require "tap-$LAB_TAPS" lab_tap
lab_nic_args "$LAB_TAP" 52:54:00:77:00:22 ""
require uefi-client-starts vm_start netboot-uefi net-uefi "" "${LAB_NIC[@]}"
require uefi-client-login vm_login
net_client_checks uefi 52:54:00:77:00:22
check uefi-got-snponly-by-tftp grep -q "sent $NB/tftp/snponly.efi to 10\.77\.0\.1[0-9][0-9]" "$LAB_SERVE_LOG"
check no-tftp-for-anything-else absent 'sent .*(bzImage|initramfs|squashfs)' cat "$LAB_SERVE_LOG"
vm_stop

# ---- NBD with 256 MiB: the ISO read on demand; then the server goes away
require serve-nbd-starts lab_serve "$NB" --boot nbd
require "tap-$LAB_TAPS" lab_tap
lab_nic_args "$LAB_TAP" 52:54:00:77:00:33
# 256 MiB for this client only (an assignment before a function call lasts for the call)
VM_MEM=256 require nbd-client-starts vm_start netboot-nbd net-bios "" "${LAB_NIC[@]}"
require nbd-client-login vm_login
vm_run 'grep -E "^medium\.(nbd|device)=" /run/live/plan'
check nbd-plan-names-export out_has "^medium\.nbd=$LAB_ADDR:10809/liveunion-$ID\$"
check nbd-medium-on-nbd-device vm_run "grep -E '^/dev/nbd0(p1)? /run/live/medium iso9660 ro' /proc/mounts"
check nbd-layer-verified vm_run "grep -c '^layer\.10-base\.verity=/dev/dm-' /run/live/plan"
check nbd-connection-holder-named vm_run "ps | grep -c '[@]nbd'"
check nbd-mem-is-small vm_run "awk '/MemTotal/ { exit !(\$2 < 262144) }' /proc/meminfo"
# a busybox in RAM to look with: programs on the root (read from the server) cannot start once it is gone
check nbd-tool-in-ram vm_run 'cp /bin/busybox /run/busybox'
lab_serve_stop
# what was not read before now fails with an I/O error, named; the system and its shell stay
vm_run 'echo 3 >/proc/sys/vm/drop_caches; /run/busybox cat /run/live/medium/live/10-base.squashfs >/dev/null' 90
check nbd-read-after-server-gone-fails out_has 'I/O error|Input/output error'
check nbd-console-names-lost-connection vm_run "/run/busybox dmesg | /run/busybox grep -cE 'liveunion: live\.nbd: the connection of /dev/nbd0 to $LAB_ADDR:10809 .* ended'"
check nbd-kernel-names-device vm_run "/run/busybox dmesg | /run/busybox grep -cE 'nbd0.*(I/O error|Receive control failed|Dead connection|shutting down sockets)'"
check nbd-shell-still-answers vm_fact 'echo alive' alive
vm_stop

# ---- failures: a direct boot (the same kernel, initramfs and line iPXE passes) against a server in a given state
line="$(cat "$IMG/cmdline") live.fetch=http://$LAB_ADDR/images/$ID/"
require "tap-$LAB_TAPS" lab_tap
lab_nic_args "$LAB_TAP" 52:54:00:77:00:44

# one byte flipped in the layer on the server (the manifest's size still right): the boot stops naming the layer
BAD=$W/bad
cp -a "$NB" "$BAD"
python3 - "$BAD/images/$ID/live/10-base.squashfs" <<'PY'
import os, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(os.path.getsize(sys.argv[1]) // 2); b = f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0x40]))
PY
require serve-bad-tree lab_serve "$BAD" --services http
require bad-client-starts vm_start netboot-bad none "" --cmdline "$line" "${LAB_NIC[@]}"
check bad-layer-stops-boot vm_wait 'rescue shell \(step layers failed' 120
check bad-layer-named log_has 'live\.check: layer 10-base FAILED|layer 10-base.*(I/O error|Input/output error)'
check bad-layer-never-booted log_lacks 'switching to '
vm_stop

# The server (or anyone between it and the client) as the attacker: a tree changed after the build, served, booted
# with the build's command line. attack NAME STEP EXPECTED [KEYS]: the change is the function tamper_NAME (run
# on the tree's live/ directory); the boot must stop in STEP with EXPECTED (an ERE) on the console, never switch.
attack() {
	local name=$1 step=$2 want=$3 keys=${4:-} tree=$W/attack-$1
	rm -rf "$tree" && cp -a "$NB" "$tree" || return 1
	(cd "$tree/images/$ID/live" && "tamper_$name") || { echo "tamper_$name failed"; return 1; }
	require "serve-$name" lab_serve "$tree" --services http
	require "$name-client-starts" vm_start "netboot-$name" none "" --cmdline "$line $keys" "${LAB_NIC[@]}"
	check "$name-stops-in-$step" vm_wait "rescue shell \\(step $step failed" 150
	check "$name-named" log_has "$want"
	check "$name-never-booted" log_lacks 'switching to '
	vm_stop
	rm -rf "$tree"
}
# shellcheck disable=SC2317 # tamper_* run through attack
{
# a flipped byte in the hash tree (past its superblock): the layer's blocks no longer match the root hash
tamper_verity() { python3 -c 'import sys; f = open("10-base.verity", "r+b"); f.seek(8192); b = f.read(1); f.seek(8192); f.write(bytes([b[0] ^ 1]))'; }
# the layer cut short by 64 KiB, the MANIFEST left as it was: the client waits for bytes that never come
tamper_truncated() { truncate -s -65536 10-base.squashfs; }
# an extra layer in the MANIFEST (and on the server) that the command line has no root hash for
tamper_extra() { cp 10-base.squashfs 20-extra.squashfs && echo "$(stat -c %s 20-extra.squashfs) 20-extra.squashfs" >>MANIFEST; }
# the verified layer omitted from the MANIFEST (its hash tree still listed)
tamper_omitted() { grep -v ' 10-base\.squashfs$' MANIFEST >M && mv M MANIFEST; }
# the layer grown by 1 MiB of zeros and its MANIFEST size with it: the hash tree covers less than the layer
tamper_resized() {
	truncate -s +1048576 10-base.squashfs &&
		sed -i "s/^[0-9]* 10-base\.squashfs\$/$(stat -c %s 10-base.squashfs) 10-base.squashfs/" MANIFEST
}
}
attack verity layers 'layer 10-base.*(does not match its root hash|I/O error|Input/output error)'
attack truncated medium 'live\.fetch: download live/10-base\.squashfs: no progress for 8 s' live.timeout=8
attack extra layers 'layer 20-extra .*live\.verify= has no root hash for layer 20-extra'
attack omitted layers 'live\.verify= has a root hash for layer 10-base, which is not on the medium'
attack resized layers 'layer 10-base: the hash tree .* covers [0-9]+ bytes, the layer has [0-9]+'

# NBD: one changed block of 10-base in the served ISO. Read through dm-verity (live.check reads every block) it is an
# I/O error naming the layer, never other data.
NBAD=$W/nbd-bad
rm -rf "$NBAD" && cp -a "$NB" "$NBAD"
read -r off size < <(iso_file_offset "$NBAD/images/$ID/liveunion.iso" /live/10-base.squashfs)
require nbd-layer-located test -n "${off:-}"
require nbd-block-changed flip_byte "$NBAD/images/$ID/liveunion.iso" $((off + size / 2))
require serve-nbd-bad lab_serve "$NBAD" --services nbd
VM_MEM=256 require nbd-bad-client-starts vm_start netboot-nbd-bad none "" \
	--cmdline "$(cat "$IMG/cmdline") live.nbd=$LAB_ADDR:10809/liveunion-$ID live.check" "${LAB_NIC[@]}"
check nbd-bad-stops-in-layers vm_wait 'rescue shell \(step layers failed' 150
check nbd-bad-named log_has 'layer 10-base .*does not match its root hash from live\.verify=.*I/O error'
check nbd-bad-never-booted log_lacks 'switching to '
vm_stop
rm -rf "$NBAD"

# HTTP stopped while the client downloads, back 10 s later: the client resumes and boots
require serve-slow-http lab_serve "$NB" --services http --rate 300k
require resume-client-starts vm_start netboot-resume none "" --cmdline "$line" "${LAB_NIC[@]}"
require resume-download-started vm_wait 'live\.fetch: [0-9.]+ / [0-9.]+ MiB' 120
lab_serve_stop
check resume-client-notices vm_wait 'live\.fetch: http://.*again in [0-9]+ s' 60
sleep 10
require serve-back lab_serve "$NB" --services http
require resume-client-login vm_login
check resume-continued-with-range grep -qE '"GET /layers/[0-9a-f]{64}/10-base\.squashfs HTTP/1\.1" 206 ' "$(lab_access_log)"
check resume-verified vm_run 'grep -x "check.result=passed: 1 layer(s) read in full" /run/live/plan'
vm_stop

# a static address (ip= as the kernel documents it) and two URLs, the first on no server: whichever the client
# starts with, it boots from the one that answers
require serve-for-static lab_serve "$NB" --services http
static="ip=10.77.0.50::10.77.0.1:255.255.255.0::eth0:off live.fetch=http://10.77.0.9/nowhere/,http://$LAB_ADDR/images/$ID/"
require static-client-starts vm_start netboot-static none "" --cmdline "$(cat "$IMG/cmdline") $static" "${LAB_NIC[@]}"
require static-client-login vm_login
check static-address-planned vm_run 'grep -x "net=eth0 (52:54:00:77:00:44): 10.77.0.50/24 static, gateway 10.77.0.1" /run/live/plan'
check static-address-set vm_run "ip -4 addr show dev eth0 | grep -c 'inet 10\.77\.0\.50/24'"
check static-no-dhcp-asked log_lacks 'asking DHCP'
check static-layers-from-the-url-that-answers vm_run "grep -x 'medium.device=http://$LAB_ADDR/images/$ID/' /run/live/plan"
vm_stop

# a MANIFEST that asks for more RAM than the client has: refused before any download, naming live.nbd=
BIG=$W/big
cp -a "$NB" "$BIG"
printf '%s 10-base.squashfs\n' $((4 << 30)) >"$BIG/images/$ID/live/MANIFEST"
require serve-big-tree lab_serve "$BIG" --services http
require big-client-starts vm_start netboot-big none "" --cmdline "$line" "${LAB_NIC[@]}"
check big-refused-naming-nbd vm_wait 'live\.fetch: the image is 4096 MiB .* boot it with live\.nbd=' 120
check big-rescue-shell vm_wait 'rescue shell \(step medium failed' 30
check big-nothing-downloaded absent 'GET /images/[0-9a-f]+/live/10-base' cat "$(lab_access_log)"
vm_stop

# stopped for good: a clear message and the rescue shell within live.timeout
lab_serve_stop
require gone-client-starts vm_start netboot-gone none "" --cmdline "$line live.timeout=8" "${LAB_NIC[@]}"
check gone-clear-message vm_wait 'live\.fetch: download live/MANIFEST: not done within 8 s \(the deadline: live\.timeout.* after [0-9]+ tries; last from http://[^ ]*/MANIFEST: ' 90
check gone-rescue-shell vm_wait 'rescue shell \(step medium failed' 30
vm_stop
finish

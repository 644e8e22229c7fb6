#!/usr/bin/env bash
# summary: no signed unified kernel image without layer verification: ISO_UKI=1 or netboot --uki with
# ISO_VERITY=0 stops before any stage runs, netboot refuses an ISO built without root hashes before writing, and
# sb_uki refuses a command line whose live.verify= (the last, which the init reads) has no root hash; a line with
# one is signed
# shellcheck disable=SC2317 # functions run through check
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
work=$(mktemp -d)
at_exit "rm -rf '$work'"
has() { grep -q -- "$2" <<<"$1" || { printf '#   wanted /%s/ in:\n%s\n' "$2" "$1" | sed '3,$s/^/#   | /'; return 1; }; }
lacks() { ! grep -q -- "$2" <<<"$1" || { printf '#   did not want /%s/ in:\n%s\n' "$2" "$1" | sed '3,$s/^/#   | /'; return 1; }; }

# iso FUNCTION ARG...: build.sh's iso/netboot/sb functions with die/log, in a subshell; every step that would do
# work (fetching packages, keys, signing) says so and stops instead.
iso() (
	OUT=$work/out
	SOURCE_DATE_EPOCH=1767225600 LIVEUNION_VERSION=test
	log() { :; }
	die() { printf 'DIE %s\n' "$*"; exit 1; }
	need_pkgs() { die "need_pkgs reached"; }
	# shellcheck source=iso/iso.sh
	. "$TOP/iso/iso.sh"
	# shellcheck source=iso/netboot.sh
	. "$TOP/iso/netboot.sh"
	# shellcheck source=iso/sb.sh
	. "$TOP/iso/sb.sh"
	sb_fetch() { die "sb_fetch reached"; }
	sb_keys() { die "sb_keys reached"; }
	sb_sign_efi() { die "sb_sign_efi reached"; }
	"$@"
) 2>&1
hash64=$(printf '%064d' 7)

# sb_uki: the command line is judged before anything is made.
for c in 'none:live.medium=UUID=1 console=ttyS0' 'off:live.medium=UUID=1 live.verify=off' \
	'empty:live.medium=UUID=1 live.verify=' 'short-hash:live.verify=10-base:abcd' \
	"off-last:live.verify=10-base:$hash64 live.verify=off" "not-a-word:live.medium=UUID=1 x-live.verify=10-base:$hash64"; do
	printf '%s\n' "${c#*:}" >"$work/cmdline"
	out=$(iso sb_uki "$work/stub" "$work/k" "$work/i" "$work/cmdline" "$work/osrel" "$work/uki.efi")
	check "sb-uki-refuses-${c%%:*}" has "$out" "DIE refusing to sign a unified kernel image whose command line has no live.verify= root hashes (${c#*:})"
done
check sb-uki-refused-makes-nothing test ! -e "$work/uki.efi" -a ! -e "$work/uki.efi.unsigned"
printf 'live.medium=UUID=1 live.verify=off live.verify=10-base:%s,20-x:%s console=ttyS0\n' "$hash64" "$hash64" >"$work/cmdline"
out=$(iso sb_uki "$work/stub" "$work/k" "$work/i" "$work/cmdline" "$work/osrel" "$work/uki.efi")
check sb-uki-takes-root-hashes lacks "$out" 'refusing to sign'

# ISO_UKI=1 with ISO_VERITY=0: iso_assemble (./build.sh and iso-with) stops first, before it looks for inputs.
out=$(ISO_UKI=1 ISO_VERITY=0 iso iso_assemble "$work/x.iso" "$work/iso" iso)
check iso-uki-without-verity-refused has "$out" '^DIE ISO_UKI=1 with ISO_VERITY=0: refused; a signed unified kernel image must carry'
check iso-uki-without-verity-names-fix has "$out" 'build it with ISO_VERITY=1 (the default)'
check iso-uki-without-verity-no-work test ! -e "$work/iso" -a ! -e "$work/x.iso"
out=$(ISO_UKI=0 ISO_VERITY=0 iso iso_assemble "$work/x.iso" "$work/iso" iso)
check iso-without-uki-unverified-allowed has "$out" "^DIE $work/out/kernel/bzImage is missing"

# build.sh itself: the check runs before the build lock (a flock on PATH that says so if reached) and any stage.
mkdir -p "$work/bin"
printf '#!/bin/sh\necho FLOCK-REACHED\nexit 1\n' >"$work/bin/flock"
chmod +x "$work/bin/flock"
# shellcheck disable=SC2031 # PATH is the environment's (no subshell of this script sets it)
bsh() { env "PATH=$work/bin:$PATH" "OUT=$work/bout" bash "$TOP/build.sh" "$@" 2>&1; }
out=$(ISO_UKI=1 ISO_VERITY=0 bsh build)
check build-uki-without-verity-refused has "$out" 'error: ISO_UKI=1 with ISO_VERITY=0: refused'
check build-uki-without-verity-before-lock lacks "$out" FLOCK-REACHED
out=$(ISO_VERITY=0 bsh netboot -o "$work/nb" --uki --url http://10.0.2.2/)
check netboot-uki-without-verity-refused has "$out" 'error: netboot: a signed UKI (ISO_UKI=1 or --uki) with ISO_VERITY=0: refused'
check netboot-uki-without-verity-before-lock lacks "$out" FLOCK-REACHED
check netboot-uki-without-verity-no-work test ! -e "$work/nb" -a ! -e "$work/bout/stamps"
out=$(ISO_VERITY=0 bsh netboot -o "$work/nb")
check netboot-without-uki-unverified-goes-on has "$out" FLOCK-REACHED

# netboot_write over an ISO built without root hashes (or with live.verify=off added): refused before it writes.
mkdir -p "$work/w/tree/live" "$work/ipxe"
touch "$work/w.iso" "$work/ipxe/undionly.kpxe" "$work/ipxe/snponly.efi" "$work/ipxe/ipxe.efi"
for c in "none:live.medium=UUID=1 console=ttyS0" "off-last:live.verify=10-base:$hash64 live.verify=off"; do
	printf '%s\n' "${c#*:}" >"$work/w/cmdline"
	out=$(NETBOOT_IPXE_DIR=$work/ipxe NETBOOT_UKI=1 NETBOOT_URL=http://10.0.2.2/ iso netboot_write "$work/w" "$work/w.iso" "$work/nb")
	check "netboot-write-refuses-${c%%:*}" has "$out" "^DIE netboot: refusing to sign a unified kernel image whose command line has no live.verify= root hashes (${c#*:})"
	check "netboot-write-${c%%:*}-wrote-nothing" test ! -e "$work/nb"
done
finish

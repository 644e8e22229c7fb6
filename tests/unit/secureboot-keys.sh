#!/usr/bin/env bash
# summary: the Secure Boot key handling of iso/sb.sh: a key made once per OUT (private, reused, another OUT gets
# another one, ignored by git), SB_KEY/SB_CERT taken as PEM or DER and refused by name when one is missing, when the
# key is not the certificate's or asks for a passphrase; signatures (sbsign under a stopped clock, sign-file) and
# unified kernel images that verify and are bit-identical when made twice
# shellcheck disable=SC2317 # functions run through check
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
work=$(mktemp -d)
at_exit "rm -rf '$work'"
root=$OUT/sb/root # the pinned packages, unpacked by the build
if [ ! -f "$OUT/sb/root.done" ]; then
	bad "sb-packages-unpacked (no $OUT/sb/root.done: run ./build.sh first)"
	finish
fi

# sb CASE-OUT COMMAND...: the functions of iso/sb.sh with build.sh's die/log, in a subshell (die's exit stays in it).
sb() {
	local o=$1
	shift
	(
		OUT=$o
		SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600}
		# shellcheck disable=SC2317 # called by the sourced functions
		log() { :; }
		# shellcheck disable=SC2317 # called by the sourced functions
		die() { printf 'DIE %s\n' "$*"; exit 1; }
		# shellcheck disable=SC2317 # called by the sourced functions
		need_pkgs() { die "need_pkgs $*"; }
		# shellcheck source=iso/sb.sh
		. "$TOP/iso/sb.sh"
		"$@"
	) 2>&1
}
has() { grep -q -- "$2" <<<"$1" || { printf '#   wanted /%s/ in:\n%s\n' "$2" "$1" | sed '3,$s/^/#   | /'; return 1; }; }

# The key of a checkout: made once, private, the same the next time, another in another OUT.
a=$(sb "$work/a" sb_fingerprint)
check made-key-fingerprint grep -Eqx '[0-9A-F]{64}' <<<"$a"
check made-key-reused output_is "$a" sb "$work/a" sb_fingerprint
b=$(sb "$work/b" sb_fingerprint)
check other-out-other-key test -n "$b" -a "$a" != "$b"
check made-key-private output_is $'700\n600' stat -c %a "$work/a/sb/key" "$work/a/sb/key/db.key"
check made-key-der-is-cert output_is "$(openssl x509 -in "$work/a/sb/key/db.crt" -outform DER | sha256sum)" sh -c "sha256sum <'$work/a/sb/key/db.cer'"
check made-key-code-signing sh -c "openssl x509 -in '$work/a/sb/key/db.crt' -noout -ext extendedKeyUsage | grep -q 'Code Signing'"
check key-dir-ignored-by-git git -C "$TOP" check-ignore -q out/sb/key/db.key

# SB_KEY/SB_CERT given: both needed, matching, no passphrase; the certificate as PEM or DER.
openssl req -new -x509 -newkey rsa:2048 -nodes -days 1 -subj '/CN=lab/' -keyout "$work/lab.key" -out "$work/lab.crt" 2>/dev/null
openssl req -new -x509 -newkey rsa:2048 -nodes -days 1 -subj '/CN=other/' -keyout "$work/other.key" -out "$work/other.crt" 2>/dev/null
openssl x509 -in "$work/lab.crt" -outform DER -out "$work/lab.der"
openssl pkey -in "$work/lab.key" -aes256 -passout pass:secret -out "$work/locked.key" 2>/dev/null
out=$(SB_KEY=$work/lab.key sb "$work/c" sb_keys)
check only-key-refused has "$out" 'DIE Secure Boot signing needs both SB_KEY= (private key) and SB_CERT= (its certificate); got only SB_KEY='
out=$(SB_KEY=$work/lab.key SB_CERT=$work/other.crt sb "$work/c" sb_keys)
check mismatch-refused has "$out" "DIE SB_KEY=$work/lab.key is not the private key of SB_CERT=$work/other.crt"
out=$(SB_KEY=$work/locked.key SB_CERT=$work/lab.crt sb "$work/c" sb_keys)
check passphrase-key-refused has "$out" "DIE SB_KEY=$work/locked.key is not a private key openssl can read without a passphrase"
out=$(SB_KEY=$work/nowhere.key SB_CERT=$work/lab.crt sb "$work/c" sb_keys)
check missing-key-named has "$out" "DIE SB_KEY=$work/nowhere.key: cannot read that file"
fp_der() { SB_KEY=$work/lab.key SB_CERT=$work/lab.der sb "$work/c" sb_fingerprint; }
check der-cert-taken output_is "$(openssl x509 -in "$work/lab.crt" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g')" fp_der
check given-key-not-stored-as-made test ! -e "$work/c/sb/key"

# Signatures: verify with the certificate, and the same bytes twice (sbsign runs with the clock stopped).
stub=$root/usr/lib/systemd/boot/efi/linuxx64.efi.stub
sign() { SB_KEY=$work/lab.key SB_CERT=$work/lab.crt sb "$work/c" sb_sign_efi "$@"; }
check signs-boot-manager sign "$root/usr/lib/systemd/boot/efi/systemd-bootx64.efi" "$work/sd1.efi"
sleep 1.1
check signs-again sign "$root/usr/lib/systemd/boot/efi/systemd-bootx64.efi" "$work/sd2.efi"
check signature-verifies sh -c "sbverify --cert '$work/lab.crt' '$work/sd1.efi' >/dev/null 2>&1"
check signature-not-by-other-key fails sh -c "sbverify --cert '$work/other.crt' '$work/sd1.efi' >/dev/null 2>&1"
check signing-reproducible cmp -s "$work/sd1.efi" "$work/sd2.efi"

# A unified kernel image: each part in its section, byte for byte; signed; reproducible.
head -c 300000 /dev/urandom >"$work/kernel"
head -c 200000 /dev/urandom >"$work/initrd"
printf 'live.medium=UUID=1 live.verify=10-base:%064d console=ttyS0\n' 0 >"$work/cmdline"
printf 'NAME="liveunion"\nPRETTY_NAME="liveunion test"\n' >"$work/osrel"
uki() { SB_KEY=$work/lab.key SB_CERT=$work/lab.crt sb "$work/c" sb_uki "$stub" "$work/kernel" "$work/initrd" "$work/cmdline" "$work/osrel" "$1"; }
check uki-made uki "$work/uki1.efi"
sleep 1.1
check uki-made-again uki "$work/uki2.efi"
check uki-reproducible cmp -s "$work/uki1.efi" "$work/uki2.efi"
check uki-verifies sh -c "sbverify --cert '$work/lab.crt' '$work/uki1.efi' >/dev/null 2>&1"
for s in osrel:osrel cmdline:cmdline linux:kernel initrd:initrd; do
	check "uki-section-${s%%:*}" sh -c "objcopy -O binary --only-section=.${s%%:*} '$work/uki1.efi' '$work/sec' && cmp -s '$work/sec' '$work/${s#*:}'"
done
check uki-keeps-stub-sbat sh -c "objdump -h '$work/uki1.efi' | grep -q ' \.sbat '"
# the sections do not overlap: each starts at or after the end of the one before
ordered() {
	local n size vma end=0
	while read -r n _ size vma _; do
		case "$n" in [0-9]*) [ $((0x$vma)) -ge "$end" ] || return 1; end=$((0x$vma + 0x$size)) ;; esac
	done < <(objdump -h "$1")
	[ "$end" -gt 500000 ]
}
check uki-sections-ordered ordered "$work/uki1.efi"
finish

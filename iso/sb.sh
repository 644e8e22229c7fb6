# shellcheck shell=bash
# Build-host part of Secure Boot (docs/secure-boot.md): Debian's signed boot chain for the ISO's UEFI path, and a
# key of ours for what we build ourselves (the tiny kernel, the pc flavour's overlay.ko and squashfs.ko, and the
# unified kernel images of ISO_UKI=1).
#   out/sb/debs/   the pinned packages below (apt-get download), kept: never fetched twice
#   out/sb/root/   them unpacked (dpkg-deb -x): shim, MokManager, Debian's signed GRUB, systemd's stub and boot manager
#   out/sb/key/    the key made once per checkout when SB_KEY/SB_CERT are not given: db.key (it never leaves out/,
#                  which git ignores), db.crt (PEM) and db.cer (DER, the one to enroll)
# Sourced by build.sh (log, die, need_pkgs, OUT, TOP, SOURCE_DATE_EPOCH).

# The one place the signed boot chain is pinned: Debian bookworm's package versions. shim checks GRUB's SBAT
# generation, and the firmware's revocation list (dbx, SbatLevel) may refuse an old pair: update both pins together
# to the versions `apt-cache policy shim-signed grub-efi-amd64-signed` shows after `apt-get update` (docs/secure-boot.md).
SB_DEBS=(
	shim-signed=1.51~1+deb12u1+16.1-2~deb12u1
	shim-helpers-amd64-signed=1+16.1+2~deb12u1
	grub-efi-amd64-signed=1+2.06+13+deb12u2
	systemd-boot-efi=252.39-1~deb12u2
)
SB_SHIM=usr/lib/shim/shimx64.efi.signed
SB_MOKMANAGER=usr/lib/shim/mmx64.efi.signed
SB_GRUB=usr/lib/grub/x86_64-efi-signed/gcdx64.efi.signed # Debian's CD build of GRUB (what its own ISOs carry)
SB_STUB=usr/lib/systemd/boot/efi/linuxx64.efi.stub
SB_SDBOOT=usr/lib/systemd/boot/efi/systemd-bootx64.efi
SB_PKGS=(sbsigntool openssl faketime)
# ISO_UKI=1: the UEFI path boots unified kernel images (kernel, initramfs and command line signed as one) through
# systemd-boot, signed with our key (SB_KEY/SB_CERT), instead of shim and GRUB.
ISO_UKI=${ISO_UKI:-0}
# ISO_UKI_RESCUE=1: the UKI menu keeps its rescue entry and a failed step opens the rescue shell, as on the other
# menus; by default neither (a shell before the live root would let anyone at the keyboard past the signed line).
ISO_UKI_RESCUE=${ISO_UKI_RESCUE:-0}

# sb_fetch: out/sb/root with the pinned packages, each checked for its version.
sb_fetch() {
	local d=$OUT/sb p v f missing=() h
	h=$(printf '%s\n' "${SB_DEBS[@]}" | sha256sum | cut -c1-16)
	[ -f "$d/root.done" ] && [ "$(cat "$d/root.done")" = "$h" ] && return 0
	mkdir -p "$d/debs"
	for p in "${SB_DEBS[@]}"; do
		f=$(find "$d/debs" -maxdepth 1 -name "${p%%=*}_*.deb" -print -quit)
		if [ -n "$f" ] && [ "$(dpkg-deb -f "$f" Version)" != "${p#*=}" ]; then
			rm -f "$f" && f=
		fi
		[ -n "$f" ] || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "  apt-get download ${missing[*]}"
		(cd "$d/debs" && apt-get download -o APT::Sandbox::User=root "${missing[@]}" >&2) ||
			die "apt-get download ${missing[*]} failed: iso/sb.sh pins these versions; if Debian has replaced them (apt-cache policy ${missing[*]%%=*}), update SB_DEBS there"
	fi
	rm -rf "$d/root"
	mkdir -p "$d/root"
	for p in "${SB_DEBS[@]}"; do
		f=$(find "$d/debs" -maxdepth 1 -name "${p%%=*}_*.deb" -print -quit)
		v=$(dpkg-deb -f "$f" Version)
		[ "$v" = "${p#*=}" ] || die "$f is version $v, iso/sb.sh pins ${p#*=}"
		dpkg-deb -x "$f" "$d/root" || die "dpkg-deb -x $f failed"
	done
	for f in "$SB_SHIM" "$SB_MOKMANAGER" "$SB_GRUB" "$SB_STUB" "$SB_SDBOOT"; do
		[ -f "$d/root/$f" ] || die "the pinned packages have no $f"
	done
	printf '%s\n' "$h" >"$d/root.done"
}

# sb_keys: SB_KEY_PEM, SB_CERT_PEM and SB_CERT_DER, from SB_KEY/SB_CERT (the user's own, e.g. a lab's db key or an
# enrolled MOK) or else the key of this checkout, made once. The certificate may be PEM or DER; the key must not
# ask for a passphrase (signing runs unattended).
sb_keys() {
	local d
	[ -z "${SB_KEY_PEM:-}" ] || return 0
	PATH=$PATH:/usr/sbin:/sbin
	if [ -n "${SB_KEY:-}" ] || [ -n "${SB_CERT:-}" ]; then
		[ -z "${SB_KEY:-}" ] || [ -z "${SB_CERT:-}" ] &&
			die "Secure Boot signing needs both SB_KEY= (private key) and SB_CERT= (its certificate); got only ${SB_KEY:+SB_KEY=$SB_KEY}${SB_CERT:+SB_CERT=$SB_CERT}"
		[ -r "$SB_KEY" ] || die "SB_KEY=$SB_KEY: cannot read that file"
		[ -r "$SB_CERT" ] || die "SB_CERT=$SB_CERT: cannot read that file"
		d=$OUT/sb/given
		mkdir -p "$d"
		chmod 0700 "$d"
		(umask 077 && openssl pkey -in "$SB_KEY" -passin pass: -out "$d/db.key" 2>/dev/null) ||
			die "SB_KEY=$SB_KEY is not a private key openssl can read without a passphrase (signing runs unattended: give an unencrypted copy, e.g. openssl pkey -in KEY -out PLAIN.key)"
		openssl x509 -in "$SB_CERT" -out "$d/db.crt" 2>/dev/null || openssl x509 -inform DER -in "$SB_CERT" -out "$d/db.crt" 2>/dev/null ||
			die "SB_CERT=$SB_CERT is not an X.509 certificate (PEM or DER)"
		[ "$(openssl pkey -in "$d/db.key" -pubout)" = "$(openssl x509 -in "$d/db.crt" -noout -pubkey)" ] ||
			die "SB_KEY=$SB_KEY is not the private key of SB_CERT=$SB_CERT"
	else
		d=$OUT/sb/key
		if [ ! -f "$d/db.key" ] || [ ! -f "$d/db.crt" ]; then
			mkdir -p "$d"
			chmod 0700 "$d"
			# Made on this machine, now: another checkout or user gets another key, so nobody trusts ours by accident.
			openssl req -new -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 \
				-subj "/CN=liveunion Secure Boot key of $(hostname) $(date -u +%Y-%m-%d)/" \
				-addext keyUsage=digitalSignature -addext extendedKeyUsage=codeSigning \
				-keyout "$d/db.key.tmp" -out "$d/db.crt.tmp" 2>/dev/null || die "openssl could not make a Secure Boot key in $d"
			chmod 0600 "$d/db.key.tmp" && mv "$d/db.crt.tmp" "$d/db.crt" && mv "$d/db.key.tmp" "$d/db.key"
			log "  made this checkout's Secure Boot key: $d/db.key (kept there, never in git); enroll $d/db.cer (docs/secure-boot.md)"
		fi
	fi
	openssl x509 -in "$d/db.crt" -outform DER -out "$d/db.cer" || die "cannot write $d/db.cer"
	SB_KEY_PEM=$d/db.key SB_CERT_PEM=$d/db.crt SB_CERT_DER=$d/db.cer
}

# sb_fingerprint: the certificate's SHA-256 (a stage input: another key gives other signatures).
sb_fingerprint() {
	sb_keys
	openssl x509 -in "$SB_CERT_PEM" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g'
}

# sb_sign_efi IN OUT: OUT is IN (a PE image: kernel, UKI, boot manager) with our Authenticode signature. sbsign
# puts the clock's time in the signature (signingTime): it runs with the clock stopped at SOURCE_DATE_EPOCH
# (faketime -f: a bare "YYYY-MM-DD hh:mm:ss" only starts the clock there, and a signing that took past the first
# second, on a loaded machine, gave other bytes), so the same image and key give the same bytes. Firmware does not
# look at that time.
sb_sign_efi() {
	sb_keys
	if ! command -v sbsign >/dev/null || ! command -v faketime >/dev/null; then
		need_pkgs "${SB_PKGS[@]}"
	fi
	TZ=UTC faketime -f "$(date -u -d "@$SOURCE_DATE_EPOCH" '+%Y-%m-%d %H:%M:%S')" \
		sbsign --key "$SB_KEY_PEM" --cert "$SB_CERT_PEM" --output "$2" "$1" >/dev/null 2>"$2.err" ||
		{ cat "$2.err" >&2; die "sbsign of $1 failed"; }
	rm -f "$2.err"
	touch -d "@$SOURCE_DATE_EPOCH" "$2"
}

# sb_sign_module SIGNFILE KO: KO signed in place with our key (the kernel's sign-file, SHA-256).
sb_sign_module() {
	sb_keys
	"$1" sha256 "$SB_KEY_PEM" "$SB_CERT_DER" "$2" || die "sign-file of $2 failed"
}

# sb_uki STUB KERNEL INITRD CMDLINE OSREL OUT: a unified kernel image (systemd-stub with the kernel, the initramfs
# and the command line as PE sections, where the stub looks for them), signed. Under Secure Boot the stub boots
# only the command line signed in it. Sections follow the stub's own, 4 KiB aligned; the PE header's date is
# SOURCE_DATE_EPOCH (objcopy writes the clock's), so the same inputs give the same image.
sb_uki() {
	local stub=$1 kernel=$2 initrd=$3 cmdline=$4 osrel=$5 out=$6 vma end n size args=() s f
	sb_uki_verified "$cmdline" || die "$(sb_uki_unverified_text "$(cat "$cmdline")")"
	end=0
	while read -r n _ size vma _; do # objdump -h: index, name, size, VMA, LMA, file offset, alignment
		case "$n" in [0-9]*) [ $((0x$vma + 0x$size)) -le "$end" ] || end=$((0x$vma + 0x$size)) ;; esac
	done < <(objdump -h "$stub")
	[ "$end" -gt 0 ] || die "objdump -h $stub shows no sections: not a PE stub"
	vma=$(((end + 0xffff) / 0x10000 * 0x10000))
	for s in osrel:"$osrel" cmdline:"$cmdline" linux:"$kernel" initrd:"$initrd"; do
		f=${s#*:}
		args+=(--add-section ".${s%%:*}=$f" --change-section-vma ".${s%%:*}=$(printf '0x%x' "$vma")")
		vma=$(((vma + $(stat -c %s "$f") + 0xfff) / 0x1000 * 0x1000))
	done
	objcopy "${args[@]}" "$stub" "$out.unsigned" || die "objcopy could not make the unified kernel image $out"
	sb_pe_date "$out.unsigned"
	sb_sign_efi "$out.unsigned" "$out"
	rm -f "$out.unsigned"
}

# sb_uki_needs_verity WHAT: stops a build that would sign a UKI (WHAT: ISO_UKI=1, netboot --uki) with ISO_VERITY=0,
# before any stage runs (sb_uki refuses such a command line in any case).
sb_uki_needs_verity() {
	[ "$ISO_VERITY" = 1 ] ||
		die "$1 with ISO_VERITY=$ISO_VERITY: refused; a signed unified kernel image must carry the layers' root hashes (live.verify=) in its signed command line, or it stacks unverified layers from the medium or, with live.fetch=, from any server the network names; build it with ISO_VERITY=1 (the default)"
}

# sb_uki_verified CMDLINE-FILE: whether its live.verify= (the last one: the init reads that) names a layer with a
# 64-digit root hash. A UKI is signed with its command line; one without root hashes (ISO_VERITY=0, live.verify=off)
# would be a signed boot that stacks whatever layers the medium or, with live.fetch=, any server on the network
# hands it (a rogue DHCP server names the boot file): never made.
sb_uki_verified() {
	local w v='' ws=()
	read -r -a ws <"$1" || [ ${#ws[@]} -gt 0 ] || return 1
	for w in "${ws[@]}"; do
		case "$w" in live.verify=*) v=${w#live.verify=} ;; esac
	done
	printf '%s\n' "${v//,/$'\n'}" | grep -Eq '^[^:]+:[0-9a-fA-F]{64}$'
}
# sb_uki_unverified_text CMDLINE: the refusal, naming the line.
sb_uki_unverified_text() {
	printf 'refusing to sign a unified kernel image whose command line has no live.verify= root hashes (%s): it would stack unverified layers from the medium or, with live.fetch=, from any server the network names; build with ISO_VERITY=1 (the default)' "$1"
}

# sb_pe_date PE: the COFF header's TimeDateStamp set to SOURCE_DATE_EPOCH.
sb_pe_date() {
	local pe e=$SOURCE_DATE_EPOCH
	pe=$(od -An -tu4 -j 60 -N 4 "$1" | tr -d ' ')
	# shellcheck disable=SC2059 # the format is the four bytes, made here
	printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((e & 255)) $((e >> 8 & 255)) $((e >> 16 & 255)) $((e >> 24 & 255)))" |
		dd of="$1" bs=1 seek=$((pe + 8)) conv=notrunc status=none || die "cannot set the date in $1"
}

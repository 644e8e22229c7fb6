# shellcheck shell=bash
# Build host: `./build.sh layer DIR -o NN-name.squashfs [--sign]`, a layer to add to a stick or medium later
# (docs/secure-boot.md, "Signed layers"): the squashfs, its dm-verity hash tree (.verity), its root hash
# (.roothash, hex) and with --sign a detached PKCS#7 signature of that hex text by the build's Secure Boot key
# (.roothash.p7s, as systemd's), which the init's kernel checks against the certificate built into it.
# Sourced by build.sh (log, die, sb_keys, squashfs_make, iso_verity, OUT, ISO_WORK, SOURCE_DATE_EPOCH).

# layer_base_hash: the root hash of the 10-base this build's ISO carries (its live.verify=), or nothing.
layer_base_hash() {
	[ -f "$ISO_WORK/cmdline" ] || return 0
	tr ' ' '\n' <"$ISO_WORK/cmdline" | sed -n 's/^live\.verify=.*10-base:\([0-9a-f]*\).*/\1/p'
}

# layer_sign HASH OUT: OUT.p7s-to-be = DER PKCS#7 of the text HASH (no newline: the kernel checks the hex string
# of the table), signed with SB_KEY, no certificate inside (the kernel has it), no attributes (sysext's form).
layer_sign() {
	sb_keys
	printf '%s' "$1" | openssl smime -sign -nocerts -noattr -binary -md sha256 -inkey "$SB_KEY_PEM" \
		-signer "$SB_CERT_PEM" -outform der -out "$2.tmp" || die "openssl smime -sign of the root hash failed"
	mv "$2.tmp" "$2"
}

# layer_build DIR OUT SIGN(0|1): the layer's four (or three) files. A file usr/lib/extension-release.d/
# extension-release.NAME is added inside (unless DIR has one): ID=_any, and the root hash of the 10-base it was
# built for (LIVEUNION_BASE=), which the init compares with the base it boots.
layer_build() {
	local dir=$1 out=$2 sign=$3 stem base stage rel root
	stem=$(basename "$out" .squashfs)
	[[ "$(basename "$out")" =~ ^[0-9][0-9]-[A-Za-z0-9._+-]+\.squashfs$ ]] ||
		die "-o $out: a layer is named NN-name.squashfs (two digits, then letters, digits, . _ + -)"
	[ "${stem%%-*}" != 10 ] || die "-o $out: 10 is the base layer's number; an added layer goes above it (11-99)"
	[ -d "$dir" ] || die "$dir is not a directory"
	base=$(layer_base_hash)
	[ -n "$base" ] || log "  no 10-base root hash in $ISO_WORK/cmdline (build the ISO first, with ISO_VERITY=1): the layer names no base"
	stage=$OUT/layer/$stem
	{ rm -rf "$stage" && mkdir -p "$stage"; } || die "cannot make $stage"
	# hard links where DIR is on the same file system: the tree is not copied, only the release file added
	cp -al "$dir/." "$stage/tree" 2>/dev/null || { rm -rf "$stage/tree" && cp -a "$dir/." "$stage/tree"; } ||
		die "cannot copy $dir to $stage/tree"
	rel=$stage/tree/usr/lib/extension-release.d/extension-release.$stem
	if [ ! -e "$rel" ]; then
		mkdir -p "$(dirname "$rel")" || die "cannot make $(dirname "$rel")"
		{ echo ID=_any && if [ -n "$base" ]; then echo "LIVEUNION_BASE=$base"; fi; } >"$rel" || die "cannot write $rel"
	fi
	mkdir -p "$(dirname "$out")"
	squashfs_make "$stage/tree" "$out" -xattrs || die "mksquashfs of $dir failed"
	rm -rf "$stage"
	root=$(iso_verity "$out")
	[ -n "$root" ] || die "no root hash from veritysetup for $out"
	printf '%s\n' "$root" >"${out%.squashfs}.roothash"
	rm -f "${out%.squashfs}.roothash.p7s"
	[ "$sign" = 0 ] || layer_sign "$root" "${out%.squashfs}.roothash.p7s"
	log "$out: root hash $root${base:+, for 10-base ${base:0:16}...}; ${out%.squashfs}.verity, .roothash$([ "$sign" = 0 ] && echo ' (not signed: --sign)' || echo ', .roothash.p7s (signed with '"$SB_CERT_PEM"')')"
}

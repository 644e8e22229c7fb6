# shellcheck shell=bash
# ./build.sh netboot: the built ISO as a tree to serve for network boot (docs/netboot.md).
# Sourced by build.sh, which provides log, die, OUT, TOP, LIVEUNION_VERSION and the built ISO.
#
# DIR/
#   tftp/undionly.kpxe, snponly.efi, ipxe.efi   Debian's iPXE (package ipxe) for PXE ROMs: BIOS, UEFI (the NIC's
#                                                own driver), UEFI (iPXE's drivers)
#   images/ID/                                   one image, named by the hash of its content: never rewritten
#     bzImage initramfs.img cmdline              what the boot menus of the ISO boot, with its live.verify= hashes
#     live/NN-name.squashfs|verity, live/MANIFEST the layers, their hash trees, "BYTES NAME" lines (live.fetch=)
#     liveunion.iso                              the ISO itself, the export of nbd-server (live.nbd=)
#     boot.ipxe                                  the iPXE script of this image (fetch or nbd, see serve)
#     liveunion-HASH.efi                         with ISO_UKI=1 or --uki: a unified kernel image signed with our key
#                                                (iso/sb.sh) whose command line carries live.fetch= and the root
#                                                hashes, for UEFI HTTP boot under Secure Boot; HASH names its content
#     layers.map                                 "NAME layers/KEY/NAME" for each file of live/: where serve's nginx
#                                                redirects it to
#   layers/KEY/NN-name.squashfs|verity           the same files (hard links) under a name that is their layer's
#                                                content: KEY is its dm-verity root hash (live.verify=), or the
#                                                file's SHA-256 when the image has no root hashes; so a layer that
#                                                two images share has one URL, which caches keep for ever
#   current.ipxe                                 chains to the newest image; replaced in one rename
#   current.efi                                  with a UKI: a symbolic link to the newest image's; replaced in one
#                                                rename (the boot file URL serve gives UEFI HTTP boot clients)
# A new build published into the same DIR leaves the old images where they are, so clients that booted them keep
# reading them (with live.nbd=) or re-reading them (a retry of live.fetch=); remove old images/ID yourself once no
# client runs them.

NETBOOT_IPXE_DIR=${NETBOOT_IPXE_DIR:-/usr/lib/ipxe}
# shellcheck disable=SC2034 # build.sh installs them
NETBOOT_PKGS=(ipxe)

# NETBOOT_UKI=1 (ISO_UKI=1 or --uki): add the signed UKI; NETBOOT_URL: the base URL(s) of the served tree, comma
# separated (the server, its mirrors or caches), signed into the UKI's live.fetch=: no DHCP or iPXE script tells a
# UKI where its layers are, and the firmware's boot URL does not reach the kernel.
NETBOOT_UKI=${NETBOOT_UKI:-0} # build.sh: 1 with ISO_UKI=1
NETBOOT_URL=${NETBOOT_URL:-}

# netboot_write WORKDIR ISO DIR: WORKDIR is the ISO stage's (tree/, cmdline), ISO the built image.
netboot_write() {
	local w=$1 iso=$2 dir=$3 id img f t cmdline
	{ [ -d "$w/tree/live" ] && [ -f "$w/cmdline" ] && [ -f "$iso" ]; } || die "no built ISO in $w (run ./build.sh first)"
	for f in undionly.kpxe snponly.efi ipxe.efi; do
		[ -f "$NETBOOT_IPXE_DIR/$f" ] || die "$NETBOOT_IPXE_DIR/$f missing (Debian package ipxe)"
	done
	cmdline=$(cat "$w/cmdline")
	if [ "$NETBOOT_UKI" = 1 ]; then
		[ -n "$NETBOOT_URL" ] ||
			die "netboot: a signed UKI (ISO_UKI=1 or --uki) needs --url http://SERVER/ (the served tree's base URL; several, comma-separated, for mirrors or caches): its signed command line says where the layers are"
		for f in ${NETBOOT_URL//,/ }; do
			case "$f" in http://?*/) ;; *) die "netboot: --url '$f' is not http://HOST[:PORT]/[PATH/] (with its trailing /)" ;; esac
		done
		sb_uki_verified "$w/cmdline" || die "netboot: $(sb_uki_unverified_text "$cmdline")"
	fi
	# The image's name: the hash of everything a client reads, so the same build always gets the same name.
	id=$( (cd "$w/tree" && sha256sum boot/bzImage boot/initramfs.img live/*) | { cat; printf '%s\n' "$cmdline"; } |
		sha256sum | cut -c1-12)
	mkdir -p "$dir/tftp" "$dir/images"
	for f in undionly.kpxe snponly.efi ipxe.efi; do
		cp "$NETBOOT_IPXE_DIR/$f" "$dir/tftp/$f.tmp" && mv "$dir/tftp/$f.tmp" "$dir/tftp/$f"
	done
	img=$dir/images/$id
	if [ -f "$img/boot.ipxe" ]; then
		log "$img: this image is there already (same content)"
	else
		t=$dir/images/.$id.tmp
		rm -rf "$t"
		mkdir -p "$t/live"
		cp "$w/tree/boot/bzImage" "$w/tree/boot/initramfs.img" "$t/"
		cp "$w/tree/live/"* "$t/live/"
		(cd "$t/live" && for f in *.squashfs *.verity; do
			[ -e "$f" ] && printf '%s %s\n' "$(stat -c %s "$f")" "$f"
		done) | LC_ALL=C sort -k2 >"$t/live/MANIFEST"
		cp "$iso" "$t/liveunion.iso"
		printf '%s\n' "$cmdline" >"$t/cmdline"
		netboot_ipxe "$id" "$cmdline" >"$t/boot.ipxe"
		find "$t" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
		chmod -R a+rX "$t"
		mv "$t" "$img"
	fi
	netboot_layers "$img" "$cmdline" "$dir"
	[ "$NETBOOT_UKI" != 1 ] || netboot_uki "$w" "$img" "$id" "$cmdline" "$dir"
	printf '#!ipxe\n# the newest image (./build.sh netboot, liveunion %s)\nchain images/%s/boot.ipxe\n' \
		"$LIVEUNION_VERSION" "$id" >"$dir/current.ipxe.tmp"
	mv "$dir/current.ipxe.tmp" "$dir/current.ipxe"
	chmod a+rX "$dir" "$dir/tftp" "$dir/images" "$dir"/tftp/* "$dir/current.ipxe"
	log "netboot tree $dir: image $id ($(du -sh "$img" | cut -f1)), current.ipxe${NETBOOT_UKI_FILE:+ and current.efi} point at it"
	for f in "$dir"/images/*/; do
		[ "$f" = "$img/" ] || log "  older image kept for clients still running it: $f"
	done
	log "serve it: ./build.sh serve $dir --interface IFACE"
}

# netboot_layers IMG CMDLINE DIR: DIR/layers/KEY/ holds IMG's layer files under their content's name, and
# IMG/layers.map says which is which (serve redirects an image's live/NAME there; the init follows). The key of a
# layer is its root hash from CMDLINE's live.verify=, else its squashfs file's SHA-256; its .verity goes with it.
netboot_layers() {
	local img=$1 cmdline=$2 dir=$3 verify='' f g stem key map=''
	case " $cmdline " in *" live.verify="*) verify=${cmdline##*live.verify=} && verify=${verify%% *} ;; esac
	for f in "$img"/live/*.squashfs; do
		[ -e "$f" ] || continue
		stem=$(basename "$f" .squashfs)
		key=$(printf '%s\n' "${verify//,/$'\n'}" | sed -n "s/^$stem:\([0-9a-f]\{64\}\)\$/\1/p")
		[ -n "$key" ] || key=$(sha256sum "$f" | cut -c1-64)
		mkdir -p "$dir/layers/$key"
		for g in "$img/live/$stem.squashfs" "$img/live/$stem.verity"; do
			[ -e "$g" ] || continue
			[ -e "$dir/layers/$key/${g##*/}" ] || ln "$g" "$dir/layers/$key/${g##*/}" 2>/dev/null ||
				cp -p "$g" "$dir/layers/$key/${g##*/}" || die "cannot write $dir/layers/$key/${g##*/}"
			cmp -s "$g" "$dir/layers/$key/${g##*/}" ||
				die "$dir/layers/$key/${g##*/} differs from $g: the same content key for other bytes (a .verity made with another salt or UUID?)"
			map+="${g##*/} layers/$key/${g##*/}"$'\n'
		done
	done
	{ printf '%s' "$map" >"$img/layers.map.tmp" && mv "$img/layers.map.tmp" "$img/layers.map"; } || die "cannot write $img/layers.map"
	chmod -R a+rX "$dir/layers" "$img/layers.map"
}

# netboot_uki WORKDIR IMG ID CMDLINE DIR: IMG/liveunion-HASH.efi, the image's kernel, initramfs and command line
# (with live.fetch= at NETBOOT_URL's images/ID/ and, as every signed line, live.panic unless ISO_UKI_RESCUE=1)
# signed with our key as one UKI; DIR/current.efi links to it. A UKI of another key or URL is another file beside
# it: the image's other files are never rewritten.
NETBOOT_UKI_FILE=''
netboot_uki() {
	local w=$1 img=$2 id=$3 cmdline=$4 dir=$5 u urls='' t h
	sb_fetch
	sb_keys
	for u in ${NETBOOT_URL//,/ }; do urls+="${urls:+,}${u}images/$id/"; done
	t=$(mktemp -d "$dir/images/.uki.XXXXXX")
	printf '%s%s live.fetch=%s\n' "$cmdline" "$([ "$ISO_UKI_RESCUE" = 1 ] || printf ' live.panic')" "$urls" >"$t/cmdline"
	printf 'NAME="liveunion"\nID=liveunion\nVERSION_ID="%s"\nPRETTY_NAME="liveunion %s (network, image %s)"\n' \
		"$LIVEUNION_VERSION" "$LIVEUNION_VERSION" "$id" >"$t/osrel"
	sb_uki "$OUT/sb/root/$SB_STUB" "$w/tree/boot/bzImage" "$w/tree/boot/initramfs.img" "$t/cmdline" "$t/osrel" "$t/uki.efi"
	h=$(sha256sum "$t/uki.efi" | cut -c1-12)
	NETBOOT_UKI_FILE=liveunion-$h.efi
	if [ -f "$img/$NETBOOT_UKI_FILE" ]; then
		log "$img/$NETBOOT_UKI_FILE: this UKI is there already (same content)"
	else
		{ chmod a+r "$t/uki.efi" && mv "$t/uki.efi" "$img/$NETBOOT_UKI_FILE"; } || die "cannot write $img/$NETBOOT_UKI_FILE"
	fi
	rm -rf "$t"
	{ ln -sfn "images/$id/$NETBOOT_UKI_FILE" "$dir/current.efi.tmp" && mv -T "$dir/current.efi.tmp" "$dir/current.efi"; } ||
		die "cannot point $dir/current.efi at images/$id/$NETBOOT_UKI_FILE"
	log "  signed UKI $img/$NETBOOT_UKI_FILE ($(sb_fingerprint | cut -c1-16)...), live.fetch=$urls"
}

# netboot_ipxe ID CMDLINE: the image's iPXE script. The server's start.ipxe (serve) sets liveunion-base (its HTTP
# URL), liveunion-nbd (HOST:PORT of nbd-server) and liveunion-mode (fetch or nbd) before chaining here.
netboot_ipxe() {
	local id=$1 cmdline=$2
	cat <<EOF
#!ipxe
# liveunion $LIVEUNION_VERSION image $id (./build.sh netboot): the ISO's kernel, initramfs and command line, with
# the layers downloaded into RAM (live.fetch=) or read from nbd-server (live.nbd=). BOOTIF tells the init which
# interface booted; the live.verify= root hashes make what the servers send untrusted.
set img \${liveunion-base}images/$id/
iseq \${liveunion-mode} nbd && goto nbd ||
echo liveunion: image $id over HTTP into RAM
kernel \${img}bzImage initrd=initramfs.img $cmdline live.fetch=\${img} BOOTIF=01-\${netX/mac:hexhyp} || goto failed
goto boot
:nbd
echo liveunion: image $id from nbd-server \${liveunion-nbd}
kernel \${img}bzImage initrd=initramfs.img $cmdline live.nbd=\${liveunion-nbd}/liveunion-$id BOOTIF=01-\${netX/mac:hexhyp} || goto failed
:boot
initrd \${img}initramfs.img || goto failed
boot || goto failed
:failed
echo liveunion: could not load image $id from \${img}: retrying in 5 s
sleep 5
chain \${liveunion-base}start.ipxe
EOF
}

# shellcheck shell=bash
# Build-host stage of the `pc` kernel flavour: Debian's signed kernel, its modules and our patched overlayfs.
#   out/pc/debs/                 the four .deb files (apt-get download), kept: never fetched twice
#   out/pc/ABI/root/             the packages unpacked (dpkg-deb -x): boot/vmlinuz-ABI, lib/modules/ABI/, the headers
#   out/pc/vmlinuz               Debian's signed kernel, as it is
#   out/pc/overlay.ko            fs/overlayfs of linux-source-6.12 + kernel/patches/series, built against the headers
#   out/pc/squashfs.ko           fs/squashfs the same way (kernel/patches/0003: a UUID per squashfs)
#   out/pc/release               the kernel release (ABI), read by initramfs/pc.sh and rootfs/debian.sh
# Sourced by build.sh (log, die, hash_of, stage_done, stage_mark, OUT, TOP, JOBS, KERNEL_SRC from kernel/kernel.sh).

# The one place the pc kernel is pinned: Debian's ABI name and the package version of bookworm-security.
# linux-source-6.12 must be installed at the same package version (our overlay.ko is built from it).
PC_KERNEL_ABI=6.12.118+deb12
PC_KERNEL_DEBVER=6.12.118-1~deb12u1

PC_RELEASE=$PC_KERNEL_ABI-amd64
PC_DEBS=("linux-image-$PC_RELEASE" "linux-headers-$PC_RELEASE" "linux-headers-$PC_KERNEL_ABI-common" "linux-kbuild-$PC_KERNEL_ABI")
PC_PKGS=(kmod dwarves)

# pc_fetch DIR: the pinned packages in DIR (apt-get download), each checked for its version.
pc_fetch() {
	local d=$1 p f missing=()
	mkdir -p "$d"
	for p in "${PC_DEBS[@]}"; do
		f=$(find "$d" -maxdepth 1 -name "${p}_*.deb" -print -quit)
		[ -n "$f" ] || missing+=("$p=$PC_KERNEL_DEBVER")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "  apt-get download ${missing[*]}"
		# apt's sandbox user cannot write into a root-owned OUT; the download is checked below either way.
		(cd "$d" && apt-get download -o APT::Sandbox::User=root "${missing[@]}" >&2) ||
			die "apt-get download ${missing[*]} failed (is bookworm-security in the apt sources, and apt-get update done? apt-cache madison linux-image-$PC_RELEASE)"
	fi
	for p in "${PC_DEBS[@]}"; do
		f=$(find "$d" -maxdepth 1 -name "${p}_*.deb" -print -quit)
		[ "$(dpkg-deb -f "$f" Version)" = "$PC_KERNEL_DEBVER" ] ||
			die "$f is version $(dpkg-deb -f "$f" Version), kernel/pc.sh pins $PC_KERNEL_DEBVER: remove it"
	done
}

# pc_check_source: our overlay.ko must come from the same source as Debian's kernel.
pc_check_source() {
	local have
	have=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)
	[ "$have" = "$PC_KERNEL_DEBVER" ] ||
		die "linux-source-6.12 is ${have:-not installed}, the pc kernel is $PC_KERNEL_DEBVER (kernel/pc.sh): install linux-source-6.12=$PC_KERNEL_DEBVER or change the pin"
	[ -f "$KERNEL_SRC" ] || die "the pc flavour builds overlayfs from the tarball $KERNEL_SRC, which does not exist"
}

# PC_OURS: the file systems the patch queue touches, each built as our own module from linux-source-6.12 and
# loaded in place of Debian's (initramfs/init/modload.c; Debian's stays the fallback when ours is refused).
PC_OURS=(overlayfs:overlay:CONFIG_OVERLAY_FS squashfs:squashfs:CONFIG_SQUASHFS) # directory:module:Kconfig symbol
# pc_modules ROOT WORK: fs/overlayfs and fs/squashfs (+ fs/internal.h) from the tarball, the patch queue, an
# external module build of each against the unpacked headers; the stripped modules end in WORK/NAME.ko. The
# patch queue applies to this partial tree: a patch outside these directories cannot ship as a module and stops
# the pc build, named.
pc_modules() {
	local root=$1 w=$2 hdr mk e dir name cfg
	rm -rf "$w"
	mkdir -p "$w"
	tar -xf "$KERNEL_SRC" -C "$w" --strip-components=1 --wildcards '*/fs/overlayfs/*' '*/fs/squashfs/*' \
		'*/fs/internal.h' '*/usr/gen_init_cpio.c' || die "cannot unpack fs/overlayfs and fs/squashfs from $KERNEL_SRC"
	kernel_apply_patches "$w" >&2
	hdr=$root/usr/src/linux-headers-$PC_RELEASE
	# Debian's header Makefile includes the common half by its absolute /usr/src path: point it at ours.
	sed -i "s|^include /usr/src/|include $root/usr/src/|" "$hdr/Makefile" || die "cannot edit $hdr/Makefile"
	for e in "${PC_OURS[@]}"; do
		IFS=: read -r dir name cfg <<<"$e"
		mk=(make -C "$hdr" M="$w/fs/$dir" "$cfg=m" -j"$JOBS" KBUILD_BUILD_TIMESTAMP="@$SOURCE_DATE_EPOCH")
		"${mk[@]}" modules >"$w/make-$name.log" 2>&1 ||
			{ tail -n 20 "$w/make-$name.log" >&2; die "building $name.ko against $hdr failed (log: $w/make-$name.log)"; }
		strip --strip-debug "$w/fs/$dir/$name.ko" || die "strip $name.ko failed"
		cp "$w/fs/$dir/$name.ko" "$w/$name.ko" || die "cannot copy $name.ko"
	done
}
# pc_check_vermagic OURS KERNELMODULE: the same vermagic, or the kernel refuses ours at boot anyway.
pc_check_vermagic() {
	local ours theirs
	ours=$(modinfo -F vermagic "$1") || die "modinfo $1 failed"
	theirs=$(modinfo -F vermagic "$2") || die "modinfo $2 failed"
	[ "$ours" = "$theirs" ] ||
		die "our $(basename "$1") has vermagic '$ours', Debian's kernel $PC_RELEASE wants '$theirs' ($2): the headers do not match the kernel"
	log "  $(basename "$1") vermagic matches the kernel: $ours"
}

# shellcheck disable=SC2034 # STAGE_NOTE is read by build.sh after the stage returns
stage_pckernel() {
	local d=$OUT/pc h root f e dir name
	PATH=$PATH:/usr/sbin:/sbin
	if ! command -v modinfo >/dev/null || ! command -v pahole >/dev/null; then
		need_pkgs "${PC_PKGS[@]}"
	fi
	h=$(printf '%s %s\n%s\n' "$PC_RELEASE" "$PC_KERNEL_DEBVER" "$(hash_of "$TOP/kernel/patches" "$TOP/kernel/pc.sh")" | sha256sum | cut -c1-16)
	if stage_done pckernel "$h" && [ -f "$d/vmlinuz" ] && [ -f "$d/overlay.ko" ] && [ -f "$d/squashfs.ko" ]; then
		STAGE_NOTE="cached $h, $PC_RELEASE"
		return 0
	fi
	pc_check_source
	pc_fetch "$d/debs"
	root=$d/$PC_RELEASE/root
	if [ ! -f "$root.done" ]; then
		rm -rf "$root"
		mkdir -p "$root"
		for f in "$d"/debs/*_"$PC_KERNEL_DEBVER"_*.deb; do
			dpkg-deb -x "$f" "$root" || die "dpkg-deb -x $f failed"
		done
		# the package leaves the index to its postinst; the initramfs subset and the live root start from it
		depmod -b "$root" "$PC_RELEASE" || die "depmod -b $root $PC_RELEASE failed"
		touch "$root.done"
	fi
	[ -f "$root/boot/vmlinuz-$PC_RELEASE" ] || die "no boot/vmlinuz-$PC_RELEASE in linux-image-$PC_RELEASE"
	pc_modules "$root" "$d/modules-build"
	for e in "${PC_OURS[@]}"; do
		IFS=: read -r dir name _ <<<"$e"
		pc_check_vermagic "$d/modules-build/$name.ko" "$root/lib/modules/$PC_RELEASE/kernel/fs/$dir/$name.ko.xz"
	done
	# The initramfs stage packs with the kernel's cpio generator; a pc-only build has no tiny kernel stage to make it.
	cc -O2 -o "$d/gen_init_cpio" "$d/modules-build/usr/gen_init_cpio.c" || die "cannot compile usr/gen_init_cpio.c"
	for e in "${PC_OURS[@]}"; do
		IFS=: read -r _ name _ <<<"$e"
		cp "$d/modules-build/$name.ko" "$d/$name.ko.tmp" && mv "$d/$name.ko.tmp" "$d/$name.ko"
	done
	cp "$root/boot/vmlinuz-$PC_RELEASE" "$d/vmlinuz.tmp" && mv "$d/vmlinuz.tmp" "$d/vmlinuz"
	printf '%s\n' "$PC_RELEASE" >"$d/release"
	stage_mark pckernel "$h"
	STAGE_NOTE="$PC_RELEASE, vmlinuz $(du -k "$d/vmlinuz" | cut -f1) KiB, overlay.ko $(du -k "$d/overlay.ko" | cut -f1) KiB, squashfs.ko $(du -k "$d/squashfs.ko" | cut -f1) KiB"
}

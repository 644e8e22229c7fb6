# shellcheck shell=bash
# Build-host stage: kernel + initramfs + layers + boot loaders -> out/liveunion.iso, a hybrid image that boots
# as a CD and as a raw disk, in BIOS mode (isolinux) and UEFI mode (GRUB on an El Torito EFI entry and an appended ESP).

ISO_LABEL=LIVEUNION
ISO_SYSLINUX=/usr/lib/syslinux/modules/bios
# Extra layers a profile or a test adds on top of 10-base: NN-name.squashfs files, or NN-name directories
# (an overlay upper directory keeps its whiteouts and opaque markers: made into a squashfs as root).
ISO_EXTRA_LAYERS=${ISO_EXTRA_LAYERS:-}
# dm-verity hash tree per layer (live/NN-name.verity) and the root hashes on the kernel command line of
# both menus. 0: none (test images with more layers than the command line has room for).
ISO_VERITY=${ISO_VERITY:-1}
# Room for live.verify= on the command line (x86 kernels keep 2048 bytes, the menus add ~120).
ISO_VERIFY_MAX=1800
# Seconds the boot menus wait before the default entry (a build setting, ISO_MENU_TIMEOUT=N). Every user's boot
# pays it; 2 s is enough to press a key (which stops the countdown in both menus) to reach toram or the rescue
# shell, and costs little. 0 boots at once (GRUB: timeout=0; isolinux, where 0 means "wait for ever": 0.1 s).
ISO_MENU_TIMEOUT=${ISO_MENU_TIMEOUT:-2}
# The kernel flavour (tiny: out/kernel/bzImage + out/initramfs.img; pc: kernel/pc.sh + initramfs/pc.sh), named in both menus.
ISO_FLAVOUR=${ISO_FLAVOUR:-tiny}
ISO_KERNEL=${ISO_KERNEL:-}
ISO_INITRAMFS=${ISO_INITRAMFS:-}
GRUB_MODULES="normal configfile search search_fs_uuid search_label iso9660 fat part_gpt part_msdos linux echo test serial terminal efi_gop efi_uga all_video gzio sleep"

# iso_uuid HASH: the 16-digit ISO9660 modification date the init and GRUB look for: the build date plus
# two digits of the content hash, so two different builds of one day are told apart.
iso_uuid() {
	printf '%s%02d' "$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M%S)" "$((0x${1:0:4} % 100))"
}

iso_subst() {
	local t10=$((ISO_MENU_TIMEOUT * 10))
	[ "$t10" -gt 0 ] || t10=1
	sed -e "s|@CMDLINE@|$2|g" -e "s|@VERSION@|$LIVEUNION_VERSION|g" -e "s|@GRUBUUID@|$3|g" \
		-e "s|@TIMEOUT@|$ISO_MENU_TIMEOUT|g" -e "s|@FLAVOUR@|$ISO_FLAVOUR|g" -e "s|@TIMEOUT10@|$t10|g" "$1"
}

# iso_esp DIR UUID GRUBUUID: a small FAT ESP holding GRUB as the removable-media path EFI/BOOT/BOOTX64.EFI.
# GRUB is made by grub-mkimage from GRUB_MODULES (all built in) plus a memdisk tar that holds only the embedded
# grub.cfg: grub-mkstandalone would do the same but writes the build's wall-clock time into its memdisk tar, so no
# two builds would give the same ISO. Our tar has fixed owners, order and dates (SOURCE_DATE_EPOCH).
iso_esp() {
	local d=$1 uuid=$2 grubuuid=$3 efi=$1/bootx64.efi kb
	rm -rf "$d/memdisk"
	mkdir -p "$d/memdisk/boot/grub"
	iso_subst "$TOP/iso/grub-embed.cfg.in" "" "$grubuuid" >"$d/memdisk/boot/grub/grub.cfg"
	tar -C "$d/memdisk" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		--mode=u=rwX,go=rX --format=ustar -cf "$d/memdisk.tar" boot || die "tar of GRUB's memdisk failed"
	# shellcheck disable=SC2086 # GRUB_MODULES is a word list on purpose
	grub-mkimage -O x86_64-efi -o "$efi" -p '(memdisk)/boot/grub' -m "$d/memdisk.tar" memdisk tar $GRUB_MODULES ||
		die "grub-mkimage (x86_64-efi, modules: $GRUB_MODULES) failed"
	kb=$(($(du -k "$efi" | cut -f1) + 256))
	rm -f "$d/efi.img"
	mkfs.vfat -C -n LIVEUNIEFI -i "${uuid:8:8}" --invariant "$d/efi.img" "$kb" >/dev/null || die "mkfs.vfat of the ESP failed"
	touch -d "@$SOURCE_DATE_EPOCH" "$efi"
	export MTOOLS_SKIP_CHECK=1
	mmd -i "$d/efi.img" ::/EFI ::/EFI/BOOT || die "mmd on the ESP failed"
	mcopy -m -i "$d/efi.img" "$efi" ::/EFI/BOOT/BOOTX64.EFI || die "mcopy of GRUB to the ESP failed"
}

# iso_dir_layer DIR WORKDIR: the squashfs of a layer directory (owners, device nodes, xattrs as they are:
# whiteouts are 0/0 character devices, opaque directories carry trusted.overlay.opaque), fixed times.
iso_dir_layer() {
	local d=$1 out
	out=$2/$(basename "$d").squashfs
	mkdir -p "$2"
	squashfs_make "$d" "$out" -xattrs || die "mksquashfs of layer directory $d failed"
	printf '%s\n' "$out"
}

# iso_verity LAYER: writes LAYER's hash tree beside it (NN-name.verity) and prints the root hash.
# Salt and UUID come from the layer's content, so the same layer gives the same bytes (reproducible).
iso_verity() {
	local l=$1 v=${1%.squashfs}.verity s out
	# dm-verity covers whole 4 KiB blocks; zeros after a squashfs image are never read by it
	[ $(($(stat -c %s "$l") % 4096)) -eq 0 ] || truncate -s %4096 "$l" || die "cannot pad $l to 4 KiB"
	s=$(sha256sum <"$l" | cut -c1-64)
	out=$(veritysetup format --hash=sha256 --data-block-size=4096 --hash-block-size=4096 --salt="$s" \
		--uuid="${s:0:8}-${s:8:4}-4${s:13:3}-8${s:17:3}-${s:20:12}" "$l" "$v") || die "veritysetup format $l failed"
	chmod 0644 "$v"
	touch -d "@$SOURCE_DATE_EPOCH" "$v"
	printf '%s\n' "$out" | sed -n 's/^Root hash:[[:space:]]*\([0-9a-f]*\)$/\1/p'
}

# shellcheck disable=SC2086 # ISO_EXTRA_LAYERS is a word list
stage_iso() {
	iso_assemble "$OUT/liveunion.iso" "$OUT/iso" iso $ISO_EXTRA_LAYERS
}

# iso_assemble ISO WORKDIR STAMP [LAYER...]: the hybrid ISO from the built kernel, initramfs and 10-base plus
# LAYER... (NN-name.squashfs). stage_iso makes out/liveunion.iso with it; `build.sh iso-with` makes test ISOs
# (another path, work directory and stamp) from the same outputs without running any stage again.
# shellcheck disable=SC2034 # STAGE_NOTE is read by build.sh
iso_assemble() {
	case "$ISO_MENU_TIMEOUT" in
	'' | *[!0-9]*) die "ISO_MENU_TIMEOUT=$ISO_MENU_TIMEOUT: give whole seconds (0 boots the default entry at once)" ;;
	esac
	local iso=$1 w=$2 stamp=$3 h uuid grubuuid cmdline t l root verify='' layers=()
	shift 3
	for l in "$@"; do
		if [ -d "$l" ]; then
			case "$(basename "$l")" in
			[0-9][0-9]-*) layers+=("$(iso_dir_layer "$l" "$w.layers")") ;;
			*) die "extra layer directory $l is not named NN-name" ;;
			esac
		else
			layers+=("$l")
		fi
	done
	set -- "${layers[@]}"
	# A profile (rootfs/profile.sh) brings its own bottom layer and command-line keys; the default is the busybox root.
	local base=${ISO_BASE_LAYER:-$OUT/rootfs/10-base.squashfs} extra=${ISO_CMDLINE_EXTRA:-}
	local kernel=${ISO_KERNEL:-$OUT/kernel/bzImage} initramfs=${ISO_INITRAMFS:-$OUT/initramfs.img}
	for l in "$kernel" "$initramfs" "$base" "$@"; do
		[ -f "$l" ] || die "$l is missing (run ./build.sh first)"
	done
	h=$(printf 'verity=%s menu=%s\n%s\n' "$ISO_VERITY flavour=$ISO_FLAVOUR${extra:+ cmdline=$extra}" "$ISO_MENU_TIMEOUT" "$(hash_of "$kernel" "$initramfs" \
		"$base" "$@" "$TOP/iso" "$TOP/VERSION")" | sha256sum | cut -c1-16)
	if stage_done "$stamp" "$h" && [ -f "$iso" ]; then
		STAGE_NOTE="cached $h"
		return 0
	fi
	uuid=$(iso_uuid "$h")
	grubuuid="${uuid:0:4}-${uuid:4:2}-${uuid:6:2}-${uuid:8:2}-${uuid:10:2}-${uuid:12:2}-${uuid:14:2}"
	cmdline="live.medium=UUID=$uuid${extra:+ $extra} console=tty0 console=ttyS0,115200n8"
	t=$w/tree
	rm -rf "$w"
	mkdir -p "$t/boot/grub" "$t/isolinux" "$t/live" "$w/esp"
	cp "$kernel" "$t/boot/bzImage"
	cp "$initramfs" "$t/boot/initramfs.img"
	cp "$base" "$t/live/10-base.squashfs"
	for l in "$@"; do
		case "$(basename "$l")" in
		[0-9][0-9]-*.squashfs) cp "$l" "$t/live/" ;;
		*) die "extra layer $l is not named NN-name.squashfs" ;;
		esac
	done
	if [ "$ISO_VERITY" = 1 ]; then
		for l in "$t"/live/*.squashfs; do
			root=$(iso_verity "$l")
			[ -n "$root" ] || die "no root hash from veritysetup for $l"
			verify="${verify:+$verify,}$(basename "$l" .squashfs):$root"
		done
		[ ${#verify} -le $ISO_VERIFY_MAX ] || die "the root hashes of $# extra layer(s) make live.verify= ${#verify} bytes, more than the kernel command line holds; merge layers or build with ISO_VERITY=0 (unverified)"
		cmdline="$cmdline live.verify=$verify"
	fi
	cp /usr/lib/ISOLINUX/isolinux.bin "$t/isolinux/"
	for l in ldlinux.c32 menu.c32 libutil.c32 libcom32.c32; do
		cp "$ISO_SYSLINUX/$l" "$t/isolinux/" || die "missing $ISO_SYSLINUX/$l (package syslinux-common)"
	done
	iso_subst "$TOP/iso/isolinux.cfg.in" "$cmdline" "$grubuuid" >"$t/isolinux/isolinux.cfg"
	iso_subst "$TOP/iso/grub.cfg.in" "$cmdline" "$grubuuid" >"$t/boot/grub/grub.cfg"
	iso_subst "$TOP/iso/loopback.cfg.in" "$cmdline" "$grubuuid" >"$t/boot/grub/loopback.cfg"
	iso_esp "$w/esp" "$uuid" "$grubuuid"
	printf '%s\n' "$cmdline" >"$w/cmdline"
	printf '%s\n' "$uuid" >"$w/uuid"
	# Directory records carry the tree's own times: fixed here, as everything else is.
	find "$t" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} + || die "cannot set the dates of $t"
	# SOURCE_DATE_EPOCH makes xorriso fix every file date and the GPT GUIDs; the modification date is our UUID.
	xorriso -report_about SORRY -as mkisofs -o "$iso.tmp" \
		-iso-level 3 -full-iso9660-filenames -joliet -joliet-long -rational-rock \
		-volid "$ISO_LABEL" -appid "liveunion $LIVEUNION_VERSION" -publisher liveunion \
		--modification-date="$uuid" \
		-isohybrid-mbr /usr/lib/ISOLINUX/isohdpfx.bin \
		-eltorito-boot isolinux/isolinux.bin -eltorito-catalog isolinux/boot.cat \
		-no-emul-boot -boot-load-size 4 -boot-info-table \
		-eltorito-alt-boot -e --interval:appended_partition_2:all:: -no-emul-boot -isohybrid-gpt-basdat \
		-append_partition 2 0xef "$w/esp/efi.img" \
		"$t" || die "xorriso failed"
	mv "$iso.tmp" "$iso"
	stage_mark "$stamp" "$h"
	STAGE_NOTE="$(size_text "$iso"), UUID $grubuuid"
}

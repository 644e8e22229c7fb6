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
# How long usb-storage lets a new USB disk settle before it probes it (a build setting, ISO_USB_DELAY=, on both
# menus' command lines as usb_storage.delay_use=; the tiny kernel has the driver built in, the pc flavour's init
# passes it to the module as modprobe would). The kernel's default, 1 s, is a second of every USB boot spent
# waiting (bench/boot, bios-usb); 100 ms keeps a little settle time for slow devices (0 would keep none). A stick
# that needs the old delay: usb_storage.delay_use=1 at the boot menu (the last word wins), or ISO_USB_DELAY=1.
ISO_USB_DELAY=${ISO_USB_DELAY:-100ms}
# The kernel flavour (tiny: out/kernel/bzImage + out/initramfs.img; pc: kernel/pc.sh + initramfs/pc.sh), named in both menus.
ISO_FLAVOUR=${ISO_FLAVOUR:-tiny}
ISO_KERNEL=${ISO_KERNEL:-}
ISO_INITRAMFS=${ISO_INITRAMFS:-}
# The ESP is also the CD's El Torito EFI boot image, whose size field counts 512-byte sectors in 16 bits: firmware
# does not find a larger one (OVMF: "Not Found").
ISO_ESP_MAX=$((65535 * 512))

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

# iso_esp DIR UUID GRUBUUID KERNEL INITRD CMDLINE: DIR/efi.img, the FAT ESP of the UEFI path, with files dated
# SOURCE_DATE_EPOCH. Default: Debian's signed chain as its own ISOs carry it, on the removable-media path:
#   EFI/BOOT/BOOTX64.EFI  shim (signed by Microsoft's UEFI CA), which loads and checks
#   EFI/BOOT/grubx64.efi  Debian's signed GRUB (its CD build: GRUB reads /boot/grub/grub.cfg on the device it came
#                         from: the ISO's own menu from a CD, from a stick the ESP's, which finds the ISO by UUID)
#   EFI/BOOT/mmx64.efi    MokManager, which shim starts to enroll our certificate
#   boot/grub/grub.cfg    that finder (iso/grub-esp.cfg.in)
# ISO_UKI=1: the menu entries as unified kernel images signed with our key, and systemd-boot (signed too) as the
# menu: EFI/BOOT/BOOTX64.EFI, loader/loader.conf, EFI/Linux/liveunion-N-NAME.efi (iso/uki-entries); the same systemd-boot behind
# shim in EFI/liveunion/ (shimx64.efi, grubx64.efi, mmx64.efi) for machines that trust Microsoft's CA and our MOK.
# Both: liveunion-sb.cer, our certificate (DER) to enroll.
iso_esp() {
	local d=$1 uuid=$2 grubuuid=$3 kernel=$4 initrd=$5 cmdline=$6 r=$OUT/sb/root f kb n e keys title each room left
	sb_fetch
	sb_keys
	rm -rf "$d/fs"
	mkdir -p "$d/fs/EFI/BOOT"
	cp "$SB_CERT_DER" "$d/fs/liveunion-sb.cer"
	if [ "$ISO_UKI" = 1 ]; then
		mkdir -p "$d/fs/EFI/Linux" "$d/fs/EFI/liveunion" "$d/fs/loader"
		sb_sign_efi "$r/$SB_SDBOOT" "$d/fs/EFI/BOOT/BOOTX64.EFI"
		cp "$d/fs/EFI/BOOT/BOOTX64.EFI" "$d/fs/EFI/liveunion/grubx64.efi"
		cp "$r/$SB_SHIM" "$d/fs/EFI/liveunion/shimx64.efi"
		cp "$r/$SB_MOKMANAGER" "$d/fs/EFI/liveunion/mmx64.efi"
		iso_subst "$TOP/iso/uki-loader.conf.in" "" "$grubuuid" >"$d/fs/loader/loader.conf"
		# systemd-boot lists entries of one name and version by file name, highest first: the default is numbered highest
		n=$(grep -c . "$TOP/iso/uki-entries")
		grep -qx "default liveunion-$n-$(cut -d'|' -f1 "$TOP/iso/uki-entries" | head -n 1).efi" "$TOP/iso/uki-loader.conf.in" ||
			die "iso/uki-loader.conf.in: the default must be the first entry of iso/uki-entries, liveunion-$n-...efi"
		# Each entry carries the kernel and the initramfs: as many as the El Torito image holds, in menu order.
		each=$(($(stat -c %s "$r/$SB_STUB" "$kernel" "$initrd" | paste -sd+ | bc) + 65536))
		room=$((ISO_ESP_MAX - $(du -sb "$d/fs" | cut -f1) - 1048576))
		left=()
		while IFS='|' read -r -u 3 e keys title; do
			# The signed command line is the trust anchor: a shell in the initramfs would hand it to whoever sits at
			# the keyboard. So no rescue entry, and a failed step panics (live.panic) instead of opening the rescue
			# shell, unless the builder asks for both with ISO_UKI_RESCUE=1 (a lab's machines behind a locked door).
			if [ "$ISO_UKI_RESCUE" != 1 ]; then
				case " $keys " in *" live.break"*) n=$((n - 1)) && continue ;; esac
				keys="${keys:+$keys }live.panic"
			fi
			if [ "$each" -gt "$room" ]; then
				left+=("$e")
				n=$((n - 1))
				continue
			fi
			room=$((room - each))
			printf '%s\n' "$cmdline${keys:+ $keys}" >"$d/cmdline-$e"
			printf 'NAME="liveunion"\nID=liveunion\nVERSION_ID="%s"\nPRETTY_NAME="%s"\n' "$LIVEUNION_VERSION" \
				"$(iso_subst /dev/stdin "" "" <<<"$title")" >"$d/osrel-$e"
			sb_uki "$r/$SB_STUB" "$kernel" "$initrd" "$d/cmdline-$e" "$d/osrel-$e" "$d/fs/EFI/Linux/liveunion-$n-$e.efi"
			n=$((n - 1))
		done 3<"$TOP/iso/uki-entries"
		[ -n "$(ls "$d/fs/EFI/Linux")" ] ||
			die "ISO_UKI=1: one unified kernel image ($each bytes) does not fit the $ISO_ESP_MAX bytes of an El Torito boot image"
		[ ${#left[@]} -eq 0 ] || log "  ISO_UKI=1: left out of the menu: ${left[*]} (each entry is a ${each}-byte image; an El Torito boot image holds $ISO_ESP_MAX bytes)"
	else
		cp "$r/$SB_SHIM" "$d/fs/EFI/BOOT/BOOTX64.EFI"
		cp "$r/$SB_GRUB" "$d/fs/EFI/BOOT/grubx64.efi"
		cp "$r/$SB_MOKMANAGER" "$d/fs/EFI/BOOT/mmx64.efi"
		mkdir -p "$d/fs/boot/grub"
		iso_subst "$TOP/iso/grub-esp.cfg.in" "" "$grubuuid" >"$d/fs/boot/grub/grub.cfg"
	fi
	find "$d/fs" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	kb=$(($(du -sk "$d/fs" | cut -f1) * 105 / 100 + 512))
	[ $((kb * 1024)) -le "$ISO_ESP_MAX" ] || die "the ESP would be $kb KiB, more than an El Torito boot image holds ($ISO_ESP_MAX bytes)"
	rm -f "$d/efi.img"
	mkfs.vfat -C -n LIVEUNIEFI -i "${uuid:8:8}" --invariant "$d/efi.img" "$kb" >/dev/null || die "mkfs.vfat of the ESP failed"
	export MTOOLS_SKIP_CHECK=1
	# the tree in sorted order: mmd for each directory, mcopy -m (keeping the dates) for each file
	(cd "$d/fs" && find . -mindepth 1 | LC_ALL=C sort) | while read -r f; do
		if [ -d "$d/fs/$f" ]; then
			mmd -i "$d/efi.img" "::${f#.}" || die "mmd ${f#.} on the ESP failed"
		else
			mcopy -m -i "$d/efi.img" "$d/fs/$f" "::${f#.}" || die "mcopy of ${f#.} to the ESP failed"
		fi
	done
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
	[ "$ISO_UKI" != 1 ] || sb_uki_needs_verity ISO_UKI=1
	case "$ISO_USB_DELAY" in
	[0-9] | [0-9][0-9] | [0-9]ms | [0-9][0-9]ms | [0-9][0-9][0-9]ms | [0-9][0-9][0-9][0-9]ms) ;;
	*) die "ISO_USB_DELAY=$ISO_USB_DELAY: give seconds (0-99) or milliseconds (e.g. 100ms, at most 9999ms)" ;;
	esac
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
	sb_keys # sets SB_*_PEM/DER here (the hash below runs sb_fingerprint in a subshell)
	h=$(printf 'verity=%s menu=%s uki=%s sb=%s\n%s\n' "$ISO_VERITY flavour=$ISO_FLAVOUR${extra:+ cmdline=$extra}" "$ISO_MENU_TIMEOUT usb=$ISO_USB_DELAY" "$ISO_UKI rescue=$ISO_UKI_RESCUE" \
		"$(sb_fingerprint) ${SB_DEBS[*]}" "$(hash_of "$kernel" "$initramfs" \
		"$base" "$@" "$TOP/iso" "$TOP/VERSION")" | sha256sum | cut -c1-16)
	if stage_done "$stamp" "$h" && [ -f "$iso" ]; then
		STAGE_NOTE="cached $h"
		return 0
	fi
	uuid=$(iso_uuid "$h")
	grubuuid="${uuid:0:4}-${uuid:4:2}-${uuid:6:2}-${uuid:8:2}-${uuid:10:2}-${uuid:12:2}-${uuid:14:2}"
	# no_timer_check: the kernel's test of the IO-APIC timer counts ticks during a busy loop, which a virtual
	# machine on a busy host can miss ("IO-APIC + timer doesn't work!", a panic at 0.02 s: seen in 3 of our qemu
	# logs); as cloud images do, it is skipped. On a PC it only matters for a board whose timer is wired wrong.
	cmdline="live.medium=UUID=$uuid${extra:+ $extra} usb_storage.delay_use=$ISO_USB_DELAY no_timer_check console=tty0 console=ttyS0,115200n8"
	t=$w/tree
	rm -rf "$w"
	mkdir -p "$t/boot/grub" "$t/isolinux" "$t/live" "$w/esp"
	if [ "$ISO_FLAVOUR" = tiny ]; then # ours: signed with our key (Debian's kernel carries Debian's signature)
		sb_sign_efi "$kernel" "$t/boot/bzImage"
	else
		cp "$kernel" "$t/boot/bzImage"
	fi
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
		[ ${#verify} -le $ISO_VERIFY_MAX ] || die "the root hashes of $# extra layer(s) make live.verify= ${#verify} bytes, more than the kernel command line holds; merge layers$([ "$ISO_UKI" = 1 ] || printf ' or build with ISO_VERITY=0 (unverified; refused with ISO_UKI=1)')"
		cmdline="$cmdline live.verify=$verify"
	fi
	cp /usr/lib/ISOLINUX/isolinux.bin "$t/isolinux/"
	for l in ldlinux.c32 menu.c32 libutil.c32 libcom32.c32; do
		cp "$ISO_SYSLINUX/$l" "$t/isolinux/" || die "missing $ISO_SYSLINUX/$l (package syslinux-common)"
	done
	iso_subst "$TOP/iso/isolinux.cfg.in" "$cmdline" "$grubuuid" >"$t/isolinux/isolinux.cfg"
	iso_subst "$TOP/iso/grub.cfg.in" "$cmdline" "$grubuuid" >"$t/boot/grub/grub.cfg"
	iso_subst "$TOP/iso/loopback.cfg.in" "$cmdline" "$grubuuid" >"$t/boot/grub/loopback.cfg"
	cp "$SB_CERT_DER" "$t/boot/liveunion-sb.cer"
	iso_esp "$w/esp" "$uuid" "$grubuuid" "$t/boot/bzImage" "$initramfs" "$cmdline"
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

# shellcheck shell=bash
# Build-host stage of the pc flavour's initramfs: the same init, busybox and e2fsck as out/initramfs.img, plus
# the modules of initramfs/pc-modules (with their dependencies) from Debian's kernel, modules.alias/modules.dep
# regenerated for that subset (depmod -b), and our overlay.ko and squashfs.ko -> out/pc/initramfs.img.
# The init loads them at boot (initramfs/init/modload.c). Sourced by build.sh after kernel/pc.sh and initramfs.sh.

PC_INITRAMFS_MAX=$((8 * 1024 * 1024))

# pc_module_paths ROOT RELEASE: every module file (relative to lib/modules/RELEASE) that pc-modules names or needs.
pc_module_paths() {
	local root=$1 rel=$2 dep name want
	dep=$root/lib/modules/$rel/modules.dep
	[ -f "$dep" ] || die "$dep missing (the pckernel stage runs depmod)"
	sed -e 's/#.*//' "$TOP/initramfs/pc-modules" | awk 'NF { print $1 }' | while read -r want; do
		# modules.dep spells file names with '-' or '_' as the source did; the module name is always '_'
		name=$(awk -F: -v w="$want" '{ n = $1; sub(/.*\//, "", n); sub(/\.ko.*/, "", n); gsub(/-/, "_", n) }
			n == w { print; exit }' "$dep")
		[ -n "$name" ] || die "initramfs/pc-modules names $want, which kernel $rel does not have as a module"
		printf '%s\n' "$name" | tr -d ':' | tr ' ' '\n' | grep .
	done | sort -u
}

# pc_initramfs_tree ROOT RELEASE DIR: DIR/lib/modules/RELEASE with the subset and its own index.
pc_initramfs_tree() {
	local root=$1 rel=$2 d=$3 m src=$1/lib/modules/$2 n
	rm -rf "$d"
	mkdir -p "$d/lib/modules/$rel" "$d/lib/liveunion" "$d/etc"
	pc_module_paths "$root" "$rel" >"$d/paths" || exit 1
	while read -r m; do
		mkdir -p "$d/lib/modules/$rel/$(dirname "$m")"
		cp "$src/$m" "$d/lib/modules/$rel/$m" || die "cannot copy $src/$m"
	done <"$d/paths"
	cp "$src/modules.builtin" "$src/modules.builtin.modinfo" "$d/lib/modules/$rel/"
	grep -Fxf <(sed 's/\.ko\..*$/.ko/' "$d/paths") "$src/modules.order" >"$d/lib/modules/$rel/modules.order" || true
	depmod -b "$d" "$rel" || die "depmod -b $d $rel failed"
	# The init reads the text files only.
	rm -f "$d/lib/modules/$rel"/modules.*.bin "$d/lib/modules/$rel"/modules.builtin.modinfo
	sed -e 's/#.*//' "$TOP/initramfs/pc-modules" | awk '$2 == "preload" { print $1 }' >"$d/etc/liveunion-modules.preload"
	cp "$OUT/pc/overlay.ko" "$d/lib/liveunion/overlay.ko"
	cp "$OUT/pc/squashfs.ko" "$d/lib/liveunion/squashfs.ko"
	# Signed with our key (iso/sb.sh): under Secure Boot the kernel loads them once that key is enrolled (MOK or
	# db); until then it refuses them and the init falls back to Debian's own modules (initramfs/init/modload.c).
	for m in overlay squashfs; do
		sb_sign_module "$root/usr/lib/linux-kbuild-${rel%-amd64}/scripts/sign-file" "$d/lib/liveunion/$m.ko"
	done
	n=$(wc -l <"$d/paths")
	log "  $n modules for the pc initramfs ($(grep -c . "$d/lib/modules/$rel/modules.alias") aliases)"
}

# pc_initramfs_list DIR: gen_init_cpio lines for everything under DIR (except its work files).
pc_initramfs_list() {
	local d=$1 p
	(cd "$d" && find lib etc -mindepth 0 | sort) | while read -r p; do
		if [ -d "$d/$p" ]; then
			printf 'dir /%s 0755 0 0\n' "$p"
		else
			printf 'file /%s %s 0644 0 0\n' "$p" "$d/$p"
		fi
	done
}

# shellcheck disable=SC2034 # STAGE_NOTE is read by build.sh after the stage returns
stage_pcinitramfs() {
	local d=$OUT/pc/initramfs img=$OUT/pc/initramfs.img rel h gen size
	rel=$(cat "$OUT/pc/release") || die "no $OUT/pc/release: run the pckernel stage first"
	[ -x "$OUT/initramfs/init" ] || die "no $OUT/initramfs/init: run the initramfs stage first"
	gen=$(initramfs_gen_cpio)
	h=$(printf '%s\n' "$rel" "$(hash_of "$TOP/initramfs/pc.sh" "$TOP/initramfs/pc-modules" "$OUT/initramfs/init" \
		"$OUT/pc/overlay.ko" "$OUT/pc/squashfs.ko" "$OUT/initramfs/list" "$gen")" "$(xz --version | head -1)" \
		"signed by $(sb_fingerprint)" | sha256sum | cut -c1-16)
	if stage_done pcinitramfs "$h" && [ -f "$img" ]; then
		STAGE_NOTE="cached $h, $(stat -c %s "$img") bytes"
		return 0
	fi
	PATH=$PATH:/usr/sbin:/sbin
	pc_initramfs_tree "$OUT/pc/$rel/root" "$rel" "$d/tree"
	{
		cat "$OUT/initramfs/list"
		pc_initramfs_list "$d/tree"
	} | LC_ALL=C sort -k2,2 -u >"$d/list"
	# As the tiny initramfs (initramfs.sh); the modules are xz already, so the dictionary size matters little.
	"$gen" -t "$SOURCE_DATE_EPOCH" "$d/list" | xz --check=crc32 -9 --lzma2=preset=9,dict=4MiB -T1 -c >"$img.tmp" ||
		die "cannot build the cpio archive from $d/list"
	mv "$img.tmp" "$img"
	size=$(stat -c %s "$img")
	[ "$size" -lt "$PC_INITRAMFS_MAX" ] || die "$img is $size bytes, over the $PC_INITRAMFS_MAX-byte limit: trim initramfs/pc-modules"
	stage_mark pcinitramfs "$h"
	STAGE_NOTE="$size bytes, $(wc -l <"$d/tree/paths") modules"
}

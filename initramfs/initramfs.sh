# shellcheck shell=bash
# Build-host stage: initramfs/init/*.c (musl, static, by initramfs/init/Makefile) + Debian busybox-static
# -> out/initramfs.img.
# Sourced by build.sh, which provides log, die, hash_of, stage_done, stage_mark, OUT, TOP,
# SOURCE_DATE_EPOCH, LIVEUNION_VERSION. Everything the image holds is listed in one place:
# initramfs_list below (the boot-time users of each entry are the init and its rescue shell).

INITRAMFS_BUSYBOX=${INITRAMFS_BUSYBOX:-/bin/busybox}
# The persistence store is checked at boot (init/store_fsck.c) with Debian's e2fsck: the static build
# (package e2fsck-static) is about 0.5 MiB smaller in the image than /sbin/e2fsck with its glibc libraries.
INITRAMFS_E2FSCK=${INITRAMFS_E2FSCK:-/sbin/e2fsck.static}

# initramfs_gen_cpio: the kernel's own gen_init_cpio, from the kernel stage; built from the
# kernel source when that stage did not provide it (e.g. an older kernel stage).
initramfs_gen_cpio() {
	local tool=$OUT/kernel/gen_init_cpio src
	# a pc-only build (kernel/pc.sh) compiles it from the same source tarball
	[ -x "$tool" ] || [ ! -x "$OUT/pc/gen_init_cpio" ] || tool=$OUT/pc/gen_init_cpio
	if [ -x "$tool" ]; then
		printf '%s\n' "$tool"
		return 0
	fi
	src=$(find "$OUT"/kernel -maxdepth 3 -path '*/src-*/usr/gen_init_cpio.c' -print -quit 2>/dev/null || true)
	[ -n "$src" ] || die "no $tool and no kernel source with usr/gen_init_cpio.c under $OUT/kernel: run the kernel stage first"
	tool=$OUT/initramfs/gen_init_cpio
	if [ ! -x "$tool" ] || [ "$src" -nt "$tool" ]; then
		gcc -O2 -o "$tool" "$src" || die "cannot compile $src"
	fi
	printf '%s\n' "$tool"
}

# initramfs_list INIT BUSYBOX: the gen_init_cpio list, sorted by path, all 0:0 with explicit modes.
initramfs_list() {
	local init=$1 busybox=$2 applet
	{
		printf 'dir /bin 0755 0 0\n'
		printf 'dir /dev 0755 0 0\n'
		# The kernel opens /dev/console for PID 1 before devtmpfs exists.
		printf 'nod /dev/console 0600 0 0 c 5 1\n'
		printf 'dir /etc 0755 0 0\n'
		printf 'dir /newroot 0755 0 0\n'
		printf 'dir /proc 0755 0 0\n'
		printf 'dir /run 0755 0 0\n'
		printf 'dir /sys 0755 0 0\n'
		printf 'file /init %s 0755 0 0\n' "$init"
		printf 'file /bin/busybox %s 0755 0 0\n' "$busybox"
		# network boot (init/net.c): busybox udhcpc's lease script
		printf 'file /etc/udhcpc.script %s 0755 0 0\n' "$TOP/initramfs/udhcpc.script"
		initramfs_e2fsck_list
		# Every applet: the rescue shell is where users debug a failed boot, no tool should be missing.
		"$busybox" --list | while IFS= read -r applet; do
			case "$applet" in busybox | '' | */*) continue ;; esac
			printf 'slink /bin/%s busybox 0777 0 0\n' "$applet"
		done
	} | LC_ALL=C sort -k2,2 -u
}

# initramfs_e2fsck_list: /sbin/e2fsck for init/store_fsck.c; a dynamic one brings what ldd names.
initramfs_e2fsck_list() {
	local lib
	printf 'dir /sbin 0755 0 0\n'
	printf 'file /sbin/e2fsck %s 0755 0 0\n' "$INITRAMFS_E2FSCK"
	printf 'file /etc/e2fsck.conf %s 0644 0 0\n' "$TOP/initramfs/e2fsck.conf"
	ldd "$INITRAMFS_E2FSCK" 2>/dev/null | grep -o '/[^ ]*' | sort -u | while IFS= read -r lib; do
		printf 'dir %s 0755 0 0\n' "$(dirname "$lib")"
		printf 'file %s %s 0755 0 0\n' "$lib" "$(readlink -f "$lib")"
	done
}

# initramfs_uapi: out/initramfs/uapi/include, the kernel's user-space API headers (make headers_install) of
# KERNEL_SRC, which the init's musl build includes (musl has none of its own: loop, device-mapper, NBD, the mount
# API, netlink, block ioctls). Made once per kernel source; headers_install needs no configured or built kernel,
# so the pc flavour, which builds no tiny kernel, makes them the same way (from the kernel stage's unpacked tree
# when there is one, else from an unpacked copy of the tarball, removed after).
initramfs_uapi() {
	local u=$OUT/initramfs/uapi id src t=''
	id=$(kernel_src_id)
	if [ -f "$u/include/linux/loop.h" ] && [ "$(cat "$u/source" 2>/dev/null)" = "$id" ]; then
		return 0
	fi
	command -v rsync >/dev/null || need_pkgs rsync
	src=
	if [ -d "$OUT/kernel" ]; then
		src=$(find "$OUT/kernel" -maxdepth 1 -name 'src-*' -type d | sort | head -n 1)
	fi
	if [ -z "$src" ] && [ -d "$KERNEL_SRC" ]; then
		src=$KERNEL_SRC
	elif [ -z "$src" ]; then
		t=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-uapi.XXXXXX")
		tar -xf "$KERNEL_SRC" -C "$t" --strip-components=1 || { rm -rf "$t"; die "cannot unpack $KERNEL_SRC"; }
		src=$t
	fi
	rm -rf "$u.tmp" "$u.build"
	mkdir -p "$u.build"
	if ! make -s -C "$src" O="$u.build" ARCH=x86_64 headers_install INSTALL_HDR_PATH="$u.tmp" >/dev/null; then
		[ -z "$t" ] || rm -rf "$t"
		die "make headers_install failed in $src"
	fi
	[ -z "$t" ] || rm -rf "$t"
	rm -rf "$u" "$u.build"
	printf '%s\n' "$id" >"$u.tmp/source"
	mv "$u.tmp" "$u"
}

# initramfs_build_init DIR: DIR/init through initramfs/init/Makefile, where the C flags are defined, with the kernel's
# headers (initramfs_uapi).
initramfs_build_init() {
	local dir=$1
	make -s -C "$TOP/initramfs/init" O="$dir" UAPI="$OUT/initramfs/uapi/include" VERSION="$LIVEUNION_VERSION" image ||
		die "cannot compile the init (initramfs/init/*.c, with initramfs/init/Makefile)"
}

# shellcheck disable=SC2034 # STAGE_NOTE is read by build.sh after the stage returns
stage_initramfs() {
	local h dir img gen list size
	command -v musl-gcc >/dev/null || need_pkgs musl-tools
	[ -x "$INITRAMFS_BUSYBOX" ] || die "$INITRAMFS_BUSYBOX missing (Debian package busybox-static)"
	[ -x "$INITRAMFS_E2FSCK" ] || need_pkgs e2fsck-static
	dir=$OUT/initramfs
	img=$OUT/initramfs.img
	mkdir -p "$dir"
	gen=$(initramfs_gen_cpio)
	# liveunion/include: the init includes contract.h, shared with the `liveunion` command
	initramfs_uapi
	h=$(printf '%s\n' "$(hash_of "$TOP/initramfs" "$TOP/liveunion/include" "$OUT/initramfs/uapi/include" "$INITRAMFS_BUSYBOX" "$INITRAMFS_E2FSCK" \
		"$gen")" "$SOURCE_DATE_EPOCH" "$LIVEUNION_VERSION" "$(musl-gcc --version | head -1)" \
		"$(zstd --version | head -1)" | sha256sum | cut -c1-16)
	if stage_done initramfs "$h" && [ -f "$img" ]; then
		STAGE_NOTE="cached $h, $(stat -c %s "$img") bytes"
		return 0
	fi
	initramfs_build_init "$dir"
	list=$dir/list
	initramfs_list "$dir/init" "$INITRAMFS_BUSYBOX" >"$list.tmp" || die "cannot write the cpio list"
	mv "$list.tmp" "$list"
	# zstd -19, not xz: 5% larger (1,469,861 against 1,393,248 bytes), unpacked faster by the kernel: to the
	# login prompt 5053 against 5286 ms under TCG (bench/boot --compress, medians of 5; lz4 -l and no compression
	# were about as fast but 1.6 and 3 times the size: every network boot and every ISO carries it). The window is
	# the archive's size at most (under 8 MiB), within what the kernel's zstd decoder takes. -T1: byte-identical.
	"$gen" -t "$SOURCE_DATE_EPOCH" "$list" | zstd -q -19 -T1 -c >"$img.tmp" ||
		die "cannot build the cpio archive from $list"
	mv "$img.tmp" "$img"
	size=$(stat -c %s "$img")
	[ "$size" -lt $((1536 * 1024)) ] || log "  warning: $img is $size bytes, over the 1.5 MiB target"
	log "  $img: $size bytes ($(grep -c '^slink' "$list") applet links)"
	stage_mark initramfs "$h"
	STAGE_NOTE="$size bytes"
}

# shellcheck shell=bash
# Build-host stage: the busybox live root -> out/rootfs/10-base.squashfs.
# The tree is assembled as an ordinary user would (no chown, no mknod): ownership, special modes and
# device nodes come from mksquashfs pseudo-definitions, so the result does not depend on who builds it.

ROOTFS_BUSYBOX=${ROOTFS_BUSYBOX:-/bin/busybox}

rootfs_tree() {
	local t=$1 a dir
	mkdir -p "$t"/{bin,sbin,usr/bin,usr/sbin,usr/lib,etc/rc.d,dev,proc,sys,run,tmp,var/tmp,var/log,root,home,mnt,srv}
	cp -a "$TOP/rootfs/files/." "$t/"
	install -m 0755 "$ROOTFS_BUSYBOX" "$t/bin/busybox"
	# busybox --list-full says where each applet belongs (bin, sbin, usr/bin, usr/sbin).
	"$ROOTFS_BUSYBOX" --list-full | while read -r a; do
		[ "$a" = bin/busybox ] && continue
		dir=$(dirname "$a")
		ln -sf "$(realpath -m --relative-to="/$dir" /bin/busybox)" "$t/$a"
	done
	[ -e "$t/sbin/init" ] || ln -s ../bin/busybox "$t/sbin/init"
	rootfs_liveunion "$t"
	rootfs_hostbins "$t"
	printf '%s\n' "$LIVEUNION_VERSION" >"$t/etc/liveunion-version"
	cat >"$t/usr/lib/os-release" <<-EOT
	NAME="liveunion"
	PRETTY_NAME="liveunion $LIVEUNION_VERSION (busybox live system)"
	ID=liveunion
	VERSION_ID=$LIVEUNION_VERSION
	VERSION="$LIVEUNION_VERSION"
	HOME_URL="file:///usr/share/doc/liveunion"
	EOT
	ln -sf ../usr/lib/os-release "$t/etc/os-release"
	printf 'liveunion %s live system \\n \\l\n\n' "$LIVEUNION_VERSION" >"$t/etc/issue"
	cat >"$t/etc/motd" <<-EOT

	Welcome to liveunion $LIVEUNION_VERSION.
	The root filesystem is a union: read-only layers under a writable upper.
	The stack is in /run/live (plan, medium, layers, upper).

	EOT
}

# rootfs_man: out/liveunion/man/liveunion-boot.7 from the init the initramfs stage built, before a stage's
# hash (a new init with the same keys gives the same page, and the layer is not made again).
rootfs_man() {
	make -s -C "$TOP/liveunion" OUT="$OUT" INIT="$OUT/initramfs/init" man >/dev/null ||
		die "generating liveunion-boot(7) from $OUT/initramfs/init failed"
}

# rootfs_liveunion TREE: the liveunion command (static, musl) and its man pages, liveunion(1) and
# liveunion-boot(7) (generated from the key table of the init the initramfs stage built), as every live root
# (the busybox one and the profiles') carries them.
rootfs_liveunion() {
	local t=$1
	make -s -C "$TOP/liveunion" OUT="$OUT" static >/dev/null || die "building liveunion/ (static, musl) failed"
	install -D -m 0755 "$OUT/liveunion/liveunion.static" "$t/usr/bin/liveunion"
	install -D -m 0644 "$TOP/liveunion/man/liveunion.1" "$t/usr/share/man/man1/liveunion.1"
	install -D -m 0644 "$OUT/liveunion/man/liveunion-boot.7" "$t/usr/share/man/man7/liveunion-boot.7"
}

# Host programs the live root carries, with the shared libraries and the dynamic loader ldd names (and libgcc_s,
# below), where the loader looks without a cache: mksquashfs for `liveunion save` (squashfs-tools), cryptsetup for
# the init to unlock an encrypted store with (it runs it from the mounted layer: cryptsetup-bin).
ROOTFS_HOSTBINS=${ROOTFS_HOSTBINS:-/usr/bin/mksquashfs /sbin/cryptsetup}
rootfs_hostbin_files() { # the binaries, then every library and the loader, resolved, each once
	local b p
	# shellcheck disable=SC2086 # a word list
	printf '%s\n' $ROOTFS_HOSTBINS
	for b in $ROOTFS_HOSTBINS; do
		ldd "$b" | while read -r a _ c _; do
			case "$a $c" in
			*" /"*) p=$c ;;
			/*) p=$a ;;
			*) continue ;; # linux-vdso: in the kernel
			esac
			printf '%s\n' "$p"
		done
	done | sort -u
	# glibc dlopens libgcc_s when a thread exits (pthread_exit unwinds the stack): ldd cannot see it, and
	# without it mksquashfs aborts ("libgcc_s.so.1 must be installed for pthread_exit to work")
	# (awk reads to the end: leaving early would kill ldconfig with SIGPIPE, which pipefail turns into a failed build)
	ldconfig -p | awk '$1 == "libgcc_s.so.1" && /x86-64/ && !n++ { print $NF }'
}
rootfs_hostbins() {
	local t=$1 f n
	n=$(wc -w <<<"$ROOTFS_HOSTBINS")
	mkdir -p "$t/lib/x86_64-linux-gnu" "$t/lib64"
	rootfs_hostbin_files | {
		while [ "$n" -gt 0 ] && read -r f; do
			install -D -m 0755 "$f" "$t$f"
			n=$((n - 1))
		done
		while read -r f; do
			case "$f" in
			*/ld-linux*) install -m 0755 "$(readlink -f "$f")" "$t/lib64/$(basename "$f")" ;;
			*) install -m 0644 "$(readlink -f "$f")" "$t/lib/x86_64-linux-gnu/$(basename "$f")" ;;
			esac
		done
	}
	# they must run in the tree as they will in the live system (chroot needs root; then the loader is asked)
	if [ "$(id -u)" -eq 0 ]; then
		# a real run: its threads exit, which is when a missing libgcc_s shows
		chroot "$t" /usr/bin/mksquashfs /etc /tmp/mksquashfs-check.squashfs -noappend -quiet -no-progress >/dev/null &&
			rm "$t/tmp/mksquashfs-check.squashfs" && chroot "$t" /sbin/cryptsetup --version >/dev/null
	else
		"$t/lib64/ld-linux-x86-64.so.2" --library-path "$t/lib/x86_64-linux-gnu" "$t/usr/bin/mksquashfs" -version >/dev/null &&
			"$t/lib64/ld-linux-x86-64.so.2" --library-path "$t/lib/x86_64-linux-gnu" "$t/sbin/cryptsetup" --version >/dev/null
	fi || die "mksquashfs or cryptsetup does not run in the live root tree $t"
}

# Pseudo-definitions: every file is root-owned (-all-root); these add modes and nodes a user cannot create.
rootfs_pseudo() {
	cat <<-'EOT'
	/dev m 755 0 0
	/dev/console c 600 0 0 5 1
	/dev/null c 666 0 0 1 3
	/tmp m 1777 0 0
	/var/tmp m 1777 0 0
	/root m 700 0 0
	/etc/shadow m 600 0 0
	EOT
}

# shellcheck disable=SC2034 # STAGE_NOTE is read by build.sh after the stage returns
stage_rootfs() {
	local h t mksq
	mapfile -t mksq < <(rootfs_hostbin_files)
	rootfs_man
	h=$(hash_of "$TOP/rootfs/files" "$TOP/rootfs/rootfs.sh" "$TOP/rootfs/squashfs.sh" "$TOP/liveunion" \
		"$OUT/liveunion/man/liveunion-boot.7" "$ROOTFS_BUSYBOX" "$TOP/VERSION" "${mksq[@]}")
	if stage_done rootfs "$h" && [ -f "$OUT/rootfs/10-base.squashfs" ]; then
		STAGE_NOTE="cached $h"
		return 0
	fi
	t=$OUT/rootfs/tree
	rm -rf "$t"
	mkdir -p "$t"
	rootfs_tree "$t"
	rootfs_pseudo >"$OUT/rootfs/pseudo"
	# zstd, not xz: it decompresses several times faster; under TCG /init to rcS went from 0.69 s to 0.43 s.
	squashfs_make "$t" "$OUT/rootfs/10-base.squashfs" -comp zstd -Xcompression-level 19 -b 256K -all-root \
		-pf "$OUT/rootfs/pseudo" || die "mksquashfs of $t failed"
	stage_mark rootfs "$h"
	STAGE_NOTE=$(size_text "$OUT/rootfs/10-base.squashfs")
}

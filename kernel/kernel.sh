# shellcheck shell=bash
# Build-host stage: Debian kernel source + kernel/patches/series + configs/kernel/*.config -> out/kernel/bzImage.
# Sourced by build.sh, which provides log, die, hash_of, stage_done, stage_mark, OUT, TOP, JOBS.

KERNEL_SRC=${KERNEL_SRC:-/usr/src/linux-source-6.12.tar.xz}

# kernel_src_id: what identifies the source without reading 1.5 GB of tree.
kernel_src_id() {
	if [ -f "$KERNEL_SRC" ]; then
		printf 'tarball %s %s\n' "$(basename "$KERNEL_SRC")" "$(stat -c '%s %Y' "$KERNEL_SRC")"
	elif [ -d "$KERNEL_SRC" ]; then
		printf 'tree %s %s %s\n' "$KERNEL_SRC" "$(make -s -C "$KERNEL_SRC" kernelversion 2>/dev/null)" \
			"$(git -C "$KERNEL_SRC" describe --always --dirty 2>/dev/null || echo nogit)"
	else
		die "KERNEL_SRC=$KERNEL_SRC is neither a tarball nor a directory (install linux-source-6.12 or point KERNEL_SRC at a kernel tree)"
	fi
}

# kernel_apply_patches DIR: every patch of the series, in order; the first that does not apply stops the build.
kernel_apply_patches() {
	local dir=$1 p out files
	while read -r p; do
		case "$p" in '' | '#'*) continue ;; esac
		[ -f "$TOP/kernel/patches/$p" ] || die "kernel/patches/series names $p, which does not exist"
		if ! out=$(patch -d "$dir" -p1 --dry-run --batch --forward <"$TOP/kernel/patches/$p" 2>&1); then
			files=$(printf '%s\n' "$out" | sed -n -e 's/^checking file //p' -e "s/^can't find file to patch.*/(file missing)/p" | tr '\n' ' ')
			printf '%s\n' "$out" | grep -E 'FAILED|can.t find|Reversed|malformed' >&2 || true
			die "patch $p does not apply to $KERNEL_SRC (files: ${files:-unknown}); see the lines above"
		fi
		patch -d "$dir" -p1 --batch --forward --quiet <"$TOP/kernel/patches/$p" >/dev/null || die "patch $p failed while applying"
		log "  applied $p"
	done <"$TOP/kernel/patches/series"
}

# kernel_check_config: every option a fragment sets must survive olddefconfig with that value.
# shellcheck disable=SC2094 # the config is only read, never written here
kernel_check_config() {
	local cfg=$1 frag line key want lost=()
	for frag in "$TOP"/configs/kernel/*.config; do
		while IFS= read -r line; do
			case "$line" in
			CONFIG_*=*) key=${line%%=*} want=${line#*=} ;;
			'# CONFIG_'*' is not set') key=${line#\# } key=${key%% *} want=n ;;
			*) continue ;;
			esac
			if [ "$want" = n ]; then
				grep -q "^$key=" "$cfg" && lost+=("$key=n (is $(grep "^$key=" "$cfg" | cut -d= -f2), from $(basename "$frag"))")
			else
				grep -qx "$key=$want" "$cfg" || lost+=("$key=$want (from $(basename "$frag"); a dependency is missing)")
			fi
		done <"$frag"
	done
	if [ ${#lost[@]} -gt 0 ]; then
		printf '  not set after olddefconfig: %s\n' "${lost[@]}" >&2
		die "${#lost[@]} kernel option(s) asked for by configs/kernel/ did not end up set"
	fi
}

# shellcheck disable=SC2034 # STAGE_NOTE is read by build.sh after the stage returns
stage_kernel() {
	local id h src build mk
	id=$(kernel_src_id)
	# The builtin trusted keyring holds the build's Secure Boot certificate (signed layers): another key, another kernel.
	sb_keys
	h=$(printf '%s\n%s\n%s\n' "$id" "$(hash_of "$TOP/kernel/patches" "$TOP/configs/kernel" "$TOP/kernel/kernel.sh")" \
		"$(sb_fingerprint)" | sha256sum | cut -c1-16)
	if stage_done kernel "$h" && [ -f "$OUT/kernel/bzImage" ]; then
		STAGE_NOTE="cached $h"
		return 0
	fi
	# The patched source is keyed by source and patches only, so a config change rebuilds incrementally.
	local sh
	sh=$(printf '%s\n%s\n' "$id" "$(hash_of "$TOP/kernel/patches")" | sha256sum | cut -c1-16)
	src=$OUT/kernel/src-$sh
	build=$OUT/kernel/build-$sh
	if [ ! -d "$src" ]; then
		rm -rf "$OUT"/kernel/src-* "$OUT"/kernel/build-* "$src.tmp"
		mkdir -p "$src.tmp"
		log "  unpacking $KERNEL_SRC"
		if [ -f "$KERNEL_SRC" ]; then
			tar -xf "$KERNEL_SRC" -C "$src.tmp" --strip-components=1 || die "cannot unpack $KERNEL_SRC"
		else
			cp -a "$KERNEL_SRC"/. "$src.tmp"/ || die "cannot copy $KERNEL_SRC"
			rm -rf "$src.tmp/.git"
		fi
		kernel_apply_patches "$src.tmp"
		mv "$src.tmp" "$src"
	fi
	mkdir -p "$build"
	mk=(make -s -C "$src" O="$build" ARCH=x86_64 -j"$JOBS"
		KBUILD_BUILD_TIMESTAMP="@$SOURCE_DATE_EPOCH" KBUILD_BUILD_USER=liveunion
		KBUILD_BUILD_HOST=liveunion KBUILD_BUILD_VERSION=1)
	# Config is regenerated every time from base + fragments; kconfig only touches what changed.
	"${mk[@]}" tinyconfig >/dev/null || die "make tinyconfig failed"
	(cd "$build" && "$src/scripts/kconfig/merge_config.sh" -m -O "$build" "$build/.config" "$TOP"/configs/kernel/*.config >/dev/null) ||
		die "merge_config.sh failed"
	# A fixed path, so that only the certificate's bytes (not its name) change when the key does.
	cmp -s "$SB_CERT_PEM" "$build/liveunion-trusted.pem" || cp "$SB_CERT_PEM" "$build/liveunion-trusted.pem" ||
		die "cannot copy $SB_CERT_PEM"
	"$src/scripts/config" --file "$build/.config" --set-str SYSTEM_TRUSTED_KEYS "$build/liveunion-trusted.pem" ||
		die "scripts/config --set-str SYSTEM_TRUSTED_KEYS failed"
	"${mk[@]}" olddefconfig >/dev/null || die "make olddefconfig failed"
	kernel_check_config "$build/.config"
	log "  compiling (make -j$JOBS bzImage)"
	"${mk[@]}" bzImage >"$build/make.log" 2>&1 || { tail -n 30 "$build/make.log" >&2; die "kernel build failed (log: $build/make.log)"; }
	cp "$build/arch/x86/boot/bzImage" "$OUT/kernel/bzImage.tmp" && mv "$OUT/kernel/bzImage.tmp" "$OUT/kernel/bzImage"
	cp "$build/.config" "$OUT/kernel/config"
	# The initramfs stage packs its cpio with the kernel's own generator: no root needed for /dev/console.
	cc -O2 -o "$OUT/kernel/gen_init_cpio" "$src/usr/gen_init_cpio.c" || die "cannot compile usr/gen_init_cpio.c"
	stage_mark kernel "$h"
	STAGE_NOTE="$(du -k "$OUT/kernel/bzImage" | cut -f1) KiB"
}

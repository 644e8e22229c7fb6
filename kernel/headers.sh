# shellcheck shell=bash
# Build host: the kernel's UAPI headers (`make headers_install`) from the kernel stage's patched source, into
# out/kernel/headers, for the init (initramfs/initramfs.sh compiles it with -isystem out/kernel/headers/include):
# musl brings no linux/ headers, and these are the very kernel's. Not part of stage_kernel, whose cache key is
# kernel.sh: making them never rebuilds the kernel. Remade when the source changes (.source names it).

kernel_headers() {
	local src dst=$OUT/kernel/headers
	src=$(find "$OUT/kernel" -maxdepth 1 -name 'src-*' -type d -print -quit 2>/dev/null)
	# without a source tree (an OUT given only the kernel stage's outputs) the headers there are the kernel's
	if [ -d "$dst/include/linux" ] && { [ -z "$src" ] || [ "$(cat "$dst/.source" 2>/dev/null)" = "$(basename "$src")" ]; }; then
		return 0
	fi
	[ -n "$src" ] || die "no kernel source under $OUT/kernel for the init's kernel headers: run the kernel stage first"
	rm -rf "$dst" "$OUT/kernel/headers-build"
	make -s -C "$src" O="$OUT/kernel/headers-build" ARCH=x86_64 -j"${JOBS:-1}" INSTALL_HDR_PATH="$dst" headers_install >/dev/null ||
		die "make headers_install in $src failed"
	rm -rf "$OUT/kernel/headers-build"
	basename "$src" >"$dst/.source"
}

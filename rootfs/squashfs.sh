# shellcheck shell=bash
# Build host: the one way a squashfs layer is made (the rootfs and profile stages, iso-with's layer directories,
# the conformance test layer). Sourced by build.sh and tests/conformance/mklayer.sh; needs SOURCE_DATE_EPOCH.

# squashfs_make SRC OUT [MKSQUASHFS-OPTION...]: OUT from the tree SRC, reproducibly: every time is
# SOURCE_DATE_EPOCH, zstd in 256 KiB blocks unless the options name a -comp. Written as OUT.tmp and renamed,
# so a failure leaves no half file under the final name. mksquashfs's own errors go to stderr.
squashfs_make() {
	local src=$1 out=$2 comp=(-comp zstd -b 256K) o
	shift 2
	for o in "$@"; do [ "$o" = -comp ] && comp=(); done
	rm -f "$out.tmp"
	# mksquashfs refuses -mkfs-time/-all-time while SOURCE_DATE_EPOCH is set: the times are given explicitly.
	if ! env -u SOURCE_DATE_EPOCH mksquashfs "$src" "$out.tmp" -noappend -quiet -no-progress "${comp[@]}" "$@" \
		-mkfs-time "$SOURCE_DATE_EPOCH" -all-time "$SOURCE_DATE_EPOCH" >/dev/null; then
		rm -f "$out.tmp"
		return 1
	fi
	mv "$out.tmp" "$out"
}

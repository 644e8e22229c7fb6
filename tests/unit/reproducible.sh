#!/usr/bin/env bash
# summary: the same tree and SOURCE_DATE_EPOCH give a bit-identical ISO: initramfs, rootfs and ISO stages run twice
# from scratch in two different directories (same kernel); another SOURCE_DATE_EPOCH gives another ISO
# The kernel is taken from the build (a kernel build costs minutes; its own reproducibility rests on
# KBUILD_BUILD_TIMESTAMP/USER/HOST from SOURCE_DATE_EPOCH, see kernel/kernel.sh).
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

if [ ! -f "$OUT/kernel/bzImage" ] || [ ! -f "$OUT/stamps/kernel" ]; then
	bad "kernel-built (no $OUT/kernel/bzImage: run ./build.sh first)"
	finish
fi
sde=${SOURCE_DATE_EPOCH:-$(git -C "$TOP" log -1 --format=%ct -- VERSION 2>/dev/null)}
sde=${sde:-1767225600}
W=$(mktemp -d /tmp/liveunion-repro.XXXXXX)
at_exit "rm -rf '$W'"

# build DIR EPOCH: every stage but the kernel, from nothing, into DIR. The Secure Boot key is an input like the
# tree (made once per checkout, iso/sb.sh): both builds sign with the build's; the pinned packages are not fetched again.
build() {
	local d=$1 key=$OUT/sb/key
	mkdir -p "$d/kernel" "$d/stamps" "$d/sb"
	cp -a "$OUT/sb/debs" "$d/sb/"
	cp "$OUT/kernel/bzImage" "$d/kernel/"
	[ -x "$OUT/kernel/gen_init_cpio" ] && cp "$OUT/kernel/gen_init_cpio" "$d/kernel/"
	# the kernel's headers (make headers_install of the same source) are an input like the kernel
	mkdir -p "$d/initramfs" && cp -a "$OUT/initramfs/uapi" "$d/initramfs/"
	# the kernel stamp records the epoch it was built with: this one is rewritten for the epoch asked
	printf '%s %s\n' "$(cut -d' ' -f1 "$OUT/stamps/kernel")" "$2" >"$d/stamps/kernel"
	OUT=$d SOURCE_DATE_EPOCH=$2 SB_KEY=$key/db.key SB_CERT=$key/db.crt "$TOP/build.sh" >"$d.log" 2>&1
}

if build "$W/a" "$sde"; then ok first-build; else bad "first-build (log: $(tail -n 5 "$W/a.log"))"; finish; fi
if build "$W/second-build-elsewhere" "$sde"; then ok second-build; else bad "second-build ($(tail -n 5 "$W/second-build-elsewhere.log"))"; finish; fi
b=$W/second-build-elsewhere
if cmp -s "$W/a/liveunion.iso" "$b/liveunion.iso"; then
	ok iso-bit-identical
else
	bad iso-bit-identical
	for f in initramfs.img rootfs/10-base.squashfs; do
		cmp -s "$W/a/$f" "$b/$f" || echo "#   differs: $f"
	done
	(cd "$W/a/iso" && find . -type f) | while read -r f; do # tree/ and esp/fs/: every file of both file systems
		cmp -s "$W/a/iso/$f" "$b/iso/$f" || echo "#   differs: iso/$f"
	done
fi
if cmp -s "$W/a/SHA256SUMS" "$b/SHA256SUMS"; then ok sums-identical; else bad sums-identical; fi
# The other side: the dates really come from SOURCE_DATE_EPOCH (a build that ignored it would pass the above
# only when both builds fell in the same second).
if build "$W/c" $((sde + 86400)); then
	if cmp -s "$W/a/liveunion.iso" "$W/c/liveunion.iso"; then bad other-epoch-other-iso; else ok other-epoch-other-iso; fi
	d=$(xorriso -indev "$W/c/liveunion.iso" -pvd_info 2>/dev/null | sed -n 's/^Creation Time: *//p')
	# the volume dates are the build date (the two digits after the seconds tell builds of one second apart)
	if [ "${d:0:14}" = "$(date -u -d "@$((sde + 86400))" +%Y%m%d%H%M%S)" ]; then ok iso-date-is-epoch; else bad "iso-date-is-epoch (got '$d')"; fi
else
	bad "other-epoch-build ($(tail -n 5 "$W/c.log"))"
fi
finish

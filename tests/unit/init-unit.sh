#!/usr/bin/env bash
# Host unit tests of the initramfs init's pure parts (command line, plan, medium matching, module aliases, network boot's parsers, the
# store's meta file), of disk.c (partition tables, sysfs listing) against a fake sysfs and of the store's readers of
# untrusted disks (superblocks, boot sectors, block maps), of live.fetch='s downloads against a stand-in wget and of
# verity.c's reading of a layer's files; built with gcc, run plain and under ASan+UBSan.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
B=$OUT/tests/init-unit
SRC=$TOP/initramfs/init
mkdir -p "$B"
# the init's own flags (its Makefile defines them), with debug information for the tests
read -ra LIVE_CFLAGS <<<"$(make -s -C "$SRC" cflags)"
CFLAGS=("${LIVE_CFLAGS[@]}" -g -I"$SRC")

# live.fetch='s downloads (init-net-test) run this stand-in for busybox wget (-q -c|-q -O DEST URL): http://t/MODE/
# serves an image well (good), trickles the MANIFEST a byte every 0.3 s (trickle), sends it without end (flood),
# or serves the MANIFEST and trickles its layer (slowlayer). Each ends by itself within 30 s (an init that does not
# stop it must not leave it running).
cat >"$B/fake-wget" <<'EOF'
#!/bin/sh
exec </dev/null >/dev/null
dest=$4 i=0
case $5 in
*/good/live/MANIFEST) printf '5 10-base.squashfs\n' >"$dest" ;;
*/good/live/10-base.squashfs) printf hello >"$dest" ;;
*/slowlayer/live/MANIFEST) printf '100 10-base.squashfs\n' >"$dest" ;;
*/trickle/live/MANIFEST | */slowlayer/live/10-base.squashfs)
	while [ $i -lt 99 ] && printf x >>"$dest"; do i=$((i + 1)) && sleep 0.3; done ;;
*/flood/live/MANIFEST) while [ $i -lt 600 ] && head -c 4096 /dev/zero >>"$dest"; do i=$((i + 1)) && sleep 0.05; done ;;
*) echo "wget: server returned error: HTTP/1.1 404 Not Found" >&2 && exit 1 ;;
esac
EOF
chmod +x "$B/fake-wget"

for t in cmdline plan disk store modalias meta net verity; do
	case $t in # what each test links: the planning parts, disk.c; with what they log through
	modalias) srcs=("$SRC/modalias.c" "$SRC/cmdline.c") ;;
	meta) srcs=("$SRC/meta.c" "$SRC/text.c") ;;
	net) srcs=("$SRC/netcfg.c" "$SRC/net.c" "$SRC/fetch.c" "$SRC/nbd.c" "$SRC/progress.c" "$SRC/modload.c" "$SRC/coldplug.c"
		"$SRC/modalias.c" "$SRC/cmdline.c" "$SRC/text.c" "$SRC/util.c" "$SRC/log.c") ;;
	disk) srcs=("$SRC/disk.c" "$SRC/text.c" "$SRC/util.c" "$SRC/log.c") ;;
	verity) srcs=("$SRC/verity.c" "$SRC/verity_files.c" "$SRC/loop.c" "$SRC/disk.c" "$SRC/progress.c" "$SRC/text.c" "$SRC/util.c" "$SRC/log.c") ;;
	store) srcs=("$SRC/store_find.c" "$SRC/store_image.c" "$SRC/store_fsck.c" "$SRC/disk.c" "$SRC/loop.c" "$SRC/luks.c" "$SRC/ask.c" "$SRC/progress.c"
		"$SRC/modload.c" "$SRC/coldplug.c" "$SRC/modalias.c" "$SRC/cmdline.c" "$SRC/text.c" "$SRC/util.c" "$SRC/log.c") ;;
	*) srcs=("$SRC/cmdline.c" "$SRC/plan.c" "$SRC/plan_print.c" "$SRC/layers.c" "$SRC/paths.c" "$SRC/pathlist.c" "$SRC/iso9660.c" "$SRC/netcfg.c" "$SRC/text.c"
		"$SRC/util.c" "$SRC/log.c") ;;
	esac
	for mode in plain asan; do
		extra=()
		[ "$t" = net ] && extra=("-DWGET=\"$B/fake-wget\"")
		[ "$mode" = asan ] && extra+=('-fsanitize=address,undefined' -fno-sanitize-recover=all -fno-omit-frame-pointer)
		bin=$B/init-$t-test-$mode
		if ! gcc "${CFLAGS[@]}" "${extra[@]}" -o "$bin" "$TOP/tests/unit/init-$t-test.c" "${srcs[@]}"; then
			bad "build init-$t-test ($mode)"
			continue
		fi
		rc=0
		out=$(ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$bin" 2>&1) || rc=$?
		summary=$(printf '%s\n' "$out" | tail -1)
		if [ "$rc" -eq 0 ] && [[ $summary =~ ^([0-9]+)\ passed,\ 0\ failed$ ]]; then
			T_PASS=$((T_PASS + BASH_REMATCH[1]))
			echo "ok init-$t-test ($mode): $summary"
		else
			# a crash (sanitizer report) counts as one failure on top of any failed checks
			[[ $summary =~ ^[0-9]+\ passed,\ ([0-9]+)\ failed$ ]] && T_FAIL=$((T_FAIL + BASH_REMATCH[1]))
			printf '%s\n' "$out"
			bad "init-$t-test ($mode), exit $rc"
		fi
	done
done

# The whole init must also build for the host (it is how init-stack.sh runs it) and with musl.
if make -s -C "$SRC" O="$B" host && "$B/init-host" --help-keys >"$B/keys.txt" &&
	[ "$(grep -c '^live\.' "$B/keys.txt")" -eq "$(grep -c '^	\[K_[A-Z]*\] = {' "$SRC/cmdline.c")" ]; then
	ok "init builds on the host; --help-keys lists every key of the table"
else
	bad "host build of the init or --help-keys"
fi
# musl has no kernel headers: the image's build takes the kernel source's (make headers_install, by the initramfs stage)
uapi=$OUT/initramfs/uapi/include
if command -v musl-gcc >/dev/null; then
	check "the initramfs stage installed the kernel's headers ($uapi; ./build.sh makes them)" test -f "$uapi/linux/loop.h"
	check "init builds with musl-gcc -static (the image's recipe)" make -s -C "$SRC" O="$B" UAPI="$uapi" image
else
	skip musl-build "musl-gcc missing (apt-get install -y musl-tools): the init's musl build was not tried"
fi
finish

#!/usr/bin/env bash
# liveunion build entry point (runs on the build host).
#   ./build.sh            build out/liveunion.iso and out/SHA256SUMS
#   ./build.sh test       build, then run every test (host unit tests and qemu scenarios)
#   ./build.sh usb [--persist-size SIZE] [--file [--exfat]] [-o IMAGE] [--device /dev/sdX]
#                         build, then a USB stick image: the ISO + a persistence partition (iso/mkusb.sh)
#   ./build.sh usb --slots [--persist-size SIZE] [-o IMAGE]    an A/B stick: two system slots and a store (iso/slots.sh)
#   ./build.sh usb --update STICK [--iso NEW] [--tries N] | --rollback STICK | --status STICK
#                         update an A/B stick (image or device) in place: its inactive slot, then the switch
#   ./build.sh netboot [--profile NAME] -o DIR [--uki] [--url URL[,URL...]]
#                         build, then a tree for network boot: iPXE, the image's kernel, initramfs, layers and ISO
#                         under a name that is the hash of their content (iso/netboot.sh; docs/netboot.md);
#                         --uki (implied by ISO_UKI=1): a signed UKI for UEFI HTTP boot whose live.fetch= is --url
#   ./build.sh serve DIR --interface IFACE [--dhcp-range A,B] [--boot fetch|nbd] ...
#                         serve such a tree: dnsmasq (proxyDHCP, TFTP), nginx, nbd-server (iso/serve.sh --help)
#   ./build.sh check [--iso FILE] [--profile NAME] [options] SCENARIO...
#                         boot-and-modify scenarios against an ISO (default: the one this command builds); a
#                         profile's own configs/profiles/NAME.tests/*.sh when none is named (docs/testing.md)
#   ./build.sh deps       only install the Debian packages the build and the tests need
#   ./build.sh iso-with ISO [LAYER...] another ISO: the built kernel, initramfs, 10-base and LAYER... (tests)
#   ./build.sh layer DIR -o NN-name.squashfs [--sign]
#                         a layer to add later: squashfs, .verity, .roothash and with --sign .roothash.p7s, the root
#                         hash signed with SB_KEY; for the 10-base of the last built ISO (docs/secure-boot.md)
#   ./build.sh dracut-module [--install [ROOT]]
#                         the dracut module 50liveunion -> out/dracut/50liveunion; --install copies it into
#                         ROOT/usr/lib/dracut/modules.d/ (default: this system); then dracut --add liveunion (docs/dracut.md)
#   ./build.sh clean      remove out/, except this checkout's Secure Boot key (out/sb/key: a machine that enrolled it
#                         keeps trusting the next build)
#   ./build.sh --profile NAME [build|test [PATTERN]|check [SCENARIO...]]   a profile (configs/profiles/NAME.conf, e.g. debian, kiosk) on the
#                         tiny or the pc kernel (its kernel= key) -> out/liveunion-NAME.iso; needs root (debootstrap); see docs/profiles.md
# Environment: KERNEL_SRC (tarball or tree), SOURCE_DATE_EPOCH, OUT (default ./out), JOBS; SB_KEY and SB_CERT (the
#   Secure Boot key and certificate that sign what we build; default: one made once under out/sb/key), ISO_UKI=1
#   (UEFI boots signed unified kernel images through systemd-boot, no rescue entry and live.panic unless
#   ISO_UKI_RESCUE=1; see docs/secure-boot.md); ISO_MENU_TIMEOUT (seconds
#   the boot menus wait, default 2: time to press a key for toram or the rescue shell; 0 boots at once); ISO_USB_DELAY
#   (usb_storage.delay_use= on the menus: a USB disk's settle time, default 100ms; the kernel's own default is 1);
#   ISO_BASE_LAYER (iso-with: another 10-base, e.g. out/profiles/debian/10-base.squashfs), PROFILE_CACHE (default out/cache),
#   DEBOOTSTRAP_TIMEOUT (seconds, default 1800); tests: TEST_TIMEOUT (seconds per test, default 1200).
set -euo pipefail
export LC_ALL=C
umask 022

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$TOP/out}
JOBS=${JOBS:-$(nproc)}
LIVEUNION_VERSION=$(cat "$TOP/VERSION")
export TOP OUT JOBS LIVEUNION_VERSION

# Reproducibility: every timestamp in every artefact comes from here.
# Default: the commit that last set VERSION, so ordinary commits do not rebuild every stage.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git -C "$TOP" log -1 --format=%ct -- VERSION 2>/dev/null || true)
	SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600}
fi
export SOURCE_DATE_EPOCH

BUILD_PKGS=(linux-source-6.12 build-essential bc flex bison libelf-dev libssl-dev cpio xz-utils zstd rsync
	busybox-static musl-tools squashfs-tools xorriso isolinux syslinux syslinux-common
	mtools dosfstools e2fsprogs exfatprogs fdisk cryptsetup-bin sbsigntool openssl faketime)
TEST_PKGS=(qemu-system-x86 qemu-utils ovmf ipxe-qemu curl shellcheck clang clang-format libclang-rt-14-dev python3 attr exfat-fuse mandoc
	man-db groff-base fusefat grub-pc-bin grub-efi-amd64-bin grub-common netpbm
	grub-rescue-pc debhelper dpkg-dev) # grub-rescue-pc: an ISO not ours for liveunion-check (tests/qemu/check-foreign-iso.sh);
# debhelper, dpkg-dev: the host tools' .debs (debian/, tests/unit/debian-package.sh)

log() { printf '%s\n' "liveunion: $*" >&2; }
die() { printf '%s\n' "liveunion: ${STAGE:+$STAGE: }error: $*" >&2; exit 1; }

# need_pkgs PKG...: install what is missing when root, else print the exact command and stop.
need_pkgs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	local cmd="apt-get install -y --no-install-recommends ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		die "missing Debian packages: ${missing[*]}; run as root: apt-get update && $cmd"
	fi
	log "installing missing Debian packages: ${missing[*]}"
	log "running: apt-get update && $cmd"
	DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive $cmd >&2 || die "could not install: ${missing[*]}"
}

# hash_of FILE|DIR...: one sha256 over names and contents, stable across checkouts and output directories
# (names are relative to OUT or TOP: the ISO's UUID comes from such a hash, so a path in it would make the
# ISO depend on where it was built).
hash_of() {
	local f n
	for f in "$@"; do
		n=${f#"$OUT"/} && n=${n#"$TOP"/}
		if [ -d "$f" ]; then
			(cd "$f" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
		elif [ -e "$f" ]; then
			printf '%s  %s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" "$n"
		else
			printf 'absent %s\n' "$n"
		fi
	done | sha256sum | cut -c1-16
}

# size_text FILE: its size for a person (1.3MiB), by numfmt.
size_text() { numfmt --to=iec-i --suffix=B --format=%.1f "$(stat -c %s "$1")"; }

# A stage is skipped when its stamp records the same input hash and its outputs exist.
# Every artefact embeds SOURCE_DATE_EPOCH, so it is part of every stage's key.
stage_done() { [ -f "$OUT/stamps/$1" ] && [ "$(cat "$OUT/stamps/$1")" = "$2 $SOURCE_DATE_EPOCH" ]; }
stage_mark() { mkdir -p "$OUT/stamps"; printf '%s\n' "$2 $SOURCE_DATE_EPOCH" >"$OUT/stamps/$1"; }

STAGES=(kernel initramfs rootfs iso)
ISO_NAME=liveunion.iso SUMS=SHA256SUMS
PROFILE_PKGS=(debootstrap x11-apps netpbm) # x11-apps, netpbm: the kiosk's hidden cursor (xcursorgen, pnmtopng)
# shellcheck source=rootfs/squashfs.sh
. "$TOP/rootfs/squashfs.sh"
# shellcheck source=kernel/kernel.sh
. "$TOP/kernel/kernel.sh"
# shellcheck source=kernel/pc.sh
. "$TOP/kernel/pc.sh"
# shellcheck source=initramfs/initramfs.sh
. "$TOP/initramfs/initramfs.sh"
# shellcheck source=initramfs/pc.sh
. "$TOP/initramfs/pc.sh"
# shellcheck source=dracut/dracut.sh
. "$TOP/dracut/dracut.sh"
# shellcheck source=rootfs/rootfs.sh
. "$TOP/rootfs/rootfs.sh"
# shellcheck source=iso/iso.sh
. "$TOP/iso/iso.sh"
# shellcheck source=iso/netboot.sh
. "$TOP/iso/netboot.sh"
# shellcheck source=iso/sb.sh
. "$TOP/iso/sb.sh"
# shellcheck source=rootfs/layer.sh
. "$TOP/rootfs/layer.sh"
# shellcheck source=rootfs/profile.sh
. "$TOP/rootfs/profile.sh"
# shellcheck source=rootfs/debian.sh
. "$TOP/rootfs/debian.sh"
# shellcheck source=rootfs/kiosk.sh
. "$TOP/rootfs/kiosk.sh"

# build_lock: two builds in one OUT would compile into the same kernel tree, or write the same test ISO, at once
# (tests/run runs scenarios side by side): the second one waits. The lock is fd $lock until it is closed.
build_lock() {
	mkdir -p "$OUT"
	exec {lock}>"$OUT/.build.lock"
	if ! flock -n "$lock"; then
		log "another build is running in $OUT; waiting for it to finish"
		flock "$lock" || die "cannot lock $OUT/.build.lock"
	fi
}

run_stages() {
	local i=0 s t0 t1
	[ "$ISO_UKI" != 1 ] || sb_uki_needs_verity ISO_UKI=1
	build_lock
	for s in "${STAGES[@]}"; do
		i=$((i + 1))
		STAGE=$s
		log "[$i/${#STAGES[@]}] $s ..."
		t0=$(date +%s.%N)
		"stage_$s"
		t1=$(date +%s.%N)
		log "[$i/${#STAGES[@]}] $s done in $(printf '%.1f' "$(echo "$t1 - $t0" | bc)")s${STAGE_NOTE:+ ($STAGE_NOTE)}"
		STAGE_NOTE=
	done
	STAGE=
	# The lock ends with the stages: `test` execs tests/run next, whose profile scenarios run ./build.sh
	# --profile; an inherited lock made them wait for it for ever (CI ran out of time there).
	exec {lock}>&-
	(cd "$OUT" && sha256sum "$ISO_NAME" >"$SUMS")
	log "built $OUT/$ISO_NAME ($(size_text "$OUT/$ISO_NAME")); $(cat "$OUT/$SUMS")"
}

STAGE=
STAGE_NOTE=
ISO_WORK=$OUT/iso
SERVE_PKGS=(dnsmasq-base nginx-light nbd-server)
# what liveunion-check needs to boot an ISO and read what it left: qemu, UEFI firmware, the ISO's menu (xorriso),
# screenshots (netpbm), stick images and their stores (e2fsprogs, mtools, dosfstools, fdisk)
CHECK_PKGS=(qemu-system-x86 qemu-utils ovmf xorriso python3 netpbm e2fsprogs mtools dosfstools fdisk bc)
# netboot's and check's own --profile NAME goes first, where every command takes it.
if [ "${1:-}" = netboot ] || [ "${1:-}" = check ]; then
	for ((i = 2; i < $#; i++)); do
		if [ "${!i}" = --profile ]; then
			j=$((i + 1))
			set -- --profile "${!j}" "${@:1:i-1}" "${@:j+1}"
			break
		fi
	done
fi
if [ "${1:-}" = --profile ]; then
	[ $# -ge 2 ] || die "usage: ./build.sh --profile NAME [build|test [PATTERN]]"
	profile_load "$2"
	case "${3:-build}" in build | test | netboot | check) ;; *) die "--profile $2 takes build, test, netboot or check, not '$3'" ;; esac
	CHECK_PROFILE=$2
	ISO_WORK=$OUT/profiles/$2/iso
	# The shared stages, then the profile's layers and ISO in place of the busybox root's. The pc flavour
	# needs no tiny kernel: Debian's, the init (initramfs stage) with its modules, then the profile.
	STAGES=(kernel initramfs profile)
	if [ "$PFLAVOUR" = pc ]; then
		STAGES=(pckernel initramfs pcinitramfs profile)
		BUILD_PKGS+=("${PC_PKGS[@]}")
	fi
	ISO_NAME=liveunion-$2.iso SUMS=SHA256SUMS-$2
	BUILD_PKGS+=("${PROFILE_PKGS[@]}")
	shift 2
	[ $# -gt 0 ] || set -- build
fi
case "${1:-build}" in
build)
	need_pkgs "${BUILD_PKGS[@]}"
	run_stages
	;;
test)
	shift
	# the network boot scenario runs netboot's and serve's own packages
	need_pkgs "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}" "${NETBOOT_PKGS[@]}" "${SERVE_PKGS[@]}"
	run_stages
	exec "$TOP/tests/run" "$@"
	;;
check)
	# liveunion-check (tests/check/; docs/testing.md): SCENARIO... against --iso FILE, or the ISO this command builds
	# (a profile's: with no SCENARIO, its configs/profiles/NAME.tests/*.sh, logged in as its user)
	shift
	check_args=() check_iso='' check_scenarios=0
	while [ $# -gt 0 ]; do
		case "$1" in
		--iso) check_iso=${2:?--iso needs a file} && check_args+=(--iso "$2") && shift ;;
		--out | --login | --login-prompt | --timeout) check_args+=("$1" "${2:?$1 needs a value}") && shift ;;
		-*) check_args+=("$1") ;;
		*) check_args+=("$1") && check_scenarios=$((check_scenarios + 1)) ;;
		esac
		shift
	done
	need_pkgs "${CHECK_PKGS[@]}"
	if [ -z "$check_iso" ]; then
		need_pkgs "${BUILD_PKGS[@]}"
		run_stages
		check_args=(--iso "$OUT/$ISO_NAME" "${check_args[@]}")
	fi
	if [ -n "${CHECK_PROFILE:-}" ]; then
		# the Debian-based profiles log in as their live user (root has no password), then sudo
		[ "${PCONF[rootfs]:-${PCONF[base.rootfs]:-}}" != debootstrap ] ||
			check_args=(--login "${PCONF[user]:-${PCONF[base.user]:-live}}" "${check_args[@]}")
		if [ "$check_scenarios" -eq 0 ]; then
			compgen -G "$TOP/configs/profiles/$CHECK_PROFILE.tests/*.sh" >/dev/null ||
				die "check: no SCENARIO given and no configs/profiles/$CHECK_PROFILE.tests/*.sh"
			check_args+=("$TOP/configs/profiles/$CHECK_PROFILE.tests/"*.sh)
		fi
	fi
	exec "$TOP/tests/check/liveunion-check" "${check_args[@]}"
	;;
usb)
	shift
	need_pkgs "${BUILD_PKGS[@]}"
	run_stages
	exec bash "$TOP/iso/mkusb.sh" "$@"
	;;
netboot)
	shift
	nb_dir=
	while [ $# -gt 0 ]; do
		case "$1" in
		-o) nb_dir=${2:?-o needs a directory}; shift 2 ;;
		--uki) NETBOOT_UKI=1; shift ;;
		--url) NETBOOT_URL=${2:?--url needs http://SERVER/}; shift 2 ;;
		*) die "netboot: unknown argument '$1' (usage: ./build.sh netboot [--profile NAME] -o DIR [--uki] [--url URL[,URL...]])" ;;
		esac
	done
	[ "$ISO_UKI" != 1 ] || NETBOOT_UKI=1
	[ "$NETBOOT_UKI" != 1 ] || sb_uki_needs_verity "netboot: a signed UKI (ISO_UKI=1 or --uki)"
	[ "$NETBOOT_UKI" != 1 ] || [ -n "$NETBOOT_URL" ] ||
		die "netboot: a signed UKI (ISO_UKI=1 or --uki) needs --url http://SERVER/ (the served tree's base URL; several, comma-separated, for mirrors or caches): its signed command line says where the layers are"
	[ -n "$nb_dir" ] || die "usage: ./build.sh netboot [--profile NAME] -o DIR [--uki] [--url URL[,URL...]]"
	need_pkgs "${BUILD_PKGS[@]}" "${NETBOOT_PKGS[@]}"
	run_stages
	STAGE=netboot
	netboot_write "$ISO_WORK" "$OUT/$ISO_NAME" "$nb_dir"
	;;
serve)
	shift
	case "${1:-}" in -h | --help | help | '') exec bash "$TOP/iso/serve.sh" --help ;; esac
	need_pkgs "${SERVE_PKGS[@]}"
	exec bash "$TOP/iso/serve.sh" "$@"
	;;
iso-with)
	# A test image from what the build made: no stage runs (the kernel is never rebuilt here); cached by its inputs.
	[ $# -ge 2 ] || die "usage: ./build.sh iso-with OUTPUT.iso [NN-name.squashfs...]"
	STAGE="iso-with"
	build_lock
	iso=$(realpath -m "$2")
	shift 2
	iso_assemble "$iso" "$OUT/iso-with/$(basename "$iso" .iso)" "iso-with-$(basename "$iso" .iso)" "$@"
	log "$iso${STAGE_NOTE:+ ($STAGE_NOTE)}"
	;;
layer)
	# A layer to add later (docs/secure-boot.md, signed layers); no stage runs: the base is the last built ISO's.
	shift
	ly_dir='' ly_out='' ly_sign=0
	while [ $# -gt 0 ]; do
		case "$1" in
		-o) ly_out=${2:?-o needs a file}; shift 2 ;;
		--sign) ly_sign=1; shift ;;
		-*) die "layer: unknown option '$1' (usage: ./build.sh layer DIR -o NN-name.squashfs [--sign])" ;;
		*) [ -z "$ly_dir" ] || die "layer: one directory only ('$ly_dir', then '$1')"; ly_dir=$1; shift ;;
		esac
	done
	{ [ -n "$ly_dir" ] && [ -n "$ly_out" ]; } || die "usage: ./build.sh layer DIR -o NN-name.squashfs [--sign]"
	STAGE=layer
	need_pkgs squashfs-tools cryptsetup-bin openssl
	layer_build "$ly_dir" "$ly_out" "$ly_sign"
	;;
dracut-module)
	STAGE=dracut-module
	build_lock
	need_pkgs musl-tools
	case "${2:-}" in
	'') dracut_module_build ;;
	--install) dracut_module_build && dracut_module_install "${3:-}" ;;
	*) die "usage: ./build.sh dracut-module [--install [ROOT]] (not '$2')" ;;
	esac
	;;
deps)
	need_pkgs "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}" "${PROFILE_PKGS[@]}" "${NETBOOT_PKGS[@]}" "${SERVE_PKGS[@]}"
	;;
clean)
	if [ -d "$OUT/sb/key" ]; then
		find "$OUT" -mindepth 1 -maxdepth 1 ! -name sb -exec rm -rf {} +
		find "$OUT/sb" -mindepth 1 -maxdepth 1 ! -name key -exec rm -rf {} +
		log "removed $OUT except the Secure Boot key $OUT/sb/key (delete it yourself to make a new one)"
	else
		rm -rf "$OUT"
	fi
	;;
-h | --help | help)
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" # the header comment, however long
	;;
*)
	die "unknown command '$1' (try: ./build.sh help)"
	;;
esac

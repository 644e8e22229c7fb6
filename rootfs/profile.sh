# shellcheck shell=bash
# Build-host stage for `./build.sh --profile NAME`: configs/profiles/NAME.conf (+ NAME.packages, NAME.files/) ->
# out/profiles/NAME/NN-*.squashfs layers -> out/liveunion-NAME.iso on the same kernel and initramfs as the default.
# Sourced by build.sh (log, die, hash_of, stage_done, stage_mark, OUT, TOP). The default busybox live root
# (rootfs/rootfs.sh) is no profile and is not touched by any of this.
#
# NAME.conf is data, read line by line (never sourced): key=value, '#' comments. Keys:
#   rootfs=debootstrap      how the 10-base layer is made (rootfs/debian.sh); or
#   base=OTHER              reuse profile OTHER's layers unchanged and add this profile's own layer on top
#   suite=, mirror=         Debian suite (bookworm) and mirror (empty: the host's apt mirror)
#   hostname=, locale=, timezone=, user=   the live system's identity (debootstrap profiles)
#   mask=UNIT ...           units masked in the image (each needs a reason in the .conf comment)
#   layer=NN-name           number and name of this profile's own layer (default 10-base, or 20-NAME with base=)
#   layers=PATH ...         extra prebuilt layers (NN-name.squashfs or NN-name directories, relative to the repo)
#   cmdline=...             extra kernel command line for both boot menus (live.* keys, e.g. live.persist=off)
#   kernel=tiny|pc          the kernel flavour (default: the base profile's, else tiny): tiny is ours with everything
#                           built in; pc is Debian's signed kernel with its modules and firmware (kernel/pc.sh)
#   firmware.nonfree=yes|no pc only: Debian's non-free-firmware packages in the root (default yes; firmware-linux-free always)
#   kiosk.url=, kiosk.browser=, kiosk.idle=, kiosk.cursor=, kiosk.rotate=, kiosk.zoom=, kiosk.command=, kiosk.user=,
#   kiosk.watchdog=, kiosk.data=, kiosk.persist=, kiosk.config=, kiosk.config.key=, kiosk.config.min-version=,
#   kiosk.poll=, kiosk.group=, kiosk.screenshot.token=, kiosk.reload-at=, kiosk.reboot-at=, kiosk.stagger=
#                                                  see rootfs/kiosk.sh

PROFILE_DIR=$TOP/configs/profiles
PFLAVOUR=tiny PNONFREE=yes
PROFILE_KEYS=" rootfs base suite mirror hostname locale timezone user mask layer layers cmdline kernel firmware.nonfree kiosk.command kiosk.url kiosk.browser kiosk.idle kiosk.cursor kiosk.rotate kiosk.zoom kiosk.user kiosk.watchdog kiosk.data kiosk.persist kiosk.config kiosk.config.key kiosk.config.min-version kiosk.poll kiosk.group kiosk.screenshot.token kiosk.reload-at kiosk.reboot-at kiosk.stagger "
declare -A PCONF=()

profile_names() {
	local f
	for f in "$PROFILE_DIR"/*.conf; do [ -f "$f" ] && printf '%s ' "$(basename "$f" .conf)"; done
}

# profile_read NAME ARRAY: the keys of NAME.conf into the associative array ARRAY (last occurrence wins).
profile_read() {
	local name=$1 f=$PROFILE_DIR/$1.conf line key val n=0
	local -n into=$2
	[ -f "$f" ] || die "no profile '$name' ($f does not exist; profiles: $(profile_names))"
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		line=${line%%[[:space:]]#*}             # a trailing comment
		line=${line%"${line##*[![:space:]]}"} # trailing blanks
		case "$line" in '' | '#'*) continue ;; esac
		[[ "$line" == *=* ]] || die "$f:$n: not key=value: $line"
		key=${line%%=*} val=${line#*=}
		[[ "$PROFILE_KEYS" == *" $key "* ]] || die "$f:$n: unknown key '$key' (known:$PROFILE_KEYS)"
		# shellcheck disable=SC2034 # a name reference: it fills the caller's array
		into["$key"]=$val
	done <"$f"
}

# profile_load NAME: PCONF = NAME.conf; with base=OTHER, PCONF[base.*] = OTHER.conf (one level only).
profile_load() {
	local name=$1 k
	case "$name" in '' | *[!a-z0-9-]*) die "profile name '$name': use lower-case letters, digits and '-'" ;; esac
	PCONF=()
	profile_read "$name" PCONF
	PCONF[name]=$name
	if [ -n "${PCONF[base]:-}" ]; then
		local -A b=()
		profile_read "${PCONF[base]}" b
		[ -z "${b[base]:-}" ] || die "profile ${PCONF[base]} has base= itself: only one level of base= is supported"
		for k in "${!b[@]}"; do PCONF[base.$k]=${b[$k]}; done
	elif [ "${PCONF[rootfs]:-}" != debootstrap ]; then
		die "profile $name: rootfs=debootstrap or base=OTHER is required"
	fi
	PFLAVOUR=${PCONF[kernel]:-${PCONF[base.kernel]:-tiny}}
	case "$PFLAVOUR" in tiny | pc) ;; *) die "profile $name: kernel=$PFLAVOUR: use tiny or pc" ;; esac
	PNONFREE=${PCONF[firmware.nonfree]:-${PCONF[base.firmware.nonfree]:-yes}}
	case "$PNONFREE" in yes | no) ;; *) die "profile $name: firmware.nonfree=$PNONFREE: use yes or no" ;; esac
}

# profile_firmware: the firmware packages of the pc flavour ("" on tiny).
profile_firmware() {
	[ "$PFLAVOUR" = pc ] || return 0
	printf 'firmware-linux-free\n'
	[ "$PNONFREE" = no ] || printf '%s\n' firmware-misc-nonfree firmware-amd-graphics firmware-realtek firmware-iwlwifi
}

# profile_packages NAME: the package list, comments and blank lines dropped, sorted (the cache key).
profile_packages() {
	local f=$PROFILE_DIR/$1.packages
	[ -f "$f" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]//g' "$f" | grep -v '^$' | sort -u
}

# profile_pack TREE OUT STAGE HASH T0: OUT (a squashfs layer: zstd, 256 KiB blocks, xattrs) made from TREE, TREE
# removed, STAGE marked done for HASH, its size and the seconds since T0 said: the tail every profile layer shares.
profile_pack() {
	local tree=$1 out=$2 stage=$3 h=$4 t0=$5
	# Real owners and xattrs are kept: the trees are made as root. squashfs-tools 4.5 cannot store POSIX ACLs and
	# says so; the only one (on /var/log/journal) is set again at boot by systemd-tmpfiles.
	if ! squashfs_make "$tree" "$out" -comp zstd -Xcompression-level "${PROFILE_ZSTD_LEVEL:-15}" -b 256K -xattrs 2>&1 |
		{ grep -v '^Unrecognised xattr prefix system\.posix_acl_' >&2 || true; }; then
		die "mksquashfs of $tree failed"
	fi
	rm -rf "$tree"
	stage_mark "$stage" "$h"
	log "  $(basename "$out"): $(size_text "$out") in $((SECONDS - t0))s"
}

# profile_layers NAME OUTDIR: makes NAME's own layer(s) in OUTDIR and appends every layer path to PLAYERS, bottom first.
PLAYERS=()
profile_layers() {
	local name=$1 d=$2 layer
	local -A c=()
	profile_read "$name" c
	if [ -n "${c[base]:-}" ]; then
		profile_layers "${c[base]}" "$OUT/profiles/${c[base]}"
		layer=${c[layer]:-20-$name}
		kiosk_layer "$name" c "$d/$layer"
		PLAYERS+=("$d/$layer.squashfs")
	else
		layer=${c[layer]:-10-base}
		debian_layer "$name" c "$d/$layer"
		PLAYERS+=("$d/$layer.squashfs")
	fi
	local l
	for l in ${c[layers]:-}; do
		case "$l" in /*) ;; *) l=$TOP/$l ;; esac
		[ -e "$l" ] || die "profile $name: layers= names $l, which does not exist"
		PLAYERS+=("$l")
	done
}

# profile_cmdline: the profile's extra command line: the base profile's, a kiosk's persistence keys, its own.
profile_cmdline() {
	printf '%s %s %s' "${PCONF[base.cmdline]:-}" "$(kiosk_cmdline PCONF)" "${PCONF[cmdline]:-}" | tr -s ' ' | sed 's/^ //; s/ $//'
}

# shellcheck disable=SC2034 # STAGE_NOTE, ISO_BASE_LAYER, ISO_CMDLINE_EXTRA are read by build.sh and iso.sh
stage_profile() {
	local name=${PCONF[name]} d layers
	d=$OUT/profiles/$name
	mkdir -p "$d"
	PLAYERS=()
	profile_layers "$name" "$d"
	layers=("${PLAYERS[@]}")
	[ ${#layers[@]} -ge 1 ] || die "profile $name made no layer"
	case "$(basename "${layers[0]}")" in 10-*.squashfs) ;; *) die "profile $name: the bottom layer ${layers[0]} is not 10-*.squashfs" ;; esac
	if [ "$PFLAVOUR" = pc ]; then
		local ISO_KERNEL=$OUT/pc/vmlinuz ISO_INITRAMFS=$OUT/pc/initramfs.img
	fi
	local extra stems l
	extra=$(profile_cmdline)
	# A kiosk stacks its own layers only: an include list on the menus (signed with ISO_UKI=1) keeps any layer
	# saved in a store on the stick, which no root hash covers, out of the image (docs/kiosk.md).
	if [ -n "$(kiosk_cmdline PCONF)" ]; then
		stems=''
		for l in "${layers[@]}"; do stems+=${stems:+,}$(basename "$l" .squashfs); done
		extra+=" live.layers=$stems"
	fi
	ISO_FLAVOUR=$PFLAVOUR ISO_BASE_LAYER=${layers[0]} ISO_CMDLINE_EXTRA=$extra \
		iso_assemble "$OUT/liveunion-$name.iso" "$d/iso" "profile-$name-iso" "${layers[@]:1}"
}

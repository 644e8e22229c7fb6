# shellcheck shell=bash
# Build-host step of a rootfs=debootstrap profile (rootfs/profile.sh): a Debian root made by debootstrap
# --variant=minbase plus NAME.packages, configured for a live system that runs systemd, as one squashfs layer.
# Two caches, so a change to anything but the package list, suite or mirror redoes only the configuration
# copy, mksquashfs and the ISO:
#   $PROFILE_CACHE/debs/                 every .deb debootstrap fetched (debootstrap --cache-dir): never fetched twice
#   $PROFILE_CACHE/debootstrap/KEY/      the installed tree, KEY = hash of suite, mirror and the sorted package list
# Needs root (debootstrap, chroot). Runs only on the build host; the files it installs run in the live system.

PROFILE_CACHE=${PROFILE_CACHE:-$OUT/cache}
# Bump when the debootstrap invocation or the post-install clean-up below changes meaning (it is part of KEY).
DEBIAN_RECIPE=1
# A mirror that stops answering must not hold the build for ever (seconds).
DEBOOTSTRAP_TIMEOUT=${DEBOOTSTRAP_TIMEOUT:-1800}

# debian_mirror SUITE-KEY-VALUE: the profile's mirror=, else the host's own Debian mirror, else deb.debian.org.
debian_mirror() {
	local m=$1
	if [ -z "$m" ]; then
		m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -n -e 's/^URIs:[[:space:]]*\(http[^ ]*\/debian\)\/*$/\1/p' -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\(http[^ ]*\/debian\)\/*[[:space:]].*/\2/p' |
			sed -n 1p)
	fi
	printf '%s\n' "${m:-http://deb.debian.org/debian}"
}

# unmount_below DIR: what a killed debootstrap left mounted in DIR (its proc and sys), deepest first; rm -rf
# must never walk into a mounted /proc, /sys or a bound /dev of the host.
unmount_below() {
	local m
	[ -d "$1" ] || return 0
	for m in $(findmnt -rn -o TARGET | awk -v d="$1/" 'index($0, d) == 1' | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" ||
			die "$m is mounted inside the debootstrap cache and cannot be unmounted: unmount it by hand"
		log "  unmounted $m (left mounted by an interrupted debootstrap)"
	done
}

# debian_tree NAME SUITE MIRROR: the cached debootstrap tree for NAME's package list (made when missing); prints its path.
# The pc flavour adds kmod (modprobe, modinfo), mokutil (enrolling our Secure Boot key from the live system: docs/secure-boot.md)
# and the firmware packages; non-free ones need their component.
debian_tree() {
	local name=$1 suite=$2 mirror=$3 pkgs key dir t0 comps=main
	pkgs=$({
		profile_packages "$name"
		[ "$PFLAVOUR" != pc ] || printf 'kmod\nmokutil\n'
		profile_firmware
	} | sort -u | paste -sd, -)
	case ",$pkgs," in *,firmware-*-nonfree,* | *,firmware-amd-graphics,* | *,firmware-realtek,* | *,firmware-iwlwifi,*) comps=main,non-free-firmware ;; esac
	key=$(printf 'recipe=%s\nsuite=%s\nmirror=%s\npackages=%s\n%s' "$DEBIAN_RECIPE" "$suite" "$mirror" "$pkgs" \
		"${comps/#main/}" | sha256sum | cut -c1-16)
	dir=$PROFILE_CACHE/debootstrap/$key
	if [ -f "$dir.done" ] && [ -d "$dir" ]; then
		log "  debootstrap tree cached ($key: $suite, $(printf '%s' "$pkgs" | tr ',' '\n' | grep -c .) packages listed)"
		printf '%s\n' "$dir"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || die "debootstrap and chroot need root: run ./build.sh --profile $name as root"
	command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
	# One tree is kept: an older package list's tree is 400 MB nobody will use again (its .debs stay in debs/).
	unmount_below "$PROFILE_CACHE/debootstrap"
	rm -rf --one-file-system "$PROFILE_CACHE/debootstrap"
	mkdir -p "$PROFILE_CACHE/debs" "$PROFILE_CACHE/debootstrap"
	log "  debootstrap --variant=minbase $suite from $mirror (+ $pkgs); log: $dir.log"
	t0=$SECONDS
	local rc=0
	timeout -k 30 "$DEBOOTSTRAP_TIMEOUT" debootstrap --variant=minbase --components="$comps" --include="$pkgs" --cache-dir="$PROFILE_CACHE/debs" \
		"$suite" "$dir.tmp" "$mirror" >"$dir.log" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || unmount_below "$dir.tmp"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		tail -n 20 "$dir.log" >&2
		die "debootstrap of $suite from $mirror did not finish in ${DEBOOTSTRAP_TIMEOUT}s (a slow or unreachable mirror? set mirror= in the profile, or DEBOOTSTRAP_TIMEOUT; log: $dir.log)"
	elif [ "$rc" -ne 0 ]; then
		tail -n 20 "$dir.log" >&2
		die "debootstrap of $suite from $mirror failed (log: $dir.log)"
	fi
	# Our initramfs boots this root: an initramfs generator in it would only be dead weight (and a trap on upgrades).
	local p
	for p in initramfs-tools dracut dracut-core tiny-initramfs; do
		# shellcheck disable=SC2016 # a dpkg-query format, not a shell expansion
		if chroot "$dir.tmp" dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
			die "the package list pulls $p (by $(chroot "$dir.tmp" apt-cache rdepends --installed "$p" 2>/dev/null | sed -n '3,$p' | tr -d ' ' | paste -sd, -)): remove what depends on it"
		fi
	done
	rm -rf "$dir.tmp/var/cache/apt/archives"/*.deb "$dir.tmp"/var/cache/apt/*.bin "$dir.tmp"/var/lib/apt/lists/*_Packages
	mv "$dir.tmp" "$dir"
	touch "$dir.done"
	log "  debootstrap done in $((SECONDS - t0))s ($(du -sm "$dir" | cut -f1) MB)"
	printf '%s\n' "$dir"
}

# debian_configure TREE NAME CONF: the live-system set-up of a fresh copy of the debootstrap tree.
debian_configure() {
	local t=$1 name=$2 hostname user locale tz u
	local -n cf=$3
	hostname=${cf[hostname]:-liveunion} user=${cf[user]:-live} locale=${cf[locale]:-C.UTF-8} tz=${cf[timezone]:-Etc/UTC}
	printf '%s\n' "$hostname" >"$t/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' "$hostname" >"$t/etc/hosts"
	# Empty, not absent and not "uninitialized": systemd then makes a new ID each boot (kept in RAM, or in the
	# store with persistence) without treating each boot as a first boot (no preset-all, no firstboot prompts).
	: >"$t/etc/machine-id"
	rm -f "$t/var/lib/dbus/machine-id"
	ln -s /etc/machine-id "$t/var/lib/dbus/machine-id"
	printf '# The live root is the overlay the initramfs built; nothing to mount here.\n' >"$t/etc/fstab"
	# Locale and time zone from the profile.
	if [ "$locale" != C.UTF-8 ]; then
		grep -q "^# *$locale " "$t/etc/locale.gen" || grep -q "^$locale " "$t/etc/locale.gen" ||
			die "profile $name: locale=$locale is not in /etc/locale.gen of the Debian tree"
		sed -i "s/^# *\($locale \)/\1/" "$t/etc/locale.gen"
		chroot "$t" locale-gen >/dev/null || die "locale-gen $locale failed"
	fi
	printf 'LANG=%s\n' "$locale" >"$t/etc/default/locale"
	[ -f "$t/usr/share/zoneinfo/$tz" ] || die "profile $name: timezone=$tz is not in /usr/share/zoneinfo"
	ln -sfn "/usr/share/zoneinfo/$tz" "$t/etc/localtime"
	printf '%s\n' "$tz" >"$t/etc/timezone"
	# The live user: in the sudo group, password locked in the image; liveunion-live-user.service empties it at
	# boot only when our initramfs booted the system (/run/live/plan), so a copy of this tree installed elsewhere
	# has no password-less account.
	chroot "$t" useradd -m -s /bin/bash -G sudo -c "Live user" "$user" || die "useradd $user failed"
	printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "$user" >"$t/etc/sudoers.d/liveunion-live-user"
	chmod 0440 "$t/etc/sudoers.d/liveunion-live-user"
	cat >"$t/etc/systemd/system/liveunion-live-user.service" <<-EOT
	[Unit]
	Description=Empty console password for the live user $user (live system only)
	ConditionPathExists=/run/live/plan
	DefaultDependencies=no
	After=local-fs.target
	Before=systemd-user-sessions.service sysinit.target

	[Service]
	Type=oneshot
	RemainAfterExit=yes
	ExecStart=/usr/bin/passwd --quiet --delete $user

	[Install]
	WantedBy=sysinit.target
	EOT
	# DHCP on every wired interface, names resolved by systemd-resolved (its package points /etc/resolv.conf at it).
	mkdir -p "$t/etc/systemd/network"
	cat >"$t/etc/systemd/network/80-liveunion-dhcp.network" <<-'EOT'
	[Match]
	Type=ether
	Name=en* eth*

	[Network]
	DHCP=yes
	EOT
	chroot "$t" systemctl enable liveunion-live-user.service systemd-networkd.service >/dev/null 2>&1 ||
		die "systemctl enable in the Debian tree failed"
	for u in ${cf[mask]:-}; do
		chroot "$t" systemctl mask "$u" >/dev/null 2>&1 || die "profile $name: systemctl mask $u failed"
	done
	# The liveunion command (status, changes, ...) as on the busybox root.
	rootfs_liveunion "$t"
	debian_good_unit "$t" || die "installing liveunion-good.service in the Debian tree failed"
	printf '%s\n' "$LIVEUNION_VERSION" >"$t/etc/liveunion-version"
	printf 'Debian GNU/Linux 12 \\n \\l (liveunion %s live system, profile %s)\n\n' "$LIVEUNION_VERSION" "$name" >"$t/etc/issue"
	debian_kernel_tree "$t"
	# systemd's ConditionNeedsUpdate= (systemd-sysusers here) runs a unit when /usr is newer than /etc/.updated or
	# /var/.updated, which systemd-update-done writes at the first boot after an update. The image had neither, so
	# every live boot counted as one after an update and systemd-sysusers ran on the login prompt's critical chain
	# (bench/boot-debian: 1.5-2.7 s under TCG). The image is complete (the packages' scripts ran sysusers): both are
	# marked done at /usr's time, SOURCE_DATE_EPOCH like every time in the squashfs. A change to /usr kept by
	# persistence makes /usr newer, and the units run again, as systemd intends.
	for u in etc var; do
		printf '# Written by liveunion (rootfs/debian.sh) in place of systemd-update-done.\nTIMESTAMP_NSEC=%s000000000\n' \
			"$SOURCE_DATE_EPOCH" >"$t/$u/.updated"
	done
	if [ -d "$PROFILE_DIR/$name.files" ]; then
		cp -a --no-preserve=ownership "$PROFILE_DIR/$name.files/." "$t/" || die "copying $name.files failed"
	fi
}

# debian_good_unit TREE: on an A/B stick (docs/persistence.md, "Updating a stick"), the slot on trial is kept once
# the boot has come up: liveunion-good.service runs `liveunion update --good --boot` after multi-user.target (every
# unit ordered before it has started: the kiosk's graphical.target pulls it in too) and after boot-complete.target,
# systemd's hook for health checks (a unit with Before= and RequiredBy=boot-complete.target that fails keeps the slot
# on trial), as systemd-bless-boot does for boot counting in the ESP; and only when /etc/liveunion/health, where
# present, succeeds, as on the busybox root (rcS). Quiet on every other medium (--boot).
debian_good_unit() {
	local t=$1
	install -d -m 0755 "$t/etc/systemd/system/multi-user.target.wants" || return 1
	cat >"$t/etc/systemd/system/liveunion-good.service" <<-'EOT'
	[Unit]
	Description=Keep the A/B stick's slot on trial: this boot came up (liveunion update --good)
	ConditionPathExists=/run/live/plan
	Requires=boot-complete.target
	After=boot-complete.target multi-user.target graphical.target

	[Service]
	Type=oneshot
	RemainAfterExit=yes
	ExecStart=/bin/sh -c 'if [ -x /etc/liveunion/health ] && ! /etc/liveunion/health; then echo "/etc/liveunion/health failed: the slot on trial is not marked good (it has its tries left)"; exit 1; fi; exec /usr/bin/liveunion update --good --boot'
	StandardOutput=journal+console

	[Install]
	WantedBy=multi-user.target
	EOT
	ln -sfn ../liveunion-good.service "$t/etc/systemd/system/multi-user.target.wants/liveunion-good.service"
}

# debian_kernel_tree TREE: the flavour in os-release; on pc, Debian's whole module tree with our overlay.ko in
# updates/ (modprobe prefers it, as the init did), indexed by depmod for the live root's udev.
debian_kernel_tree() {
	local t=$1 rel
	if [ "$PFLAVOUR" = pc ]; then
		rel=$(cat "$OUT/pc/release")
		rm -rf "$t/usr/lib/modules/$rel"
		mkdir -p "$t/usr/lib/modules"
		cp -a "$OUT/pc/$rel/root/lib/modules/$rel" "$t/usr/lib/modules/" || die "cannot copy the modules of $rel"
		rm -f "$t/usr/lib/modules/$rel/build" "$t/usr/lib/modules/$rel/source"
		install -D -m 0644 "$OUT/pc/overlay.ko" "$t/usr/lib/modules/$rel/updates/overlay.ko"
		install -D -m 0644 "$OUT/pc/squashfs.ko" "$t/usr/lib/modules/$rel/updates/squashfs.ko"
		PATH=$PATH:/usr/sbin:/sbin depmod -b "$t" "$rel" || die "depmod -b $t $rel failed"
	fi
	rm -f "$t/etc/os-release"
	{
		grep -v '^VARIANT' "$t/usr/lib/os-release"
		printf 'VARIANT="liveunion %s, %s kernel%s"\nVARIANT_ID=liveunion-%s\n' "$LIVEUNION_VERSION" "$PFLAVOUR" \
			"${rel:+ $rel}" "$PFLAVOUR"
	} >"$t/etc/os-release"
}

# debian_layer NAME CONF OUTBASE: OUTBASE.squashfs from the (cached) debootstrap tree and NAME's configuration.
# shellcheck disable=SC2034 # STAGE_NOTE is read by build.sh
debian_layer() {
	local name=$1 out=$3.squashfs suite mirror tree h t t0
	local -n dc=$2
	suite=${dc[suite]:-bookworm}
	mirror=$(debian_mirror "${dc[mirror]:-}")
	tree=$(debian_tree "$name" "$suite" "$mirror") || exit 1
	rootfs_man
	h=$(printf '%s\n%s\n%s\n' "$(basename "$tree")" "$(hash_of "$PROFILE_DIR/$name.conf" "$PROFILE_DIR/$name.files" \
		"$TOP/rootfs/debian.sh" "$TOP/rootfs/profile.sh" "$TOP/rootfs/squashfs.sh" "$TOP/liveunion" "$OUT/liveunion/man/liveunion-boot.7" "$TOP/VERSION")" \
		"$PFLAVOUR $([ "$PFLAVOUR" != pc ] || hash_of "$OUT/pc/release" "$OUT/pc/overlay.ko" "$OUT/pc/squashfs.ko")" | sha256sum | cut -c1-16)
	if stage_done "profile-$name-layer" "$h" && [ -f "$out" ]; then
		log "  $(basename "$out") cached ($h)"
		return 0
	fi
	t0=$SECONDS
	t=$(dirname "$out")/tree
	rm -rf "$t"
	mkdir -p "$(dirname "$out")"
	cp -a "$tree" "$t" || die "cannot copy the debootstrap tree $tree"
	debian_configure "$t" "$name" "$2"
	profile_pack "$t" "$out" "profile-$name-layer" "$h" "$t0"
}

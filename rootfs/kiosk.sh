# shellcheck shell=bash
# Build-host step of a kiosk profile (a profile with base= and kiosk.command=, rootfs/profile.sh): one small layer on
# top of the base profile's layers that starts kiosk.command full screen on tty1 as kiosk.user, restarts it
# whenever it ends (systemd Restart=always), takes the login prompt off tty1 and optionally arms the hardware
# watchdog (systemd RuntimeWatchdogSec=). Keys (NAME.conf):
#   kiosk.command=   the program and its arguments (required), run with TERM=linux on /dev/tty1
#   kiosk.user=      the dedicated system user it runs as (default kiosk)
#   kiosk.data=      its home and data directory (default /var/lib/kiosk)
#   kiosk.persist=   yes: only kiosk.data persists (live.persist.paths=); anything else: persistence off
#   kiosk.watchdog=  systemd RuntimeWatchdogSec= (e.g. 30s; empty: no hardware watchdog)
# The user is added to copies of the base layer's passwd, group, shadow and gshadow carried in this layer.

# kiosk_cmdline CONF: the boot menu's persistence keys for a kiosk.
kiosk_cmdline() {
	local -n kc=$1
	[ -n "${kc[kiosk.command]:-}" ] || return 0
	if [ "${kc[kiosk.persist]:-no}" = yes ]; then
		printf 'live.persist.paths=%s\n' "${kc[kiosk.data]:-/var/lib/kiosk}"
	else
		printf 'live.persist=off\n'
	fi
}

# kiosk_add_user DIR USER HOME: USER as a system user (uid = gid, the first free one below 1000 from 999 down),
# by useradd on DIR's etc files (--prefix: no chroot, nothing of the build host's own files); its shadow date is
# SOURCE_DATE_EPOCH's day (shadow 4.9+ reads it). The id is chosen here because useradd picks uid and gid apart.
kiosk_add_user() {
	local d=$1 user=$2 home=$3 id=999
	grep -q "^$user:" "$d/etc/passwd" && die "kiosk.user=$user already exists in the base layer"
	while cut -d: -f3 "$d/etc/passwd" | grep -qx "$id" || cut -d: -f3 "$d/etc/group" | grep -qx "$id"; do id=$((id - 1)); done
	useradd --prefix "$d" --system --uid "$id" --user-group --comment "Kiosk application" --home-dir "$home" \
		--no-create-home --shell /usr/sbin/nologin "$user" >&2 || die "useradd --prefix $d $user failed"
	# its backups (passwd- ...) would go into the layer
	rm -f "$d"/etc/passwd- "$d"/etc/group- "$d"/etc/shadow- "$d"/etc/gshadow-
	printf '%s\n' "$id"
}

# kiosk_layer NAME CONF OUTBASE: OUTBASE.squashfs, cached by the base layer, the profile and this script.
kiosk_layer() {
	local name=$1 out=$3.squashfs base h d user data cmd id t0
	local -n kcf=$2
	cmd=${kcf[kiosk.command]:-}
	[ -n "$cmd" ] || die "profile $name: kiosk.command= is required with base="
	user=${kcf[kiosk.user]:-kiosk} data=${kcf[kiosk.data]:-/var/lib/kiosk}
	case "$user" in *[!a-z0-9_-]* | '') die "profile $name: kiosk.user=$user is not a user name" ;; esac
	case "$data" in /*) ;; *) die "profile $name: kiosk.data=$data is not an absolute path" ;; esac
	base=${PLAYERS[0]:-}
	[ -f "$base" ] || die "profile $name: no base layer was made before it"
	h=$(printf '%s\n' "$(hash_of "$base" "$PROFILE_DIR/$name.conf" "$PROFILE_DIR/$name.files" "$TOP/rootfs/kiosk.sh" "$TOP/rootfs/squashfs.sh")" | sha256sum | cut -c1-16)
	if stage_done "profile-$name-layer" "$h" && [ -f "$out" ]; then
		log "  $(basename "$out") cached ($h)"
		return 0
	fi
	t0=$SECONDS
	d=$3.d
	rm -rf "$d"
	mkdir -p "$(dirname "$d")"
	unsquashfs -q -n -f -d "$d" "$base" etc/passwd etc/group etc/shadow etc/gshadow >/dev/null ||
		die "cannot read the user files of $base"
	id=$(kiosk_add_user "$d" "$user" "$data") || exit 1
	install -d -m 0755 "$d/etc/systemd/system/multi-user.target.wants" "$d/etc/systemd/system.conf.d" "$(dirname "$d$data")"
	install -d -m 0750 -o "$id" -g "$id" "$d$data"
	if [ -d "$PROFILE_DIR/$name.files" ]; then
		cp -a --no-preserve=ownership "$PROFILE_DIR/$name.files/." "$d/" || die "copying $name.files failed"
	fi
	cat >"$d/etc/systemd/system/liveunion-kiosk.service" <<-EOT
	# Made by rootfs/kiosk.sh from configs/profiles/$name.conf.
	[Unit]
	Description=Kiosk application on tty1 ($user)
	After=systemd-user-sessions.service getty-pre.target
	Conflicts=getty@tty1.service
	# Restarted forever, however often it ends.
	StartLimitIntervalSec=0

	[Service]
	User=$user
	WorkingDirectory=$data
	Environment=TERM=linux HOME=$data
	# With live.persist.paths= the data directory is the root of its own overlay, whose attributes are those of
	# the upper directory the initramfs made in the store (root's, 0755): give it back to the app ('+': as root).
	ExecStartPre=+/bin/chown $user:$user $data
	ExecStartPre=+/bin/chmod 0750 $data
	ExecStart=$cmd
	Restart=always
	RestartSec=1
	StandardInput=tty
	StandardOutput=tty
	StandardError=journal
	TTYPath=/dev/tty1
	TTYReset=yes
	TTYVHangup=yes
	TTYVTDisallocate=yes
	UtmpIdentifier=tty1

	[Install]
	WantedBy=multi-user.target
	EOT
	ln -s ../liveunion-kiosk.service "$d/etc/systemd/system/multi-user.target.wants/liveunion-kiosk.service"
	# No login prompt on the kiosk's screen (the serial console keeps its getty for the administrator).
	ln -s /dev/null "$d/etc/systemd/system/getty@tty1.service"
	if [ -n "${kcf[kiosk.watchdog]:-}" ]; then
		printf '# Made by rootfs/kiosk.sh: the hardware watchdog resets the machine if systemd stops answering.\n[Manager]\nRuntimeWatchdogSec=%s\n' \
			"${kcf[kiosk.watchdog]}" >"$d/etc/systemd/system.conf.d/liveunion-watchdog.conf"
	fi
	squashfs_make "$d" "$out" -xattrs || die "mksquashfs of $d failed"
	rm -rf "$d"
	stage_mark "profile-$name-layer" "$h"
	log "  $(basename "$out"): $(size_text "$out") in $((SECONDS - t0))s"
}

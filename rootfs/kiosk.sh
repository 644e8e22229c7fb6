# shellcheck shell=bash
# Build-host step of a kiosk profile (a profile with base= and kiosk.url= or kiosk.command=, rootfs/profile.sh): one
# layer on top of the base profile's layers that shows one thing full screen on tty1 as kiosk.user, restarted
# whenever it ends (systemd Restart=always), with no login prompt on tty1 and optionally the hardware watchdog
# armed (systemd RuntimeWatchdogSec=). Two kinds:
#   browser (kiosk.url=)  cage (a Wayland kiosk compositor) runs the browser in kiosk mode; the packages are
#                         installed by apt over the base layer (an overlay whose upper directory becomes the layer,
#                         cached in $PROFILE_CACHE/kiosk-apt/); the live-system side is rootfs/kiosk/
#   text (kiosk.command=) the command itself on /dev/tty1 with TERM=linux (e.g. the curses demo of kiosk.files/)
# Keys (NAME.conf):
#   kiosk.url=       the page (browser kiosk); the kernel command line's kiosk.url= overrides it at boot
#   kiosk.browser=   chromium (default) or firefox: which one is installed
#   kiosk.idle=      N, Ns, Nmin, Nh: after input and then none for that long the browser restarts with a fresh
#                    profile (empty or 0: never)
#   kiosk.cursor=    yes: the mouse cursor is shown (default: hidden)
#   kiosk.rotate=    0, 90, 180, 270 (clockwise, cage -r)
#   kiosk.zoom=      the page's zoom factor (e.g. 1.5; chromium --force-device-scale-factor)
#   kiosk.command=   a text-mode program and its arguments instead of a browser
#   kiosk.user=      the dedicated system user it runs as (default kiosk)
#   kiosk.data=      its home and data directory (default /var/lib/kiosk; the browser profile is its browser/)
#   kiosk.persist=   yes: only kiosk.data persists (live.persist.paths=), browser profile included; anything
#                    else: persistence off and the browser profile removed at every start
#   kiosk.watchdog=  systemd RuntimeWatchdogSec= (e.g. 30s; empty: no hardware watchdog)
#   kiosk.config=    the fleet's signed configuration (http:// or https://; docs/kiosk.md "A fleet of kiosks")
#   kiosk.config.key= the admin's public key or certificate (PEM file; relative: to configs/profiles/) that the
#                    configuration's signature is checked against, put in the image as /etc/liveunion/kiosk-admin.pem
#   kiosk.config.min-version= the lowest version= of the configuration the image takes (a floor against replays
#                    of older signed files; raise it with each image)
#   kiosk.poll=      how often the configuration is fetched (N, Ns, Nmin, Nh; default 5min)
#   kiosk.group=     the group name the configuration's [group NAME] sections match
#   kiosk.reload-at=, kiosk.reboot-at=  HH:MM: the browser started again, the machine rebooted, once a day
#   kiosk.stagger=   N, Ns, Nmin, Nh: each kiosk's own delay below it after those times (a fleet not all at once)
#   kiosk.screenshot.token= a file (relative: to configs/profiles/) holding the admin's token (16 or more of
#                    A-Z a-z 0-9 _ - + / =, 8 of them different; e.g. openssl rand -base64 24) for the screenshot
#                    server on port 9101 (user admin); only its MD5-crypt hash goes into the image, readable by root
#                    on the kiosk and by anyone holding the image; unset: no screenshot server
# kiosk.url, browser, idle, cursor, rotate, zoom, config, poll, group, reload-at, reboot-at, stagger go to
# /etc/liveunion/kiosk.conf; the same keys on the kernel command line override them at boot (rootfs/kiosk/kiosk).
# The user is added to copies of the base layer's passwd, group, shadow and gshadow carried in this layer.

# Bump when the apt step below changes meaning (part of the cache key of the installed packages).
KIOSK_APT_RECIPE=1

# kiosk_cmdline CONF: the boot menu's persistence keys for a kiosk.
kiosk_cmdline() {
	local -n kc=$1
	[ -n "${kc[kiosk.command]:-}${kc[kiosk.url]:-}" ] || return 0
	# the screen never blanks (the text console's own blanking; the compositor has none)
	printf 'consoleblank=0 '
	if [ "${kc[kiosk.persist]:-no}" = yes ]; then
		printf 'live.persist.paths=%s\n' "${kc[kiosk.data]:-/var/lib/kiosk}"
	else
		printf 'live.persist=off\n'
	fi
}

# kiosk_add_user DIR USER HOME [GROUPS]: USER as a system user (uid = gid, the first free one below 1000 from 999 down),
# by useradd on DIR's etc files (--prefix: no chroot, nothing of the build host's own files); its shadow date is
# SOURCE_DATE_EPOCH's day (shadow 4.9+ reads it). The id is chosen here because useradd picks uid and gid apart.
# GROUPS (optional): its supplementary groups (audio: the sound card for the browser).
kiosk_add_user() {
	local d=$1 user=$2 home=$3 groups=${4:-} id=999
	grep -q "^$user:" "$d/etc/passwd" && die "kiosk.user=$user already exists in the base layer"
	while cut -d: -f3 "$d/etc/passwd" | grep -qx "$id" || cut -d: -f3 "$d/etc/group" | grep -qx "$id"; do id=$((id - 1)); done
	useradd --prefix "$d" --system --uid "$id" --user-group --comment "Kiosk application" --home-dir "$home" \
		--no-create-home --shell /usr/sbin/nologin ${groups:+--groups "$groups"} "$user" >&2 ||
		die "useradd --prefix $d $user failed"
	# its backups (passwd- ...) would go into the layer
	rm -f "$d"/etc/passwd- "$d"/etc/group- "$d"/etc/shadow- "$d"/etc/gshadow-
	printf '%s\n' "$id"
}

# kiosk_packages CONF: what the browser kiosk installs over the base layer, one a line, sorted (NAME.packages
# adds to it).
kiosk_packages() {
	local -n kp=$1
	{
		# xwayland: cage 0.1.4 does not start without it (an X server for X clients; the browsers are Wayland clients)
		# busybox: httpd for the waiting page and wget for the outage watch; alsa-utils: its udev rule runs
		# alsactl, which unmutes a sound card and sets its volume (the kernel starts HDA outputs muted)
		printf 'cage\nseatd\nxwayland\nfonts-dejavu-core\nxkb-data\nbusybox\nalsa-utils\n'
		# the fleet: curl and openssl fetch and verify the signed configuration (ca-certificates for https), the
		# node exporter serves the health metrics (its textfile collector)
		printf 'curl\nopenssl\nca-certificates\nprometheus-node-exporter\n'
		# the screenshot of the admin's server (wlroots screencopy, which cage offers)
		printf 'grim\n'
		case "${kp[kiosk.browser]:-chromium}" in
		chromium) printf 'chromium\n' ;;
		firefox) printf 'firefox-esr\n' ;;
		esac
		profile_packages "${kp[name]}"
	} | sort -u
}

# kiosk_apt BASE PACKAGES MIRROR: prints a cached directory holding what `apt-get install PACKAGES` adds to the
# tree of the squashfs BASE: the upper directory of an overlay over BASE (whiteouts and opaque directories as
# overlayfs writes them, which the live root's overlay reads the same way in a lower layer). Made when missing;
# the .debs stay in $PROFILE_CACHE/debs with debootstrap's. Packages come from the suite, its -updates and its
# -security archive (a browser is only safe with the latter).
kiosk_apt() {
	local base=$1 pkgs=$2 mirror=$3 key dir m rc=0 t0 suite=bookworm list f
	key=$(printf 'recipe=%s\nbase=%s\nmirror=%s\npackages=%s\n' "$KIOSK_APT_RECIPE" "$(hash_of "$base")" "$mirror" \
		"$pkgs" | sha256sum | cut -c1-16)
	dir=$PROFILE_CACHE/kiosk-apt/$key
	if [ -f "$dir.done" ] && [ -d "$dir" ]; then
		log "  kiosk packages cached ($key)"
		printf '%s\n' "$dir"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || die "the kiosk's apt-get install needs root (mount, chroot)"
	unmount_below "$PROFILE_CACHE/kiosk-apt"
	rm -rf --one-file-system "$PROFILE_CACHE/kiosk-apt"
	mkdir -p "$PROFILE_CACHE/kiosk-apt" "$PROFILE_CACHE/debs/partial"
	m=$PROFILE_CACHE/kiosk-apt/$key.mnt
	mkdir -p "$m/lower" "$m/work" "$m/root" "$dir.tmp" || die "cannot make $m"
	log "  apt-get install $(printf '%s' "$pkgs" | paste -sd' ') over $(basename "$base"); log: $dir.log"
	t0=$SECONDS
	{
		mount -t squashfs -o ro,loop "$base" "$m/lower" &&
			mount -t overlay overlay -o "lowerdir=$m/lower,upperdir=$dir.tmp,workdir=$m/work" "$m/root" &&
			mount -t proc proc "$m/root/proc" && mount -t sysfs sysfs "$m/root/sys" &&
			mount --bind /dev "$m/root/dev" &&
			mount --bind "$PROFILE_CACHE/debs" "$m/root/var/cache/apt/archives"
	} || rc=1
	if [ "$rc" -eq 0 ]; then
		printf '# Made by rootfs/kiosk.sh: a browser needs the security archive.\ndeb %s %s-updates main\ndeb %s-security %s-security main\n' \
			"$mirror" "$suite" "${mirror%/debian}/debian" "$suite" >"$m/root/etc/apt/sources.list.d/liveunion-kiosk.list"
		# the host's resolver for the mirror's name (the base layer's resolv.conf points at systemd-resolved's
		# file under /run, which is left out of the layer below)
		mkdir -p "$m/root/run/systemd/resolve" && cp -L /etc/resolv.conf "$m/root/run/systemd/resolve/stub-resolv.conf"
		mapfile -t list <<<"$pkgs"
		{
			chroot "$m/root" apt-get -o Acquire::Retries=3 update &&
				DEBIAN_FRONTEND=noninteractive chroot "$m/root" apt-get -o Acquire::Retries=3 install -y \
					--no-install-recommends "${list[@]}"
		} >"$dir.log" 2>&1 </dev/null || rc=$?
	fi
	for f in root/var/cache/apt/archives root/dev root/sys root/proc root lower; do
		! mountpoint -q "$m/$f" || umount "$m/$f" || die "cannot unmount $m/$f"
	done
	[ "$rc" -eq 0 ] || { tail -n 20 "$dir.log" >&2; die "apt-get install of the kiosk packages failed (log: $dir.log)"; }
	# what apt and dpkg leave that differs from run to run or is only cache
	rm -rf "$dir.tmp"/var/lib/apt/lists "$dir.tmp"/var/cache/apt/*.bin "$dir.tmp"/var/log/apt "$dir.tmp"/var/log/dpkg.log \
		"$dir.tmp"/var/cache/debconf/*-old "$dir.tmp"/var/lib/dpkg/*-old "$dir.tmp"/run "$dir.tmp"/tmp \
		"$dir.tmp"/var/cache/ldconfig/aux-cache "$dir.tmp"/etc/ld.so.cache~ "$dir.tmp"/var/cache/apt/archives
	rm -rf "$m"
	mv "$dir.tmp" "$dir"
	touch "$dir.done"
	log "  kiosk packages installed in $((SECONDS - t0))s ($(du -sm "$dir" | cut -f1) MB)"
	printf '%s\n' "$dir"
}

# kiosk_check CONF NAME: the profile's kiosk keys, each wrong one named with what it should be.
kiosk_check() {
	local -n kk=$1
	local name=$2 v
	[ -n "${kk[kiosk.command]:-}" ] && [ -n "${kk[kiosk.url]:-}" ] &&
		die "profile $name: kiosk.command= and kiosk.url= are both set: a text-mode kiosk or a browser kiosk, not both"
	[ -n "${kk[kiosk.command]:-}${kk[kiosk.url]:-}" ] || die "profile $name: kiosk.url= (a browser kiosk) or kiosk.command= (a text-mode one) is required with base="
	case "${kk[kiosk.browser]:-chromium}" in chromium | firefox) ;; *) die "profile $name: kiosk.browser=${kk[kiosk.browser]}: use chromium or firefox" ;; esac
	v=${kk[kiosk.idle]:-}
	[ -z "$v" ] || [ "$v" = 0 ] || "$TOP/rootfs/kiosk/kiosk" seconds "$v" >/dev/null ||
		die "profile $name: kiosk.idle=$v: use N, Ns, Nmin or Nh (N > 0), or 0 for never"
	case "${kk[kiosk.cursor]:-no}" in yes | no) ;; *) die "profile $name: kiosk.cursor=${kk[kiosk.cursor]}: use yes or no" ;; esac
	case "${kk[kiosk.rotate]:-0}" in 0 | 90 | 180 | 270) ;; *) die "profile $name: kiosk.rotate=${kk[kiosk.rotate]}: use 0, 90, 180 or 270" ;; esac
	case "${kk[kiosk.zoom]:-1}" in *[!0-9.]* | .* | '') die "profile $name: kiosk.zoom=${kk[kiosk.zoom]}: use a number such as 1.25" ;; esac
	case "${kk[kiosk.url]:-}" in '' | http://* | https://*) ;; *) die "profile $name: kiosk.url=${kk[kiosk.url]}: use an http:// or https:// address" ;; esac
	case "${kk[kiosk.config]:-}" in '' | http://* | https://*) ;; *) die "profile $name: kiosk.config=${kk[kiosk.config]}: use an http:// or https:// address" ;; esac
	[ -z "${kk[kiosk.config]:-}" ] || [ -n "${kk[kiosk.config.key]:-}" ] ||
		die "profile $name: kiosk.config= needs kiosk.config.key= (the admin's public key or certificate that signs it)"
	v=${kk[kiosk.poll]:-}
	[ -z "$v" ] || "$TOP/rootfs/kiosk/kiosk" seconds "$v" >/dev/null ||
		die "profile $name: kiosk.poll=$v: use N, Ns, Nmin or Nh (N > 0)"
	for v in reload-at reboot-at; do
		printf '%s\n' "${kk[kiosk.$v]:-}" | grep -Eqx '(([01][0-9]|2[0-3]):[0-5][0-9])?' ||
			die "profile $name: kiosk.$v=${kk[kiosk.$v]}: use HH:MM (24 h)"
	done
	v=${kk[kiosk.stagger]:-}
	[ -z "$v" ] || [ "$v" = 0 ] || "$TOP/rootfs/kiosk/kiosk" seconds "$v" >/dev/null ||
		die "profile $name: kiosk.stagger=$v: use N, Ns, Nmin or Nh, or 0"
	v=${kk[kiosk.config.min-version]:-}
	[ -z "$v" ] || { printf '%s\n' "$v" | grep -Eqx '[0-9]{1,10}' && [ "$v" -le 2147483647 ]; } ||
		die "profile $name: kiosk.config.min-version=$v: use a whole number below 2^31 (the lowest version= of the fleet's configuration this image takes)"
	case "${kk[kiosk.group]:-}" in *[!A-Za-z0-9._-]*) die "profile $name: kiosk.group=${kk[kiosk.group]}: use letters, digits, '.', '_' or '-'" ;; esac
}

# kiosk_admin_key FILE OUT: the admin's public key (FILE: a PEM certificate or public key) as a PEM public key in
# OUT; a private key, or anything else, is refused by name.
kiosk_admin_key() {
	local f=$1 out=$2
	[ -f "$f" ] || die "kiosk.config.key=$f: no such file (the admin's public key or certificate, PEM)"
	if openssl x509 -in "$f" -noout 2>/dev/null; then
		openssl x509 -in "$f" -pubkey -noout >"$out" || die "cannot read the public key of the certificate $f"
	elif ! openssl pkey -pubin -in "$f" -out "$out" 2>/dev/null; then
		die "kiosk.config.key=$f: neither a PEM certificate nor a PEM public key (a private key never goes into the image: openssl pkey -in KEY -pubout)"
	fi
	chmod 0644 "$out"
}

# kiosk_admin_httpd TOKENFILE NAME OUT: busybox httpd's configuration for the admin's server in OUT (0600): the
# cgi-bin directory behind Basic authentication, user admin, the token's MD5-crypt hash. Its salt comes from the
# token and the profile's name (sha256's first 8 hex digits): the same image from the same files, and another salt
# for another token. The hash is readable by anyone who holds the image (the ISO is not encrypted) and MD5-crypt is
# fast to try: a short, odd or repetitive token is refused by name.
kiosk_admin_httpd() {
	local f=$1 name=$2 out=$3 t h
	[ -f "$f" ] || die "kiosk.screenshot.token=$f: no such file (the admin's token, e.g. openssl rand -base64 24 >FILE)"
	t=$(head -n 1 "$f")
	{ printf '%s\n' "$t" | grep -Eqx '[A-Za-z0-9_+/=-]{16,}' && [ "$(printf '%s' "$t" | fold -w1 | sort -u | wc -l)" -ge 8 ]; } ||
		die "kiosk.screenshot.token=$f: the token must be 16 or more of A-Z a-z 0-9 _ - + / =, at least 8 of them different, and random (e.g. openssl rand -base64 24)"
	h=$(openssl passwd -1 -salt "$(printf 'liveunion-kiosk %s %s' "$t" "$name" | sha256sum | cut -c1-8)" "$t") ||
		die "openssl passwd failed for the screenshot token"
	(umask 077 && printf '# Made by rootfs/kiosk.sh: the admin server (kiosk.screenshot.token=), root only.\n/cgi-bin:admin:%s\n' "$h" >"$out") ||
		die "cannot write $out"
}

# kiosk_key_file CONF [KEY]: the profile's kiosk.config.key= (or KEY) as a path (relative: to the profiles'
# directory), or nothing
kiosk_key_file() {
	local -n kf=$1
	local f=${kf[${2:-kiosk.config.key}]:-}
	[ -n "$f" ] || return 0
	case "$f" in /*) printf '%s\n' "$f" ;; *) printf '%s\n' "$PROFILE_DIR/$f" ;; esac
}

# kiosk_layer NAME CONF OUTBASE: OUTBASE.squashfs, cached by the base layer, the profile and this script.
kiosk_layer() {
	local name=$1 out=$3.squashfs base h d user data cmd id t0 url pkgs tree='' f keyf tokf
	local -n kcf=$2
	kcf[name]=$name
	kiosk_check "$2" "$name"
	cmd=${kcf[kiosk.command]:-} url=${kcf[kiosk.url]:-}
	user=${kcf[kiosk.user]:-kiosk} data=${kcf[kiosk.data]:-/var/lib/kiosk}
	case "$user" in *[!a-z0-9_-]* | '') die "profile $name: kiosk.user=$user is not a user name" ;; esac
	case "$data" in /*) ;; *) die "profile $name: kiosk.data=$data is not an absolute path" ;; esac
	base=${PLAYERS[0]:-}
	[ -f "$base" ] || die "profile $name: no base layer was made before it"
	[ -z "$url" ] || pkgs=$(kiosk_packages "$2")
	keyf=$(kiosk_key_file "$2")
	[ -z "$keyf" ] || [ -f "$keyf" ] || die "profile $name: kiosk.config.key=$keyf: no such file (the admin's public key or certificate, PEM)"
	tokf=$(kiosk_key_file "$2" kiosk.screenshot.token)
	[ -z "$tokf" ] || [ -f "$tokf" ] || die "profile $name: kiosk.screenshot.token=$tokf: no such file (the admin's token)"
	h=$(printf '%s\n' "$(hash_of "$base" "$PROFILE_DIR/$name.conf" "$PROFILE_DIR/$name.files" "$TOP/rootfs/kiosk.sh" \
		"$TOP/rootfs/kiosk" "$TOP/rootfs/profile.sh" "$TOP/rootfs/squashfs.sh" ${keyf:+"$keyf"} ${tokf:+"$tokf"})" "${pkgs:-}" |
		sha256sum | cut -c1-16)
	if stage_done "profile-$name-layer" "$h" && [ -f "$out" ]; then
		log "  $(basename "$out") cached ($h)"
		return 0
	fi
	t0=$SECONDS
	[ -z "$url" ] || tree=$(kiosk_apt "$base" "$pkgs" "$(debian_mirror "${kcf[base.mirror]:-}")") || exit 1
	d=$3.d
	rm -rf "$d"
	mkdir -p "$(dirname "$d")"
	if [ -n "$tree" ]; then
		cp -a "$tree" "$d" || die "cannot copy the installed kiosk packages $tree"
	else
		mkdir -p "$d"
	fi
	# the user files of the layer: those the packages changed, else the base layer's
	for f in etc/passwd etc/group etc/shadow etc/gshadow; do
		[ -f "$d/$f" ] && continue
		unsquashfs -q -n -f -d "$d" "$base" "$f" >/dev/null || die "cannot read $f of $base"
	done
	id=$(kiosk_add_user "$d" "$user" "$data" "$([ -z "$url" ] || echo audio,video)") || exit 1
	install -d -m 0755 "$d/etc/systemd/system/multi-user.target.wants" "$d/etc/systemd/system.conf.d" "$(dirname "$d$data")"
	install -d -m 0750 -o "$id" -g "$id" "$d$data"
	if [ -d "$PROFILE_DIR/$name.files" ]; then
		cp -a --no-preserve=ownership "$PROFILE_DIR/$name.files/." "$d/" || die "copying $name.files failed"
	fi
	if [ -n "$url" ]; then
		kiosk_browser_files "$d" "$2" "$user" "$data"
	else
		kiosk_text_unit "$d" "$name" "$user" "$data" "$cmd"
	fi
	ln -s ../liveunion-kiosk.service "$d/etc/systemd/system/multi-user.target.wants/liveunion-kiosk.service"
	# No login prompt on the kiosk's screen (the serial console keeps its getty for the administrator).
	ln -s /dev/null "$d/etc/systemd/system/getty@tty1.service"
	if [ -n "${kcf[kiosk.watchdog]:-}" ]; then
		printf '# Made by rootfs/kiosk.sh: the hardware watchdog resets the machine if systemd stops answering.\n[Manager]\nRuntimeWatchdogSec=%s\n' \
			"${kcf[kiosk.watchdog]}" >"$d/etc/systemd/system.conf.d/liveunion-watchdog.conf"
	fi
	profile_pack "$d" "$out" "profile-$name-layer" "$h" "$t0"
}

# kiosk_hidden_cursor DIR: an Xcursor theme (made with xcursorgen from a 1x1 transparent PNG) in which every
# cursor name of the freedesktop cursor specification is that one invisible image: the kiosk's compositor and
# browser load it through XCURSOR_THEME unless kiosk.cursor=yes.
kiosk_hidden_cursor() {
	local t=$1 n
	install -d -m 0755 "$t/cursors"
	printf '[Icon Theme]\nName=liveunion-hidden\nComment=every cursor transparent (liveunion kiosk)\n' >"$t/index.theme"
	pbmmake -white 1 1 | pnmtopng -transparent white >"$t/cursors/.png" || die "cannot make the transparent cursor image"
	printf '1 0 0 %s\n' "$t/cursors/.png" | xcursorgen - "$t/cursors/default" || die "xcursorgen failed"
	rm -f "$t/cursors/.png"
	for n in left_ptr arrow top_left_arrow context-menu help question_arrow pointer hand hand1 hand2 progress \
		left_ptr_watch wait watch cell plus crosshair cross tcross text xterm ibeam vertical-text alias copy move \
		fleur no-drop not-allowed grab grabbing all-scroll col-resize sb_h_double_arrow row-resize \
		sb_v_double_arrow n-resize top_side e-resize right_side s-resize bottom_side w-resize left_side \
		ne-resize top_right_corner nw-resize top_left_corner se-resize bottom_right_corner sw-resize \
		bottom_left_corner ew-resize h_double_arrow ns-resize v_double_arrow nesw-resize fd_double_arrow \
		nwse-resize bd_double_arrow zoom-in zoom-out dnd-none dnd-move dnd-copy dnd-link X_cursor; do
		ln -s default "$t/cursors/$n"
	done
	# cage asks for the theme named "default" (its own cursor, over no client): the same one in XCURSOR_PATH
	ln -s "$(basename "$t")" "$(dirname "$t")/default"
}

# kiosk_text_unit DIR NAME USER DATA COMMAND: the text-mode kiosk's service (COMMAND on tty1).
kiosk_text_unit() {
	local d=$1 name=$2 user=$3 data=$4 cmd=$5
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
}

# kiosk_browser_files DIR CONF USER DATA: the browser kiosk's settings, scripts, policies and units in DIR.
kiosk_browser_files() {
	local d=$1 user=$3 data=$4 k
	local -n kb=$2
	install -d -m 0755 "$d/etc/liveunion" "$d/usr/lib/liveunion/kiosk" "$d/etc/systemd/logind.conf.d" "$d/etc/sysctl.d" \
		"$d/etc/pam.d"
	{
		printf '# Made by rootfs/kiosk.sh from the profile; the same keys on the kernel command line override these.\n'
		for k in url browser idle cursor rotate zoom persist config config.min-version poll group reload-at reboot-at stagger; do
			[ -z "${kb[kiosk.$k]:-}" ] || printf 'kiosk.%s=%s\n' "$k" "${kb[kiosk.$k]}"
		done
		printf 'kiosk.user=%s\nkiosk.data=%s\n' "$user" "$data"
	} >"$d/etc/liveunion/kiosk.conf"
	install -m 0755 "$TOP/rootfs/kiosk/kiosk" "$d/usr/lib/liveunion/kiosk/"
	# the fleet: the admin's key (never from the network), the node exporter's textfile directory
	k=$(kiosk_key_file "$2")
	[ -z "$k" ] || kiosk_admin_key "$k" "$d/etc/liveunion/kiosk-admin.pem"
	install -d -m 0755 "$d/var/lib/prometheus/node-exporter"
	# the idle watch (reads /dev/input) and the input filter (grabs /dev/input, passes the keys of typing on through
	# /dev/uinput), static with musl and the kernel's headers like the init
	for k in kiosk-idle kiosk-keys; do
		musl-gcc -static -std=c11 -O2 -Wall -Wextra -Werror -isystem "$OUT/initramfs/uapi/include" \
			-o "$d/usr/lib/liveunion/kiosk/$k" "$TOP/rootfs/kiosk/$k.c" ||
			die "cannot compile rootfs/kiosk/$k.c"
		strip "$d/usr/lib/liveunion/kiosk/$k"
	done
	install -D -m 0644 "$TOP/rootfs/kiosk/waiting.html" "$d/usr/share/liveunion/kiosk/www/waiting.html"
	# the browser's side of the lock (chromium --load-extension): one window, one tab, no dialogs, menus or drags
	install -d -m 0755 "$d/usr/lib/liveunion/kiosk/extension"
	install -m 0644 "$TOP"/rootfs/kiosk/extension/*.js "$TOP/rootfs/kiosk/extension/manifest.json" \
		"$d/usr/lib/liveunion/kiosk/extension/"
	case "${kb[kiosk.browser]:-chromium}" in
	chromium) install -D -m 0644 "$TOP/rootfs/kiosk/chromium-policy.json" "$d/etc/chromium/policies/managed/liveunion-kiosk.json" ;;
	firefox) install -D -m 0644 "$TOP/rootfs/kiosk/firefox-policies.json" "$d/etc/firefox-esr/policies/policies.json"
		install -D -m 0644 "$TOP/rootfs/kiosk/firefox-policies.json" "$d/usr/lib/firefox-esr/distribution/policies.json" ;;
	esac
	# A logind session for cage (its XDG_RUNTIME_DIR, the session on seat0/tty1). The DRM and input devices come
	# from seatd (libseat's seatd backend, the kiosk user in its group video): libseat's logind backend needs
	# polkit to let a user activate a session. No authentication: systemd starts it, nobody logs in.
	cat >"$d/etc/pam.d/liveunion-kiosk" <<-'EOT'
	# Made by rootfs/kiosk.sh: the kiosk's session (liveunion-kiosk.service), started by systemd, never a login.
	auth     required pam_permit.so
	account  include  common-account
	session  required pam_loginuid.so
	session  include  common-session
	EOT
	# No text consoles to switch to, and no SysRq keys on the kiosk's keyboard (the serial console is the admin's).
	printf '# Made by rootfs/kiosk.sh: no getty on other VTs (and none to switch to).\n[Login]\nNAutoVTs=0\nReserveVT=0\n' \
		>"$d/etc/systemd/logind.conf.d/liveunion-kiosk.conf"
	printf '# Made by rootfs/kiosk.sh: Alt+SysRq does nothing on a kiosk.\nkernel.sysrq = 0\n' >"$d/etc/sysctl.d/50-liveunion-kiosk.conf"
	kiosk_hidden_cursor "$d/usr/share/liveunion/kiosk/icons/liveunion-hidden"
	# Ctrl+Alt+Del (seven times in two seconds included) does not reboot it.
	ln -s /dev/null "$d/etc/systemd/system/ctrl-alt-del.target"
	printf '# Made by rootfs/kiosk.sh\n[Manager]\nCtrlAltDelBurstAction=none\n' >"$d/etc/systemd/system.conf.d/liveunion-kiosk.conf"
	cat >"$d/etc/systemd/system/liveunion-kiosk.service" <<-EOT
	# Made by rootfs/kiosk.sh: cage and the browser on tty1 as $user (rootfs/kiosk/kiosk).
	[Unit]
	Description=Browser kiosk on tty1 ($user)
	After=systemd-user-sessions.service getty-pre.target dbus.socket systemd-logind.service seatd.service network.target liveunion-kiosk-keys.service
	Wants=dbus.socket systemd-logind.service seatd.service liveunion-kiosk-keys.service
	Conflicts=getty@tty1.service
	# Restarted forever, however often it ends.
	StartLimitIntervalSec=0

	[Service]
	User=$user
	PAMName=liveunion-kiosk
	WorkingDirectory=$data
	Environment=HOME=$data XDG_SESSION_TYPE=wayland XDG_SESSION_CLASS=user
	ExecStartPre=+/usr/lib/liveunion/kiosk/kiosk prepare
	ExecStart=/usr/lib/liveunion/kiosk/kiosk start
	Restart=always
	RestartSec=1
	StandardInput=tty-fail
	StandardOutput=journal
	StandardError=journal
	TTYPath=/dev/tty1
	TTYReset=yes
	TTYVHangup=yes
	TTYVTDisallocate=yes
	UtmpIdentifier=tty1
	UtmpMode=user

	[Install]
	WantedBy=multi-user.target
	EOT
	# The input filter (rootfs/kiosk/kiosk-keys.c) grabs every real input device and passes the keys of typing
	# and the left button through one virtual device. Belt and braces: every other input device is put on a seat
	# nobody uses, so cage (libinput on seat0) never even opens them, and input stops rather than arriving
	# unfiltered should the filter be gone for a moment.
	install -d -m 0755 "$d/etc/udev/rules.d"
	cat >"$d/etc/udev/rules.d/72-liveunion-kiosk-input.rules" <<-'EOT'
	# Made by rootfs/kiosk.sh: the kiosk's compositor sees only kiosk-keys' filtered device.
	SUBSYSTEM=="input", KERNEL=="event*", ENV{ID_SEAT}="seat-liveunion-raw"
	SUBSYSTEM=="input", KERNEL=="event*", ATTRS{phys}=="liveunion-kiosk-keys/uinput", ENV{ID_SEAT}="seat0"
	EOT
	cat >"$d/etc/systemd/system/liveunion-kiosk-keys.service" <<-EOT
	# Made by rootfs/kiosk.sh: the kiosk's input filter, as root to grab /dev/input and make /dev/uinput's device.
	[Unit]
	Description=Kiosk input filter (only the keys of typing reach the browser)
	After=systemd-udevd.service systemd-udev-trigger.service
	Before=liveunion-kiosk.service
	StartLimitIntervalSec=0

	[Service]
	ExecStartPre=-/sbin/modprobe -q uinput
	ExecStart=/usr/lib/liveunion/kiosk/kiosk-keys
	Restart=always
	RestartSec=1
	# one descriptor per input device node, up to the kernel's 1024 of them
	LimitNOFILE=2048

	[Install]
	WantedBy=multi-user.target
	EOT
	ln -s ../liveunion-kiosk-keys.service "$d/etc/systemd/system/multi-user.target.wants/liveunion-kiosk-keys.service"
	cat >"$d/etc/systemd/system/liveunion-kiosk-idle.service" <<-EOT
	# Made by rootfs/kiosk.sh: the kiosk's idle reset (kiosk.idle=), as root to read the input devices.
	[Unit]
	Description=Kiosk idle reset (kiosk.idle=)
	After=liveunion-kiosk.service
	StartLimitIntervalSec=0

	[Service]
	ExecStart=/usr/lib/liveunion/kiosk/kiosk idle
	Restart=on-failure
	RestartSec=5

	[Install]
	WantedBy=multi-user.target
	EOT
	ln -s ../liveunion-kiosk-idle.service "$d/etc/systemd/system/multi-user.target.wants/liveunion-kiosk-idle.service"
	cat >"$d/etc/systemd/system/liveunion-kiosk-fleet.service" <<-EOT
	# Made by rootfs/kiosk.sh: the fleet's configuration (kiosk.config=), the health metrics, kiosk.reload-at= and
	# kiosk.reboot-at= (rootfs/kiosk/kiosk fleet), as root (systemctl, the allowlist).
	[Unit]
	Description=Kiosk fleet configuration, health metrics and schedule
	# not network-online.target: a kiosk without a network still gets its metrics; a failed fetch is tried again
	# within 30 s
	After=network.target
	StartLimitIntervalSec=0

	[Service]
	ExecStart=/usr/lib/liveunion/kiosk/kiosk fleet
	Restart=always
	RestartSec=5

	[Install]
	WantedBy=multi-user.target
	EOT
	ln -s ../liveunion-kiosk-fleet.service "$d/etc/systemd/system/multi-user.target.wants/liveunion-kiosk-fleet.service"
	# The admin's screenshot server, only with a token: busybox httpd as root (it reads the 0600 hash file; the CGI
	# runs grim as the kiosk user), every request without the token refused with 401.
	k=$(kiosk_key_file "$2" kiosk.screenshot.token)
	[ -n "$k" ] || return 0
	kiosk_admin_httpd "$k" "${kb[name]}" "$d/etc/liveunion/kiosk-admin-httpd.conf"
	install -d -m 0755 "$d/usr/share/liveunion/kiosk/admin/cgi-bin"
	printf '#!/bin/sh\nexec /usr/lib/liveunion/kiosk/kiosk screenshot\n' >"$d/usr/share/liveunion/kiosk/admin/cgi-bin/screenshot"
	chmod 0755 "$d/usr/share/liveunion/kiosk/admin/cgi-bin/screenshot"
	cat >"$d/etc/systemd/system/liveunion-kiosk-admin.service" <<-EOT
	# Made by rootfs/kiosk.sh: the kiosk's screenshot for the admin (kiosk.screenshot.token=), port 9101, user admin.
	[Unit]
	Description=Kiosk admin server (screenshot, token only)
	After=network.target
	StartLimitIntervalSec=0

	[Service]
	ExecStart=/bin/busybox httpd -f -p 9101 -c /etc/liveunion/kiosk-admin-httpd.conf -h /usr/share/liveunion/kiosk/admin -r liveunion-kiosk
	Restart=always
	RestartSec=1

	[Install]
	WantedBy=multi-user.target
	EOT
	ln -s ../liveunion-kiosk-admin.service "$d/etc/systemd/system/multi-user.target.wants/liveunion-kiosk-admin.service"
}

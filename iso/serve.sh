#!/usr/bin/env bash
# ./build.sh serve DIR --interface IFACE [options]: serve a netboot tree (./build.sh netboot) with Debian's servers.
#   dnsmasq      proxyDHCP (next to the site's DHCP server: it hands out no addresses) or, with --dhcp-range, a
#                full DHCP server; TFTP for the iPXE binaries only; BIOS and UEFI PXE ROMs get the iPXE for their
#                architecture, iPXE itself (DHCP user class "iPXE") gets http://ADDRESS/start.ipxe instead
#                UEFI HTTP boot clients (DHCP vendor class "HTTPClient") get http://ADDRESS/current.efi, the signed
#                UKI of ./build.sh netboot --uki, when the tree has one (as a DHCP server: proxyDHCP answers PXE only)
#   nginx        HTTP for everything else (kernel, initramfs, layers: range requests, so a client resumes)
#   nbd-server   every image's ISO as export liveunion-ID, read-only (live.nbd=)
# The generated config files are printed, and kept in a directory named at the start. Ctrl-C stops all of them;
# so does any one of them ending.
# Options:
#   --interface IFACE     where to serve (must exist and have an IPv4 address)
#   --dhcp-range A,B      be the DHCP server, leasing A..B (default: proxyDHCP)
#   --boot fetch|nbd      what start.ipxe boots: layers downloaded into RAM (default) or read from nbd-server
#   --services LIST       which of pxe,http,nbd to run (default all three; e.g. HTTP on another machine)
#   --http-port N         default 80;  --nbd-port N  default 10809
#   --rate BYTES          limit each HTTP download to BYTES/s (nginx limit_rate, e.g. 2m): keeps a lab's uplink free
set -euo pipefail
export LC_ALL=C

log() { printf '%s\n' "liveunion serve: $*" >&2; }
die() { printf '%s\n' "liveunion serve: error: $*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

dir=${1:-}
case "$dir" in -h | --help | help | '') usage; exit 0 ;; esac
shift
iface='' range='' mode=fetch services=pxe,http,nbd http_port=80 nbd_port=10809 rate=0
while [ $# -gt 0 ]; do
	case "$1" in
	--interface) iface=${2:?--interface needs a name}; shift 2 ;;
	--dhcp-range) range=${2:?--dhcp-range needs START,END}; shift 2 ;;
	--boot) mode=${2:?--boot needs fetch or nbd}; shift 2 ;;
	--services) services=${2:?--services needs a list}; shift 2 ;;
	--http-port) http_port=${2:?}; shift 2 ;;
	--nbd-port) nbd_port=${2:?}; shift 2 ;;
	--rate) rate=${2:?--rate needs BYTES per second}; shift 2 ;;
	*) die "unknown option '$1' (./build.sh serve --help)" ;;
	esac
done
[ -n "$iface" ] || die "--interface IFACE is needed: the interface the lab's machines are on"
{ [ -f "$dir/current.ipxe" ] && [ -d "$dir/tftp" ]; } || die "$dir is not a netboot tree (make one: ./build.sh netboot -o $dir)"
dir=$(realpath "$dir")
# dnsmasq and nginx's workers read the tree as unprivileged users: every directory above it must let them through.
d=$dir
while [ "$d" != / ]; do
	[ "$(( 0$(stat -c %a "$d") & 1 ))" = 1 ] ||
		die "$d is mode $(stat -c %a "$d"): dnsmasq and nginx (unprivileged users) cannot reach $dir through it; chmod o+x $d, or make the tree elsewhere (e.g. /srv/liveunion)"
	d=$(dirname "$d")
done
case "$mode" in fetch | nbd) ;; *) die "--boot takes fetch or nbd, not '$mode'" ;; esac
case "$rate" in [0-9]* ) ;; *) die "--rate takes bytes per second (e.g. 2m), not '$rate'" ;; esac
for s in ${services//,/ }; do
	case "$s" in pxe | http | nbd) ;; *) die "--services: '$s' is not pxe, http or nbd" ;; esac
done
has() { case ",$services," in *",$1,"*) return 0 ;; esac; return 1; }

if [ ! -e "/sys/class/net/$iface" ]; then
	die "interface '$iface' does not exist (here: $(find /sys/class/net -mindepth 1 -maxdepth 1 -printf '%f ' | sort))"
fi
cidr=$(ip -4 -o addr show dev "$iface" | awk '{print $4; exit}')
[ -n "$cidr" ] || die "interface '$iface' has no IPv4 address (ip -4 addr show dev $iface): give it one, or name another"
addr=${cidr%/*} prefix=${cidr#*/}
mask=$(( (0xffffffff << (32 - prefix)) & 0xffffffff ))
netmask=$(printf '%d.%d.%d.%d' $((mask >> 24)) $((mask >> 16 & 255)) $((mask >> 8 & 255)) $((mask & 255)))
IFS=. read -r a b c d <<<"$addr"
ipnum=$(( (a << 24) | (b << 16) | (c << 8) | d ))
net=$(( ipnum & mask ))
network=$(printf '%d.%d.%d.%d' $((net >> 24)) $((net >> 16 & 255)) $((net >> 8 & 255)) $((net & 255)))

for t in dnsmasq:pxe nginx:http nbd-server:nbd; do
	has "${t#*:}" || continue
	command -v "${t%%:*}" >/dev/null || [ -x "/usr/sbin/${t%%:*}" ] ||
		die "${t%%:*} is not installed (Debian packages: dnsmasq-base nginx-light nbd-server; ./build.sh deps)"
done
PATH=$PATH:/usr/sbin:/sbin

conf=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-serve.XXXXXX")
chmod 755 "$conf"
pids=()
# shellcheck disable=SC2317 # runs from the traps
stop() {
	local p
	trap - INT TERM EXIT
	for p in "$conf"/*.pid; do
		[ -f "$p" ] || continue
		p=$(cat "$p" 2>/dev/null) || continue
		# nbd-server serves each client from a child of its own: those go too
		pkill -TERM -P "$p" 2>/dev/null || true
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$conf"
	log "stopped"
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

http="http://$addr$([ "$http_port" = 80 ] || printf ':%s' "$http_port")/"
cat >"$conf/start.ipxe" <<EOF
#!ipxe
# liveunion serve: this server's addresses, then the newest image of $dir
set liveunion-base $http
set liveunion-nbd $addr:$nbd_port
set liveunion-mode $mode
chain \${liveunion-base}current.ipxe
EOF

if has pxe; then
	{
		printf '# liveunion serve: dnsmasq on %s (%s): %s, TFTP for iPXE\n' "$iface" "$cidr" \
			"${range:+DHCP server leasing $range}${range:-proxyDHCP beside the site DHCP server}"
		printf 'port=0\ninterface=%s\nbind-interfaces\nlog-dhcp\nlog-facility=-\n' "$iface"
		printf 'pid-file=%s/dnsmasq.pid\ndhcp-leasefile=%s/dnsmasq.leases\n' "$conf" "$conf"
		if [ -n "$range" ]; then
			printf 'dhcp-range=%s,%s,1h\n' "$range" "$netmask"
			printf 'dhcp-authoritative\n'
		else
			printf 'dhcp-range=%s,proxy,%s\n' "$network" "$netmask"
		fi
		printf 'enable-tftp\ntftp-root=%s/tftp\n' "$dir"
		printf '# iPXE says so in its user class (and option 175): it gets the script, not iPXE again\n'
		printf 'dhcp-userclass=set:ipxe,iPXE\ndhcp-match=set:ipxe,175\n'
		printf '# no PXE boot server discovery or menu: the file at once\n'
		printf 'dhcp-option=vendor:PXEClient,6,2b\n'
		printf '# by client architecture (option 93): BIOS, UEFI x86-64 (7 and 9)\n'
		printf 'pxe-service=tag:!ipxe,x86PC,"liveunion (BIOS): iPXE",undionly.kpxe\n'
		printf 'pxe-service=tag:!ipxe,BC_EFI,"liveunion (UEFI): iPXE",snponly.efi\n'
		printf 'pxe-service=tag:!ipxe,x86-64_EFI,"liveunion (UEFI): iPXE",snponly.efi\n'
		printf 'pxe-service=tag:ipxe,x86PC,"liveunion",%sstart.ipxe\n' "$http"
		printf 'pxe-service=tag:ipxe,BC_EFI,"liveunion",%sstart.ipxe\n' "$http"
		printf 'pxe-service=tag:ipxe,x86-64_EFI,"liveunion",%sstart.ipxe\n' "$http"
		if [ -n "$range" ]; then
			printf '# clients that read only the DHCP boot file (no PXE menu support)\n'
			printf 'dhcp-match=set:efi64,option:client-arch,7\ndhcp-match=set:efi64,option:client-arch,9\n'
			printf '# UEFI HTTP boot (the firmware itself over HTTP, no iPXE): it asks as vendor class HTTPClient and\n'
			printf '# takes the boot file as a URL only from an answer that names HTTPClient as its vendor class too\n'
			printf 'dhcp-vendorclass=set:http,HTTPClient\n'
			if [ -L "$dir/current.efi" ] || [ -f "$dir/current.efi" ]; then
				printf 'dhcp-option-force=tag:http,60,HTTPClient\n'
				printf 'dhcp-boot=tag:http,%scurrent.efi\n' "$http"
			else
				printf '# (no current.efi in %s: make one with ./build.sh netboot --uki; until then no boot file)\n' "$dir"
			fi
			printf 'dhcp-boot=tag:ipxe,%sstart.ipxe\n' "$http"
			printf 'dhcp-boot=tag:!ipxe,tag:!http,tag:efi64,snponly.efi\n'
			printf 'dhcp-boot=tag:!ipxe,tag:!http,tag:!efi64,undionly.kpxe\n'
		fi
	} >"$conf/dnsmasq.conf"
fi

# redirects: nginx locations sending each image's live/NAME to its layer's content name (netboot's layers.map).
redirects() {
	local m id name to
	for m in "$dir"/images/*/layers.map; do
		[ -f "$m" ] || continue
		id=$(basename "$(dirname "$m")")
		while read -r name to; do
			case "$name/$to" in *[!A-Za-z0-9._/-]*) die "$m: '$name $to' is not NAME layers/KEY/NAME" ;; esac
			printf '\t\tlocation = /images/%s/live/%s { add_header Cache-Control "public, max-age=31536000, immutable"; return 301 /%s; }\n' "$id" "$name" "$to"
		done <"$m"
	done
}

if has http; then
	redirects >/dev/null # a bad layers.map stops serve here, named
	mkdir -p "$conf/nginx-tmp"
	cat >"$conf/nginx.conf" <<EOF
# liveunion serve: nginx on $addr:$http_port serving $dir (range requests are on for static files)
daemon off;
master_process on;
worker_processes auto;
pid $conf/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
	types { text/plain ipxe; application/efi efi; application/octet-stream squashfs verity iso kpxe; }
	default_type application/octet-stream;
	access_log $conf/access.log;
	client_body_temp_path $conf/nginx-tmp/body;
	proxy_temp_path $conf/nginx-tmp/proxy;
	fastcgi_temp_path $conf/nginx-tmp/fastcgi;
	uwsgi_temp_path $conf/nginx-tmp/uwsgi;
	scgi_temp_path $conf/nginx-tmp/scgi;
	sendfile on;
	tcp_nopush on;
	server {
		listen $addr:$http_port;
		root $dir;
		limit_rate $rate;
		location = /start.ipxe { alias $conf/start.ipxe; add_header Cache-Control no-cache; }
		# what an image directory holds never changes (its name is the hash of its content): caches keep it;
		# so do they the layers' own content names (layers/KEY/, netboot's layers.map), which an image's layer
		# files redirect to: a layer two images share is fetched and cached once. Relative redirects, so that a
		# client that came through a cache goes on through it.
		absolute_redirect off;
		location /images/ { add_header Cache-Control "public, max-age=31536000, immutable"; }
		location /layers/ { add_header Cache-Control "public, max-age=31536000, immutable"; }
$(redirects)
		# the pointers at the newest image change with each publication
		location = /current.ipxe { add_header Cache-Control no-cache; }
		location = /current.efi { add_header Cache-Control no-cache; }
	}
}
EOF
fi

if has nbd; then
	{
		printf '# liveunion serve: nbd-server on %s:%s, every image ISO read-only\n[generic]\n' "$addr" "$nbd_port"
		printf '\tlistenaddr = %s\n\tport = %s\n\tallowlist = true\n' "$addr" "$nbd_port"
		for f in "$dir"/images/*/liveunion.iso; do
			[ -f "$f" ] || continue
			f=$(realpath "$f")
			printf '[liveunion-%s]\n\texportname = %s\n\treadonly = true\n' "$(basename "$(dirname "$f")")" "$f"
		done
	} >"$conf/nbd-server.conf"
fi

log "serving $dir on $iface ($cidr); config files in $conf:"
for f in "$conf"/*.conf "$conf/start.ipxe"; do
	[ -f "$f" ] || continue
	printf '%s\n' "----- $f" >&2
	cat "$f" >&2
done
printf '%s\n' "-----" >&2

if has http; then
	nginx -c "$conf/nginx.conf" -p "$conf" &
	pids+=($!)
fi
if has pxe; then
	dnsmasq --keep-in-foreground --conf-file="$conf/dnsmasq.conf" &
	pids+=($!)
fi
if has nbd; then
	# nbd-server runs as a daemon (one child per client); its pid file tells us whom to stop
	nbd-server -C "$conf/nbd-server.conf" -p "$conf/nbd-server.pid" || die "nbd-server did not start"
fi
sleep 1
for p in "${pids[@]}"; do
	kill -0 "$p" 2>/dev/null || die "a server did not start (its messages are above)"
done
log "running (${services}): $http, boot=$mode; Ctrl-C stops"
if [ ${#pids[@]} -gt 0 ]; then
	wait -n "${pids[@]}" || true
	log "a server ended; stopping the others"
else
	while [ -f "$conf/nbd-server.pid" ] && kill -0 "$(cat "$conf/nbd-server.pid")" 2>/dev/null; do sleep 1; done
	log "nbd-server ended"
fi
exit 1

# shellcheck shell=bash
# Sourced by the network boot scenarios and bench/netboot (build host, root): a private virtual lab.
#   namespace LAB_NS      the lab's switch (bridge lab0, 10.77.0.1/24: the boot server's address) and the clients' taps;
#                         ./build.sh serve runs here
#   namespace LAB_NS-site the site's own DHCP server (dnsmasq, leasing 10.77.0.100-199, no boot options), on a veth
#                         port of the same switch: our proxyDHCP must coexist with it
# Nothing outside the two namespaces is touched; lab_down (at exit) removes them and everything in them.
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "${BASH_SOURCE[0]}")/vm.bash"

LAB_NS=lu-lab-$$
LAB_ADDR=10.77.0.1
LAB_SITE_ADDR=10.77.0.2
LAB_TAPS=0
# shellcheck disable=SC2034 # LAB_SERVE_LOG is read by the scenarios
LAB_SERVE_PID='' LAB_SERVE_LOG='' LAB_SITE_PID=''
LAB_QEMU=$VM_WORK/qemu-in-lab

lab_ns() { ip netns exec "$LAB_NS" "$@"; }

# lab_up: the namespaces, the switch, the site DHCP server.
lab_up() {
	ip netns add "$LAB_NS" || return 1
	at_exit lab_down
	ip netns add "$LAB_NS-site" || return 1
	lab_ns ip link set lo up &&
		lab_ns ip link add lab0 type bridge &&
		lab_ns ip addr add "$LAB_ADDR/24" dev lab0 &&
		lab_ns ip link set lab0 up || return 1
	# the site DHCP server's port on the switch
	lab_ns ip link add site0 type veth peer name eth0 netns "$LAB_NS-site" &&
		lab_ns ip link set site0 master lab0 up &&
		ip netns exec "$LAB_NS-site" ip addr add "$LAB_SITE_ADDR/24" dev eth0 &&
		ip netns exec "$LAB_NS-site" ip link set eth0 up &&
		ip netns exec "$LAB_NS-site" ip link set lo up || return 1
	ip netns exec "$LAB_NS-site" dnsmasq --keep-in-foreground --port=0 --interface=eth0 --bind-interfaces \
		--dhcp-range=10.77.0.100,10.77.0.199,255.255.255.0,1h --dhcp-option=option:router,"$LAB_SITE_ADDR" \
		--dhcp-leasefile="$VM_WORK/site.leases" --pid-file="$VM_WORK/site.pid" --log-facility="$VM_WORK/site.log" \
		--log-dhcp &
	LAB_SITE_PID=$!
	# qemu runs in the lab namespace: a tap is opened in the namespace it lives in
	printf '#!/bin/sh\nexec ip netns exec %s %s "$@"\n' "$LAB_NS" "$VM_QEMU" >"$LAB_QEMU" && chmod +x "$LAB_QEMU"
}

lab_down() {
	lab_serve_stop
	[ -z "$LAB_SITE_PID" ] || { kill "$LAB_SITE_PID" 2>/dev/null; wait "$LAB_SITE_PID" 2>/dev/null; }
	LAB_SITE_PID=''
	# anything still running in the namespaces (a client's qemu, a server's child) goes with them
	ip netns pids "$LAB_NS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	ip netns pids "$LAB_NS-site" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	ip netns del "$LAB_NS-site" 2>/dev/null
	ip netns del "$LAB_NS" 2>/dev/null
	return 0
}

# lab_tap: a new tap port on the switch, named in LAB_TAP (not printed: a $(...) would lose the count).
lab_tap() {
	LAB_TAP=tap$LAB_TAPS
	LAB_TAPS=$((LAB_TAPS + 1))
	lab_ns ip tuntap add dev "$LAB_TAP" mode tap && lab_ns ip link set "$LAB_TAP" master lab0 up
}

# lab_nic_args TAP MAC [ROMFILE]: the qemu arguments of a virtio NIC on TAP (ROMFILE "" = no option ROM: the
# firmware's own network stack, as OVMF's PXE; default qemu's iPXE ROM).
lab_nic_args() {
	local dev="virtio-net-pci,netdev=n0,mac=$2"
	[ "${3-default}" = default ] || dev+=",romfile=$3"
	# shellcheck disable=SC2034 # the scenarios pass it to vm_start
	LAB_NIC=(-netdev "tap,id=n0,ifname=$1,script=no,downscript=no" -device "$dev")
}

# lab_serve DIR [serve options]: ./build.sh serve in the lab (on lab0), until lab_serve_stop; waits until it runs.
lab_serve() {
	local dir=$1 i
	shift
	lab_serve_stop
	LAB_SERVE_LOG=$OUT/tests/qemu/${T_NAME}-serve.log
	mkdir -p "$(dirname "$LAB_SERVE_LOG")"
	ip netns exec "$LAB_NS" "$TOP/build.sh" serve "$dir" --interface lab0 "$@" >"$LAB_SERVE_LOG" 2>&1 &
	LAB_SERVE_PID=$!
	for i in $(seq 100); do
		grep -q 'liveunion serve: running' "$LAB_SERVE_LOG" && return 0
		kill -0 "$LAB_SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	vm_note "lab_serve: ./build.sh serve did not start:"
	sed 's/^/| /' "$LAB_SERVE_LOG" >&2
	return 1
}

# lab_access_log: the access log of the running serve's nginx (in the config directory serve names at its start).
lab_access_log() { printf '%s/access.log\n' "$(sed -n 's/.*config files in \(.*\):$/\1/p' "$LAB_SERVE_LOG")"; }

# lab_serve_stop: what Ctrl-C does to serve (it stops its servers; SIGTERM: a background job ignores SIGINT), and
# wait for it.
lab_serve_stop() {
	[ -n "$LAB_SERVE_PID" ] || return 0
	kill -TERM "$LAB_SERVE_PID" 2>/dev/null
	local i
	for i in $(seq 100); do kill -0 "$LAB_SERVE_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$LAB_SERVE_PID" 2>/dev/null
	wait "$LAB_SERVE_PID" 2>/dev/null
	LAB_SERVE_PID=''
}

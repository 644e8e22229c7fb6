# shellcheck shell=bash
# Helpers of the host tests that run the init's stacking code against a tiny ISO on a loop device, found through a
# fake /sys/class/block and /dev (init-stack.sh, init-stacker.sh). Sourced after tests/lib.sh and private_mounts.
#   stack_init NAME          $B (the build directory), $SRC, $tmp, init_srcs (the init's sources but main.c),
#                            LIVE_CFLAGS (the init's own flags, from its Makefile); mounts and loop devices under
#                            $tmp are undone at exit
#   stack_medium ISO TREE    ISO (made from TREE) attached read-only: $medium_loop, $ln, in the test's $sys and $dev; on a
#                            host kernel without iso9660, $stand_in is squashfs:LOOP of the same TREE, else empty
#   unstack                  unmount everything under $tmp, deepest first
#   stack_detach             detach the medium (and its stand-in)

# shellcheck disable=SC2034 # B, init_srcs, LIVE_CFLAGS, ln, stand_in are for the test that sources this
stack_init() {
	B=$OUT/tests/$1
	SRC=$TOP/initramfs/init
	tmp=$(mktemp -d "/tmp/$1.XXXXXX") || return 1
	medium_loop='' medium_sq_loop='' stand_in=''
	at_exit stack_cleanup
	mkdir -p "$B" || return 1
	mapfile -t init_srcs < <(printf '%s\n' "$SRC"/*.c | grep -v '/main\.c$')
	read -ra LIVE_CFLAGS <<<"$(make -s -C "$SRC" cflags)"
}

unstack() {
	local m
	# deepest first; squashfs loop devices are autoclear and go with their mounts
	for m in $(findmnt -rn -o TARGET | grep "^$tmp/" | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
}

stack_detach() {
	[ -z "$medium_loop" ] || { losetup -d "$medium_loop" && medium_loop=; }
	[ -z "$medium_sq_loop" ] || { losetup -d "$medium_sq_loop" && medium_sq_loop=; }
}

stack_cleanup() {
	local l
	unstack
	stack_detach 2>/dev/null
	# anything still pointing into $tmp (a failed run) is ours too
	for l in $(losetup -n -O NAME,BACK-FILE | awk -v t="$tmp/" 'index($2, t) == 1 {print $1}'); do
		losetup -d "$l" || true
	done
	rm -rf "$tmp"
}

# shellcheck disable=SC2034,SC2154 # ln, stand_in: read by the test; sys, dev: set by it
stack_medium() {
	local iso=$1 tree=$2
	medium_loop=$(losetup -f --show -r "$iso") || return 1
	ln=${medium_loop#/dev/}
	mkdir -p "$sys/$ln" "$dev" || return 1
	cat "/sys/class/block/$ln/size" >"$sys/$ln/size" || return 1
	ln -s "$medium_loop" "$dev/$ln" || return 1
	# Discovery always reads the real ISO. A build host whose kernel has no iso9660 (no module either) cannot
	# mount it: there the medium is a squashfs of the same tree, read-only just the same. Not a skip: what these
	# tests check is the stacking, the same on either file system; the iso9660 mount itself is checked in the
	# guest by every boot scenario (tests/qemu/lib/boot.bash: medium-is-iso9660).
	stand_in=
	grep -qw iso9660 /proc/filesystems && return 0
	modprobe -q isofs 2>/dev/null && return 0
	mksquashfs "$tree" "$iso.sqfs" -noappend -quiet -all-root >/dev/null || return 1
	medium_sq_loop=$(losetup -f --show -r "$iso.sqfs") || return 1
	stand_in=squashfs:$medium_sq_loop
	echo "# note: the host kernel has no iso9660: the medium is a squashfs stand-in of the same tree"
}

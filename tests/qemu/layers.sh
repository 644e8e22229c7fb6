#!/usr/bin/env bash
# summary: stacked layers: a layer made from an overlay upper deletes (whiteout), hides (opaque dir) and replaces files of the layers below; live.layers=-name leaves it out; the init prints the stack bottom to top; 50 small layers boot
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"

iso=$OUT/tests/layers.iso
iso50=$OUT/tests/layers50.iso
L=$MDIR/layers

# The layer directories, as a profile would name them. 20-del is what an overlay upper holds after
# rm /etc/motd, rm -rf /opt/a && mkdir /opt/a, and a new /etc/issue over 10-base + 15-stuff:
# made here through the host kernel's overlayfs, so whiteouts and the opaque marker are its own.
# shellcheck disable=SC2317,SC2016 # runs through require; the inner script expands its own arguments
make_layers() {
	mkdir -p "$L/15-stuff/opt/a" "$L/15-stuff/etc" "$L/lower10" "$L/20-del" "$L/work" "$L/merged" &&
		echo x >"$L/15-stuff/opt/a/x" && echo y >"$L/15-stuff/opt/a/y" && echo stuff >"$L/15-stuff/etc/stuff" &&
		unshare -m --propagation private sh -euc '
			mount -o loop,ro -t squashfs "$2" "$1/lower10"
			mount -t overlay overlay -o "lowerdir=$1/15-stuff:$1/lower10,upperdir=$1/20-del,workdir=$1/work" "$1/merged"
			rm "$1/merged/etc/motd"
			rm -rf "$1/merged/opt/a" && mkdir "$1/merged/opt/a" && echo z >"$1/merged/opt/a/z"
			echo "replaced by 20-del" >"$1/merged/etc/issue"
			umount "$1/merged" "$1/lower10"' sh "$L" "$OUT/rootfs/10-base.squashfs"
}

require layer-dirs-made make_layers
check upper-has-whiteout test "$(stat -c %F:%t:%T "$L/20-del/etc/motd")" = "character special file:0:0"
check upper-has-opaque-dir test "$(getfattr --only-values -n trusted.overlay.opaque "$L/20-del/opt/a" 2>/dev/null)" = y
require test-iso-built "$TOP/build.sh" iso-with "$iso" "$L/15-stuff" "$L/20-del"

# Both menus vouch for every layer (the medium itself never does).
menus=$(iso_menu_lines "$iso")
hashes='live\.verify=10-base:[0-9a-f]{64},15-stuff:[0-9a-f]{64},20-del:[0-9a-f]{64}( |$)'
check both-menus-carry-three-root-hashes test "$(grep -cE "$hashes" <<<"$menus")" = 6
check medium-has-hash-trees sh -c "xorriso -indev '$iso' -find /live -name '*.verity' 2>/dev/null | grep -c verity | grep -qx 3"

require qemu-starts vm_start layers cd-bios "$iso"
require login vm_login
check stack-printed-bottom-to-top log_has '^liveunion: stack, bottom to top \(3 layer\(s\), dm-verity\): 10-base 15-stuff 20-del'
check motd-in-10-base vm_run 'test -f /run/live/layers/10-base/etc/motd'
check motd-deleted-by-20 vm_none 'test ! -e /etc/motd && ls -1a /etc' '^motd$'
check opaque-dir-lower-has-x-y vm_fact 'ls /run/live/layers/15-stuff/opt/a | tr "\n" " "' 'x y '
check opaque-dir-merged vm_fact 'ls -a /opt/a | tr "\n" " "' '. .. z '
check issue-replaced vm_fact 'cat /etc/issue' 'replaced by 20-del'
check 15-stuff-seen vm_fact 'cat /etc/stuff' stuff
check plan-lists-layers vm_run 'grep -x "layers=10-base,15-stuff,20-del" /run/live/plan'
check every-layer-through-dm-verity vm_fact 'grep -c " /run/live/layers/[^ ]* squashfs ro" /proc/mounts; grep -c "^/dev/dm-[0-9]* /run/live/layers/" /proc/mounts' $'3\n3'
vm_stop

# live.layers=-20-del: the deleted and hidden files are back; the exclusion is said.
# loglevel=4: the kernel's info lines on the serial console cannot cut into the lines checked below
require qemu-starts-without-20 vm_start layers-minus-20 cd-bios "$iso" --keys "live.layers=-20-del loglevel=4"
require login-without-20 vm_login
check exclusion-said log_has '^liveunion: live.layers=-20-del leaves out: 20-del'
check stack-without-20 log_has '^liveunion: stack, bottom to top \(2 layer\(s\), dm-verity\): 10-base 15-stuff$'
check motd-back vm_run 'test -f /etc/motd'
check opaque-gone vm_fact 'ls /opt/a | tr "\n" " "' 'x y '
check issue-not-replaced vm_none 'cat /etc/issue' 'replaced by 20-del'
vm_stop

# Fifty layers: 10-base and 49 small ones (11..59), each adding /layers/NN; the top one's /etc/who wins.
# No root hashes: 50 of them do not fit on a kernel command line (the build refuses, checked below).
want=10-base dirs=()
for i in $(seq 11 59); do
	mkdir -p "$L/50/$i-l$i/layers" "$L/50/$i-l$i/etc"
	echo "$i" >"$L/50/$i-l$i/layers/$i"
	echo "layer$i" >"$L/50/$i-l$i/etc/who"
	dirs+=("$L/50/$i-l$i")
	want="$want $i-l$i"
done
# shellcheck disable=SC2317 # runs through check
refused() { ! "$TOP/build.sh" iso-with "$OUT/tests/layers50-verity.iso" "${dirs[@]}" >"$MDIR/refused" 2>&1 &&
	grep -q 'more than the kernel command line holds' "$MDIR/refused"; }
check fifty-hashes-refused refused
require test-iso-50-built env ISO_VERITY=0 "$TOP/build.sh" iso-with "$iso50" "${dirs[@]}"
require qemu-starts-50 vm_start layers50 cd-bios "$iso50" --keys loglevel=4
require login-50 vm_login
check fifty-printed-bottom-to-top log_has "^liveunion: stack, bottom to top \\(50 layer\\(s\\), unverified\\): $want\$"
check unverified-warning log_has '^liveunion: WARNING: no live.verify= root hashes'
check fifty-mounted vm_fact 'grep -c " /run/live/layers/[^ ]* squashfs ro" /proc/mounts' 50
check fifty-lowers-on-root vm_fact "grep ' / overlay ' /proc/mounts | tr ',' '\\n' | grep -c '^lowerdir+=/run/live/layers/'" 50
check every-layer-file vm_fact 'ls /layers | wc -l' 49
check top-layer-wins vm_fact 'cat /etc/who' layer59
check base-under-fifty vm_run 'test -x /bin/busybox && test -f /etc/motd'
vm_stop
rm -f "$OUT/tests/layers50-verity.iso"
finish

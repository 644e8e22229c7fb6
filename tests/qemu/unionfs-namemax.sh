#!/usr/bin/env bash
# summary: kernel/patches/0001 and 0002 in the guest: getconf NAME_MAX / prints 255 (not squashfs' 256), a 255-byte name is created on /, a 256-byte one fails ENAMETOOLONG, as does every call on a missing 256-byte name (ENOENT/EPERM unpatched), a 256-byte lower name still reads; one st_dev on /, st_ino kept by copy-up
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"

getconf=/usr/lib/liveunion/getconf # from the 90-conformance layer: the busybox live root has no getconf
n255=$(printf 'n%.0s' $(seq 255))
long=$(printf 'L%.0s' $(seq 256)) # made by tests/conformance/mklayer.sh in the squashfs layer

# shellcheck disable=SC2317 # runs through check
all_same() { [ "$(printf '%s\n' "$VM_OUT" | sort -u | wc -l)" -eq 1 ]; }

require test-iso-built conformance_iso
require qemu-starts vm_start unionfs-namemax cd-bios "$CONFORMANCE_ISO"
require login vm_login
check getconf-name-max-root-is-255 vm_fact "$getconf NAME_MAX /" 255
# The two sides of the bug: squashfs takes 256-byte names, the tmpfs that receives every new name 255.
check squashfs-layer-is-256 vm_fact "$getconf NAME_MAX /run/live/layers/10-base" 256
check tmpfs-upper-is-255 vm_fact "$getconf NAME_MAX /run/live/upper/upper" 255
check busybox-stat-f-is-255 vm_fact "stat -f -c %l /" 255
check create-255-byte-name vm_run "touch /root/$n255 && test -f /root/$n255 && test -f /run/live/upper/upper/root/$n255"
check create-256-byte-name-fails fails vm_run "touch /root/${n255}n"
check create-256-error-is-ENAMETOOLONG out_has 'File name too long'
check no-256-byte-name-created fails vm_run "ls /root/${n255}n"
check lower-256-byte-name-content vm_fact "cat /srv/unionconf/$long" long
check lower-256-byte-name-listed-once vm_fact "ls /srv/unionconf | grep -cx '$long'" 1
# kernel/patches/0002: a 256-byte name that no layer holds is too long for every call, as on tmpfs or ext4; an
# unpatched overlayfs says ENOENT (it checks names against squashfs' 256) and EPERM for mknod c 0 0 (the whiteout
# check ran first). Each busybox command prints the errno's text.
missing=/root/$(printf 'M%.0s' $(seq 256))
for call in "chmod:chmod 600 $missing" "chown:chown 1 $missing" "lchown:chown -h 1 $missing" \
	"truncate:truncate -s 0 $missing" "unlink:unlink $missing" "rmdir:rmdir $missing" "link:ln $missing /root/t" \
	"rename:mv $missing /root/t" "mknod-fifo:mknod $missing p" "mknod-whiteout:mknod $missing c 0 0"; do
	check "missing-256-${call%%:*}-fails" fails vm_run "${call#*:}"
	check "missing-256-${call%%:*}-ENAMETOOLONG" out_has 'File name too long'
done
check missing-256-nothing-created vm_fact 'ls -a /root /run/live/upper/upper/root | grep -c "^MMM\|^t$"; true' 0

# xino=on (the init's option): one st_dev for a lower file, a copied-up file, a merged directory, a new file and /.
vm_run 'stat -c %i /etc/profile'
ino_before=$VM_OUT
check st_dev-one-for-the-whole-root vm_run 'chmod 600 /etc/profile && mkdir -p /etc/new-dir && touch /etc/new-file &&
stat -c %d / /etc /etc/passwd /etc/profile /etc/new-dir /etc/new-file /bin/busybox'
check st_dev-all-equal all_same
check copied-up-file-is-in-upper vm_run 'test -f /run/live/upper/upper/etc/profile && test ! -e /run/live/upper/upper/etc/passwd'
vm_run 'stat -c %i /etc/profile'
check copy-up-keeps-st_ino test -n "$ino_before" -a "$VM_OUT" = "$ino_before"
vm_stop
finish

#!/usr/bin/env bash
# summary: live.persist.paths=/home,/var/lib/app (and the store's paths file): only those directories survive reboot, the rest of / is volatile; a full store is announced; a path whose upper in the store is a symbolic link out of it is refused, said
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img tag=$$
require stick-made make_stick "$img" --persist-size 32M
require boot1 vm_start persist-paths stick-bios "$img" --keys "live.persist.paths=/home,/var/lib/app,/root,/proc/x"
require login1 vm_login
check said-home-persists log_has 'liveunion: persistence: /home persists \(store store/liveunion-v1/paths/home\)'
check said-app-persists log_has 'liveunion: persistence: /var/lib/app persists'
check bad-path-named log_has "liveunion: persistence: live.persist.paths: ignored .*'/proc/x'"
check result-names-paths vm_run "grep -x 'persist.result=store .*, only /home,/var/lib/app,/root' /run/live/plan"
# a persistent directory keeps the owner and mode of the directory it covers (/root is 0700 in 10-base)
check root-mode-kept vm_fact "stat -c %a:%u /root /var/lib/app" "700:0"$'\n'"755:0"
check root-upper-is-tmpfs vm_run "grep ' /run/live/upper tmpfs ' /proc/mounts"
check home-is-own-overlay vm_run "grep ' /home overlay ' /proc/mounts"
check modify vm_run "echo home-$tag >/home/kept && echo etc-$tag >/etc/kept && echo app-$tag >/var/lib/app/data && rm /etc/shells && sync"
require reboot1 vm_reboot
check root-still-700 vm_fact "stat -c %a /root" 700
check home-file-kept vm_fact "cat /home/kept /var/lib/app/data" "home-$tag"$'\n'"app-$tag"
check etc-file-gone vm_run "test ! -e /etc/kept && test -e /etc/shells"
# the store's own list applies when the command line names none
check write-paths-file vm_run "printf '/home\n/etc\n' >/run/live/store/liveunion-v1/paths.conf && sync"
require poweroff1 vm_poweroff
require boot2 vm_start persist-paths stick-bios "$img" --direct
require login2 vm_login
check paths-file-used log_has 'liveunion: persistence: /etc persists'
check etc-write vm_run "echo etc2-$tag >/etc/kept2 && sync"
check home-still-kept vm_fact "cat /home/kept" "home-$tag"
# the store, a file system of its own here (the root upper is tmpfs), filling up is announced too
check store-fill-fails fails vm_run "dd if=/dev/zero of=/home/big bs=1M count=64" 60
check store-fill-says-enospc out_has 'No space left on device'
check store-full-announced vm_wait 'liveunion: the persistence store /run/live/store is FULL: writes to the persistent directories now fail' 30
check store-freed vm_run "rm /home/big && sync"
check store-back-said vm_wait 'liveunion: the persistence store /run/live/store is back to [0-9]+% used' 30
check tmpfs-upper-not-called-full log_lacks 'the upper layer /run/live/upper is FULL'
require poweroff2 vm_poweroff
check store-clean store_fsck "$img"
check store-unmounted-cleanly store_clean
check etc-file-in-store store_file_is /liveunion-v1/paths/etc/upper/kept2 "etc2-$tag"

# Whoever can write the stick makes a path's directory in the store a symbolic link out of it (here to /run: its
# upper and work would be made there, on one file system, outside the store, and what a profile does to /srv, e.g.
# the kiosk's chown of its data directory, done to them; a build without the check mounts it so): that path is not
# made persistent, said; the others still are.
# shellcheck disable=SC2317 # called through require
symlinked() {
	store_copy "$img" &&
		debugfs -w -R 'symlink liveunion-v1/paths/srv /run' "$PDIR/store.fsck" >/dev/null 2>&1 &&
		debugfs -R 'stat liveunion-v1/paths/srv' "$PDIR/store.fsck" 2>/dev/null | grep -q 'Type: symlink' &&
		store_put "$img"
}
require upper-symlinked symlinked
require boot3 vm_start persist-paths stick-bios "$img" --keys "live.persist.paths=/srv,/home"
require login3 vm_login
check symlink-refused-said log_has 'liveunion: persistence: /srv is NOT persistent: .*outside the store'
check symlink-not-mounted vm_none 'cat /proc/mounts' ' /srv overlay '
check symlink-others-persist vm_fact "cat /home/kept" "home-$tag"
require poweroff3 vm_poweroff
finish

#!/bin/sh
# shellcheck disable=SC2154 # root and NEWROOT: set by dracut's init, which sources this hook
# dracut mount hook (boot time, sourced by dracut's init without systemd; with systemd, sysroot.mount from
# dracut-liveunion-generator does this): the stacker leaves the root at $NEWROOT, else its report is on the
# console and dracut's emergency shell follows.
if [ "$root" = liveunion ] && ! ismounted "$NEWROOT"; then
	if ! liveunion-stack --root "$NEWROOT"; then
		emergency_shell -n liveunion "liveunion: no live root at $NEWROOT (the stacker's report is above)"
	fi
fi

#!/bin/sh
# shellcheck disable=SC2034 # rootok is read by dracut's init after the cmdline hooks
# dracut cmdline hook (boot time, sourced by dracut's init or dracut-cmdline.service): root=liveunion is ours.
# The live.* keys are read by the stacker itself.
[ -z "$root" ] && root=$(getarg root=)
if [ "$root" = liveunion ]; then
	rootok=1
	info "liveunion: the root is stacked by liveunion-stack (live.* keys)"
fi

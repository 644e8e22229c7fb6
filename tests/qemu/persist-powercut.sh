#!/usr/bin/env bash
# summary: power cut ten times in a row on one stick while the guest writes and syncs numbered files: every boot succeeds on the store, e2fsck finds it consistent, every synced file is there with its content
# shellcheck source=tests/qemu/lib/persist.bash
. "$(dirname "$0")/lib/persist.bash"
img=$PDIR/stick.img
ROUNDS=${POWERCUT_ROUNDS:-10}
require stick-made make_stick "$img" --persist-size 64M
declare -A synced # boot number -> last file reported synced

# The guest's writer: file N of boot K holds its own name and 2 KiB of text; after sync it reports N on the console.
writer() {
	# shellcheck disable=SC2016 # expanded by the guest shell
	printf '%s' 'mkdir -p /home/pc && (pad=$(head -c 1536 /dev/zero | tr "\0" x); i=0; while :; do i=$((i+1)); '"printf 'boot $1 file %d %s\n' \$i \$pad >/home/pc/$1-\$i && sync && echo \"@@SYNCED $1 \$i@@\" >/dev/console; done"') </dev/null >/dev/null 2>&1 &'
}

# expect_files: the guest has every file every earlier boot reported synced, each with its content.
# shellcheck disable=SC2317 # called through check
expect_files() {
	local k list=''
	for k in "${!synced[@]}"; do list="$list $k:${synced[$k]}"; done
	# shellcheck disable=SC2016 # expanded by the guest shell
	vm_run 'pad=$(head -c 1536 /dev/zero | tr "\0" x); bad=0; for kn in '"$list"'; do k=${kn%:*}; n=${kn#*:}; i=1; while [ $i -le $n ]; do
		line=; read -r line </home/pc/$k-$i 2>/dev/null; [ "$line" = "boot $k file $i $pad" ] || { echo "missing or wrong: $k-$i"; bad=1; }
		i=$((i+1)); done; done; [ $bad = 0 ]' 300
}

for r in $(seq 1 "$ROUNDS"); do
	require "boot-$r" vm_start persist-powercut stick-bios "$img" --direct
	require "login-$r" vm_login
	check "store-used-$r" log_has 'liveunion: persistence: store /dev/sd[a-z]3 \(LABEL=liveunion-rw\), ext4'
	[ "$r" -gt 1 ] && check "synced-files-survived-cut-$((r - 1))" expect_files
	require "writer-starts-$r" vm_send "$(writer "$r")"
	require "first-sync-$r" vm_wait "@@SYNCED $r 1@@" 60
	delay=$((RANDOM % 3000 + 300))
	vm_note "round $r: power cut after ${delay} ms more of writing"
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	vm_powercut
	synced[$r]=$(tr -d '\r' <"$VM_LOG" | sed -n "s/^@@SYNCED $r \([0-9]*\)@@\$/\1/p" | tail -n 1)
	vm_note "round $r: files 1..${synced[$r]} were synced before the cut"
	check "wrote-before-cut-$r" test "${synced[$r]:-0}" -ge 1
done
require boot-last vm_start persist-powercut stick-bios "$img" --direct
require login-last vm_login
check store-used-last log_has 'liveunion: persistence: store /dev/sd[a-z]3 \(LABEL=liveunion-rw\), ext4'
check all-synced-files-there expect_files
require poweroff-last vm_poweroff
check store-consistent store_fsck "$img"
check store-clean-after-poweroff store_clean
finish

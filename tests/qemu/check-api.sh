#!/usr/bin/env bash
# summary: the public scenario API's own calls (tests/qemu/lib/check.bash) on the tiny ISO: vm_boot --stick --write-log, a power cut between two synced files and powercut_disk: the stick as the cut left it at the first point has the first file and not the second, and boots; a disk plugged and pulled while running appears and goes; a screenshot with a pixel check that holds and one that does not
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
# shellcheck source=tests/qemu/lib/check.bash
. "$(dirname "$0")/lib/check.bash"
stick=$CHECK_TMP/stick.img cut=$CHECK_TMP/cut.img plug=$CHECK_TMP/plug.img
require stick-made make_stick "$stick" --persist-size 32M
require booted-with-write-log vm_boot --stick "$stick" --write-log
require login vm_login
check store-in-use log_has 'liveunion: persistence: store /dev/sd[a-z]3'
check first-file-synced vm_run 'echo first >/home/first && sync'
require point-after-first powercut_point after-first
check second-file-synced vm_run 'echo second >/home/second && sync'
require point-after-second powercut_point after-second
check second-point-is-later test "${POWERCUT_AT[after-second]}" -gt "${POWERCUT_AT[after-first]}"

truncate -s 16M "$plug"
check no-second-disk-yet vm_none 'ls /sys/block' '^sdb$'
check disk-plugged vm_disk_plug extra "$plug"
check plugged-disk-appears vm_fact 'for i in $(seq 100); do [ -e /sys/block/sdb ] && break; sleep 0.2; done; cat /sys/block/sdb/size' 32768
check disk-pulled vm_disk_pull extra
check pulled-disk-goes vm_run 'for i in $(seq 100); do [ -e /sys/block/sdb ] || break; sleep 0.2; done; test ! -e /sys/block/sdb'

check screenshot screen_shot check-api-console
check screenshot-png-kept test -s "$SCREEN_PNG_DIR/check-api-console.png"
check screen-corner-is-black screen_is "$SCREEN_LAST" 0,0=000000
check screen-corner-is-not-white fails screen_is "$SCREEN_LAST" 0,0=ffffff

vm_powercut
require disk-at-first-point powercut_disk after-first "$cut"
check cut-stick-differs-from-final fails cmp -s "$cut" "$stick"
require cut-stick-boots vm_boot --stick "$cut" --name check-api-cut
require login-on-cut-stick vm_login
check first-file-survived-the-cut vm_fact 'cat /home/first' first
check second-file-not-there vm_run 'test ! -e /home/second'
vm_stop
finish

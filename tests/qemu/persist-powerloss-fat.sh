#!/usr/bin/env bash
# summary: power loss that loses the volatile cache, store liveunion-rw.img on its FAT32 partition (used in place): every write and flush the guest sends to the stick is logged (qemu blklogwrites) while it creates, overwrites, renames, unlinks, copies up and saves a layer, syncing after each; the host replays the log to every flush point and to seeded points between flushes with unflushed writes dropped: each store copy replays its journal, e2fsck -fn finds nothing, every file synced before the point is there with its content; no write lands outside the store; a crash image boots with no e2fsck repair, and so does one taken during the store's first set-up
PL_KIND=fat
# shellcheck source=tests/qemu/lib/powerloss.bash
. "$(dirname "$0")/lib/powerloss.bash"

#!/usr/bin/env bash
# summary: power loss that loses the volatile cache, store inside a LUKS2 container on partition 3 (./build.sh usb --encrypt), unlocked by the init with dm-crypt: every write and flush the guest sends to the stick (ciphertext) is logged (qemu blklogwrites) while it creates, overwrites, renames, unlinks, copies up and saves a layer, syncing after each; the host decrypts each replayed crash point (every flush point, seeded points between flushes with unflushed writes dropped) with the volume key from the header: the store replays its journal, e2fsck -fn finds nothing, every file synced before the point is there with its content; the header and everything outside the data segment are never written; a crash image unlocks and boots with no e2fsck repair, and so does one taken during the store's first set-up
PL_KIND=luks
# shellcheck source=tests/qemu/lib/powerloss.bash
. "$(dirname "$0")/lib/powerloss.bash"

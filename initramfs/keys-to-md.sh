#!/bin/sh
# Build host: turns `init --help-keys` (the init's one key table) into the Markdown table in docs/boot.md.
#   initramfs/keys-to-md.sh out/initramfs/init
set -eu
"$1" --help-keys | awk -F'\t' 'NR == 1 { print "| key | type | default | meaning |"; print "| --- | --- | --- | --- |"; next }
	{ gsub(/\|/, "\\|", $4); printf "| `%s` | %s | `%s` | %s |\n", $1, $2, $3, $4 }'

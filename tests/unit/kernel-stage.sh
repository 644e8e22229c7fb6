#!/usr/bin/env bash
# summary: the kernel stage stops with the patch and file names when a patch does not apply, and names every
# fragment option that olddefconfig dropped; a clean tree takes the whole series.
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
work=$(mktemp -d)
at_exit "rm -rf '$work'"

# The stage functions, with build.sh's die/log, in a subshell per case so die's exit stays contained.
stage() {
	(
		OUT=$work/out
		# shellcheck disable=SC2317 # called by the sourced stage functions
		log() { :; }
		# shellcheck disable=SC2317 # called by the sourced stage functions
		die() { printf 'DIE %s\n' "$*"; exit 1; }
		# shellcheck source=kernel/kernel.sh
		. "$TOP/kernel/kernel.sh"
		"$@"
	) 2>&1
}

# A tree holding exactly the files the series touches, taken from the real source.
series=()
while read -r p; do
	case "$p" in '' | '#'*) ;; *) series+=("$p") ;; esac
done <"$TOP/kernel/patches/series"
mapfile -t files < <(cd "$TOP/kernel/patches" && sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "${series[@]}" | sort -u)
src=$(find "$TOP/out/kernel" -maxdepth 1 -name 'src-*' -type d 2>/dev/null | head -n 1)
src=${src:+$src/}
if [ -z "$src" ]; then
	mkdir -p "$work/orig"
	tar -xf /usr/src/linux-source-6.12.tar.xz -C "$work/orig" --strip-components=1 "${files[@]/#/linux-source-6.12/}"
	src=$work/orig/
fi
for f in "${files[@]}"; do
	mkdir -p "$work/good/$(dirname "$f")" && cp "$src$f" "$work/good/$f"
done
# The unpatched files: reverse the series, last patch first, on a copy when the cached tree is already patched.
for ((i = ${#series[@]} - 1; i >= 0; i--)); do
	# -f, not --batch: --batch takes a patch that only applies forward for a reversed one and applies it forward,
	# which patched the pristine files of a tree with no cached kernel source (out/kernel/src-* gone)
	if patch -s -R -f -d "$work/good" -p1 --dry-run <"$TOP/kernel/patches/${series[i]}" >/dev/null 2>&1; then
		patch -s -R -f -d "$work/good" -p1 <"$TOP/kernel/patches/${series[i]}"
	fi
done
cp -a "$work/good" "$work/broken"
sed -i 's/buf->f_namelen = ofs->namelen;/buf->f_namelen = 255;/' "$work/broken/fs/overlayfs/super.c"

out=$(stage kernel_apply_patches "$work/good")
if grep -q 'stays the limit for lookups only' "$work/good/fs/overlayfs/super.c" &&
	grep -q 'upper_namelen' "$work/good/fs/overlayfs/namei.c" && grep -q 'squashfs_set_uuid' "$work/good/fs/squashfs/super.c" &&
	no_line DIE <<<"$out"; then
	ok "series applies to the Debian 6.12 source"
else
	bad "series applies to the Debian 6.12 source: $out"
fi

cp "$work/broken/fs/overlayfs/super.c" "$work/broken-before"
out=$(stage kernel_apply_patches "$work/broken")
if grep -q 'DIE patch 0001-ovl-statfs-upper-namelen.patch does not apply' <<<"$out" &&
	grep -q 'fs/overlayfs/super.c' <<<"$out"; then
	ok "a patch that does not apply stops the build naming the patch and the file"
else
	bad "a patch that does not apply stops the build naming the patch and the file: $out"
fi
if cmp -s "$work/broken/fs/overlayfs/super.c" "$work/broken-before" &&
	[ -z "$(find "$work/broken" -name '*.rej' -o -name '*.orig')" ]; then
	ok "a failing patch leaves the tree as it was (no half-applied file, no .rej)"
else
	bad "a failing patch leaves the tree as it was (no half-applied file, no .rej)"
fi

# Config check: a .config that lost one requested option, and one that kept everything.
cfg=$work/config
cat "$TOP"/configs/kernel/*.config | grep '^CONFIG_' >"$cfg"
out=$(stage kernel_check_config "$cfg")
if [ -z "$out" ]; then ok "a config with every requested option passes"; else bad "a config with every requested option passes: $out"; fi
sed -i '/^CONFIG_SQUASHFS=y/d' "$cfg"
out=$(stage kernel_check_config "$cfg")
if grep -q 'CONFIG_SQUASHFS=y (from 20-filesystems.config' <<<"$out" && grep -q 'DIE 1 kernel option' <<<"$out"; then
	ok "a dropped option (CONFIG_SQUASHFS) is named with its fragment"
else
	bad "a dropped option (CONFIG_SQUASHFS) is named with its fragment: $out"
fi

finish

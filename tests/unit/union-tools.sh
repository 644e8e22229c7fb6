#!/bin/bash
# End-to-end host tests of `liveunion changes`, `flatten` and `status`: a base of
# two layers and a persistence store, as directories and as squashfs/ext4 images.
# Runs as root inside a private mount namespace; writes only a temp dir.
set -e
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
umask 022
LU=$OUT/liveunion/liveunion
needs_root 0/0 whiteouts, trusted.* xattrs, mounts
[ -n "${LIVEUNION_TEST_NS:-}" ] || make -s -C "$TOP/liveunion" OUT="$OUT" >/dev/null
private_mounts "$@"
T=$(mktemp -d)
mount -t tmpfs t "$T"
at_exit "cd /; umount -R -l '$T'; rmdir '$T'"
setx() { python3 -c 'import os,sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode(), follow_symlinks=False)' "$@"; }
tree_sum() { # a listing of a tree with content hashes (directory sizes and
	# sub-second times differ between filesystems, squashfs keeps seconds)
	(cd "$1" && { find . ! -type d -printf '%p %y %m %U %G %s %Ts %l\n'
		find . -type d -printf '%p %y %m %U %G %Ts\n'; } | sort &&
		find . -type f -print0 | sort -z | xargs -0r sha256sum)
}

cd "$T"
mkdir -p l1/etc l1/usr/bin l1/var/old l1/keep l0/etc S/upper S/work
echo root >l1/etc/passwd; echo hosts >l1/etc/hosts; echo tool >l1/usr/bin/tool
echo x >l1/var/old/x; echo k >l1/keep/k; ln -s etc/hosts l1/link; echo issue >l0/etc/issue
echo sh >l1/usr/bin/sh; ln l1/usr/bin/sh l1/usr/bin/ash; mknod l1/null c 1 3
echo name >l1/etc/hostname; setx l1/etc/hostname user.note base
U=S/upper
mkdir -p $U/etc $U/usr/bin $U/var/old $U/newdir
echo hosts2 >$U/etc/hosts; touch -d @1000000000 $U/etc/hosts
cp -a l1/etc/passwd $U/etc/passwd; chmod 444 $U/etc/passwd
mknod $U/usr/bin/tool c 0 0
echo new >$U/new.txt; echo a >$U/newdir/a
setx $U/var/old trusted.overlay.opaque y; echo fresh >$U/var/old/fresh
echo nowfile >$U/keep
ln -s etc/issue $U/link
touch -r l1/etc $U/etc; touch -r l1/usr/bin $U/usr/bin; touch -r l1/usr $U/usr
before=$(tree_sum l0; tree_sum l1; tree_sum S)

cat >want.txt <<'W'
added     /new.txt
added     /newdir/
added     /newdir/a
deleted   /usr/bin/tool
deleted   /var/old/x
modified  /etc/hosts (content,metadata)
modified  /etc/passwd (metadata)
modified  /link (content)
replaced  /keep (was a directory)
replaced  /var/old/ (opaque directory)
added     /var/old/fresh
W
sort want.txt >want.sorted
"$LU" changes S --lower l0 l1 >got.txt 2>err.txt || true
sort got.txt >got.sorted
if diff -u want.sorted got.sorted; then ok "changes lists added, modified, deleted, replaced"
else bad "changes lists added, modified, deleted, replaced"; cat err.txt; fi
"$LU" changes --machine S --lower l0 l1 >machine.txt
check "changes --machine: 4 tab-separated fields" \
	awk -F'\t' 'NF != 4 { bad = 1 } END { exit bad || NR != 11 }' machine.txt
check "changes --machine names kind and type" grep -qP '^deleted\tf\t/usr/bin/tool\t$' machine.txt
check "store root and its upper/ give the same answer" \
	sh -c "'$LU' changes S/upper --lower l0 l1 | sort | cmp -s - got.sorted"

# a directory renamed in the live system: overlayfs leaves a redirect and a whiteout
mkdir -p R/upper R/work R/upper/srv2; mknod R/upper/keep c 0 0
setx R/upper/srv2 trusted.overlay.redirect /keep
"$LU" changes R --lower l0 l1 | sort >ren.txt
printf 'added     /srv2/\nadded     /srv2/k\ndeleted   /keep/\n' >ren.want
if diff -u ren.want ren.txt; then ok "changes follows a redirect (renamed directory)"
else bad "changes follows a redirect (renamed directory)"; fi
mkdir plain; echo z >plain/z
if "$LU" changes plain --lower l0 l1 >/dev/null 2>refuse.txt; then bad "refuses a non-overlay upper"
else check "refuses a non-overlay upper, saying why" grep -q "does not look like an overlay upper" refuse.txt; fi
check "--assume-upper accepts it" sh -c "'$LU' changes --assume-upper plain --lower l0 l1 | grep -q '^added     /z$'"

truncate -s 8M fat.img; mkdir fat
# the kernel's vfat, else (a kernel without it, as on this project's CI machine) fusefat: the refusal must hold for
# both, since FUSE drivers (exfat-fuse, ntfs-3g) are how many systems mount such sticks
if ! command -v mkfs.vfat >/dev/null || ! mkfs.vfat -n FAT fat.img >/dev/null ||
	{ ! mount -o loop fat.img fat 2>/dev/null && ! fusefat -o rw+ fat.img fat 2>/dev/null; }; then
	skip fat-refusals "no mkfs.vfat, or neither vfat in this kernel nor fusefat (apt-get install fusefat)"
else
	ok "FAT mounted ($(awk '$2 ~ /\/fat$/ { print $3 }' /proc/mounts))"
	mkdir fat/upper fat/work
	if "$LU" changes fat --lower l0 l1 >/dev/null 2>fat.err; then bad "refuses an upper on FAT"
	else check "refuses an upper on FAT, saying why" grep -q "FAT" fat.err; fi
	if "$LU" flatten fat/upper l1 -o fatflat 2>fat.err; then bad "flatten refuses a FAT layer"
	else check "flatten refuses a FAT layer" grep -q "not an overlay layer" fat.err; fi
	umount fat
fi

# the same inputs as images
# mksquashfs stamps SOURCE_DATE_EPOCH (exported by build.sh) on every inode: not on a fixture
env -u SOURCE_DATE_EPOCH mksquashfs l1 l1.squashfs -quiet -no-progress >/dev/null
truncate -s 16M store.img
mkfs.ext4 -q -d S store.img
isum=$(sha256sum l1.squashfs store.img)
"$LU" changes store.img --lower l0 l1.squashfs 2>err.txt | sort >img.sorted || true
if cmp -s img.sorted got.sorted; then ok "changes on ext4 store image + squashfs layer"
else bad "changes on ext4 store image + squashfs layer"; diff want.sorted img.sorted; cat err.txt; fi
check "no loop device left behind" absent "$T" losetup -a
# an image of a plain tree is no upper, whatever lies beside its mount point
# (/tmp/work here, on a /tmp of this namespace only)
# (the command runs from a copy in this directory: $LU itself may lie under /tmp, as in a clone made there)
cp "$LU" ./lu-copy
mount -t tmpfs private-tmp /tmp; mkdir /tmp/work
if ./lu-copy changes l1.squashfs --lower l0 >/dev/null 2>refuse.txt; then bad "refuses a squashfs of a plain tree as the upper"
else check "refuses a squashfs of a plain tree as the upper" grep -q "an image with no upper/" refuse.txt; fi
umount /tmp

# flatten: directory and squashfs outputs against the kernel's own merge
mkdir m
mount -t overlay o -o "lowerdir=$T/S/upper:$T/l0:$T/l1,xino=on,redirect_dir=follow" m
"$LU" flatten S l0 l1 -o flat
check "flatten to a directory equals the kernel's merge" diff <(tree_sum m) <(tree_sum flat)
check "flatten keeps hard links" test "$(stat -c %i flat/usr/bin/sh)" = "$(stat -c %i flat/usr/bin/ash)"
check "flatten keeps device nodes" test "$(stat -c %F:%t:%T flat/null)" = "character special file:1:3"
check "flatten keeps user xattrs" test "$(python3 -c 'import os; print(os.getxattr("flat/etc/hostname", "user.note").decode())')" = base
check "flatten drops overlay's own xattrs" absent 'trusted\.overlay' python3 -c 'import os; print("\n".join(os.listxattr("flat/var/old")))'
# a reproducible build sets SOURCE_DATE_EPOCH: it dates the image, never the files in it
SOURCE_DATE_EPOCH=1700000000 "$LU" flatten S l0 l1.squashfs -o out.squashfs
mkdir sq; mount -o loop,ro out.squashfs sq
check "flatten to squashfs equals the kernel's merge" diff <(tree_sum m) <(tree_sum sq)
check "flatten dates the squashfs from SOURCE_DATE_EPOCH" \
	sh -c "unsquashfs -s out.squashfs | grep -q 'time Tue Nov 14 22:13:20 2023'"
umount sq
"$LU" flatten store.img l0 l1.squashfs -o flat-img
check "flatten of an ext4 store image + squashfs layer equals the kernel's merge" diff <(tree_sum m) <(tree_sum flat-img)
# without root trusted.* xattrs are unreadable: use a store marked the userxattr way
chmod 755 "$T"; mkdir nob; chown nobody nob
cp -a S S2
python3 -c 'import os; os.removexattr("S2/upper/var/old", "trusted.overlay.opaque")'
setx S2/upper/var/old user.overlay.opaque y
cp -a l1 l1b   # pseudo definitions cannot carry xattrs: a layer without them
python3 -c 'import os; os.removexattr("l1b/etc/hostname", "user.note")'
if setpriv --reuid=nobody --regid=nogroup --clear-groups "$LU" flatten S2 l0 l1 -o nob/x.squashfs 2>nob.err; then
	bad "flatten without root reports xattrs it cannot keep"
else check "flatten without root reports xattrs it cannot keep" grep -q "xattrs" nob.err; fi
if setpriv --reuid=nobody --regid=nogroup --clear-groups "$LU" flatten --userxattr S2 l0 l1b -o nob/o.squashfs 2>nob.err; then
	mount -o loop,ro nob/o.squashfs sq
	check "flatten to squashfs without root keeps owners and devices" diff <(tree_sum m) <(tree_sum sq)
	umount sq
else bad "flatten to squashfs without root"; cat nob.err; fi
if command -v musl-gcc >/dev/null; then
	make -s -C "$TOP/liveunion" OUT="$OUT" static >/dev/null
	"$OUT/liveunion/liveunion.static" flatten S l0 l1 -o flat-static
	check "static (musl) binary flattens the same tree" diff <(tree_sum m) <(tree_sum flat-static)
else bad "static (musl) binary: musl-gcc missing (apt-get install -y musl-tools)"; fi
umount m
check "flatten refuses an existing output directory" sh -c "! '$LU' flatten l0 l1 -o flat 2>/dev/null"
check "inputs were not written" test "$before" = "$(tree_sum l0; tree_sum l1; tree_sum S)"
check "image inputs were not written" test "$isum" = "$(sha256sum l1.squashfs store.img)"

# a store mounted and in use: an ext4 store (room for 20000 more files) under a writable overlay
truncate -s 64M live.img; mkfs.ext4 -q -N 30000 -d S live.img; mkdir live lm
mount -o loop live.img live
mount -t overlay o -o "lowerdir=$T/l0:$T/l1,upperdir=$T/live/upper,workdir=$T/live/work,xino=on" lm
check "changes on a store in use equals the unmounted answer" \
	sh -c "'$LU' changes live --lower l0 l1 | sort | cmp -s - got.sorted"
echo late >lm/etc/late; rm lm/etc/hostname
check "changes on a store in use sees writes through the overlay" \
	sh -c "'$LU' changes --machine live --lower l0 l1 >live.txt && grep -qP '^added\tf\t/etc/late\t' live.txt && grep -qP '^deleted\tf\t/etc/hostname\t' live.txt"
# a layer written while it is read: reported, exit 1, never a mixed answer
mkdir lm/busy; for i in $(seq 20000); do : >"lm/busy/f$i"; done
writer() { local i=0; while :; do : >"$1/w$i"; rm -f "$1/w$((i - 50))"; i=$((i + 1)); done; }
writer lm/busy & wpid=$!
sleep 0.3
if "$LU" changes live --lower l0 l1 >/dev/null 2>busy.err; then bad "changes refuses a store written while it reads"
else check "changes refuses a store written while it reads" grep -q "changed while it was read" busy.err; fi
if "$LU" flatten live l0 l1 -o flat-busy 2>busy.err; then bad "flatten refuses a layer written while it reads"
else check "flatten refuses a layer written while it reads" grep -q "changed while reading" busy.err; fi
kill "$wpid"; wait "$wpid" 2>/dev/null || true
umount lm; umount live

# reading is not writing: no access time changes either (strictatime shows every one)
mkdir at; mount -t tmpfs -o strictatime t at
mkdir -p at/l1/d at/S/upper/d at/S/work
echo a >at/l1/d/a; echo c >at/l1/d/c; echo b >at/S/upper/d/b; echo c2 >at/S/upper/d/c
atimes() { (cd at && stat -c '%n %x' l1 l1/d l1/d/a l1/d/c S/upper S/upper/d S/upper/d/b S/upper/d/c); }
before=$(atimes)
"$LU" flatten at/S at/l1 -o flat-at && "$LU" changes at/S --lower at/l1 >/dev/null
check "flatten and changes leave access times of their inputs alone" test "$before" = "$(atimes)"
umount at

# status
printf 'medium=UUID=2026120300000000\nlayers=10-base\nupper=tmpfs\n' >plan
check "status prints the plan" sh -c "'$LU' status --plan plan | grep -q '^  layers  *10-base$'"
if "$LU" status --plan nothere >/dev/null 2>st.err; then bad "status off a live system fails"
else check "status off a live system fails clearly" grep -q "not a live system" st.err; fi
check "unknown subcommand fails" sh -c "! '$LU' frobnicate 2>/dev/null"

finish

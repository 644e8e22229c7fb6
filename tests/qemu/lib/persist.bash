# shellcheck shell=bash
# Sourced by tests/qemu/persist-*.sh (build host): stick images with a persistence store, booted as a
# writable usb-storage disk (no snapshot: the host checks the image after the guest powers off).
# Booting them: vm_start NAME stick-bios IMAGE [--keys KEYS] (lib/vm.bash).
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "${BASH_SOURCE[0]}")/vm.bash"
PDIR=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-persist.XXXXXX")
at_exit "rm -rf '$PDIR'"

# make_stick IMAGE [mkusb options...]
make_stick() {
	local img=$1
	shift
	bash "$TOP/iso/mkusb.sh" --iso "$ISO" -o "$img" "$@" 2>"$PDIR/mkusb.err" && return 0
	# a failed stick says why (a check's own explanation shows only the guest's output)
	tail -n 5 "$PDIR/mkusb.err" | sed 's/^/#   mkusb: /' >&2
	return 1
}

# store_fsck IMAGE: e2fsck -n on partition 3 of IMAGE (a copy, so nothing can change the image).
store_fsck() {
	store_copy "$1" && e2fsck -fn "$PDIR/store.fsck" >"$PDIR/fsck.out" 2>&1
}

# store_clean: the copy from store_fsck was unmounted cleanly (no journal replay pending).
store_clean() {
	dumpe2fs -h "$PDIR/store.fsck" 2>/dev/null >"$PDIR/dumpe2fs.out" || return 1
	grep -q '^Filesystem state: *clean$' "$PDIR/dumpe2fs.out" && ! grep -q needs_recovery "$PDIR/dumpe2fs.out"
}
# store_cat PATH: a file of the store copy, read by debugfs on the host.
store_cat() { debugfs -R "cat $1" "$PDIR/store.fsck" 2>/dev/null; }
store_file_is() { [ "$(store_cat "$1")" = "$2" ]; }

# modify_four TAG: the four changes every persistence scenario checks (a new file in /home and in /etc,
# a deleted lower file, a chmod of a lower file).
modify_four() {
	vm_run "echo home-$1 >/home/kept && echo etc-$1 >/etc/kept && rm /etc/shells && chmod 600 /etc/hosts && sync"
}
# four_kept TAG: after a reboot, all four are there.
four_kept() {
	vm_run "cat /home/kept /etc/kept; test ! -e /etc/shells && echo shells-gone; stat -c %a /etc/hosts" &&
		[ "$VM_OUT" = "home-$1"$'\n'"etc-$1"$'\n'"shells-gone"$'\n'"600" ]
}
# four_gone: none of the four survived (a volatile boot).
four_gone() {
	vm_run "test ! -e /home/kept && test ! -e /etc/kept && test -e /etc/shells && stat -c %a /etc/hosts" &&
		[ "$VM_OUT" != 600 ]
}

# file_store_fsck IMAGE: copy liveunion-rw.img out of the FAT or exFAT partition 3 of IMAGE (nothing mounted:
# mtools for FAT; for exFAT the file's clusters as dump.exfat lists them) and check it like store_fsck does.
file_store_fsck() {
	rm -f "$PDIR/store.fsck"
	part_read "$1" 3 "$PDIR/p3" || return 1
	case "$(blkid -o value -s TYPE "$PDIR/p3")" in
	vfat) mcopy -n -i "$PDIR/p3" ::liveunion-rw.img "$PDIR/store.fsck" || return 1 ;;
	exfat) exfat_copy_out "$PDIR/p3" liveunion-rw.img "$PDIR/store.fsck" || return 1 ;;
	*) vm_note "file_store_fsck: partition 3 of $1 is neither FAT nor exFAT"; return 1 ;;
	esac
	e2fsck -fn "$PDIR/store.fsck" >"$PDIR/fsck.out" 2>&1
}

# store_copy IMAGE: partition 3 of IMAGE copied to $PDIR/store.fsck for debugfs (store_cat) and dumpe2fs.
store_copy() { part_read "$1" 3 "$PDIR/store.fsck"; }
# store_put IMAGE: $PDIR/store.fsck written back as partition 3 of IMAGE.
store_put() { part_write "$1" 3 "$PDIR/store.fsck"; }
# store_ls DIR: names in a directory of the store copy.
store_ls() { debugfs -R "ls -l $1" "$PDIR/store.fsck" 2>/dev/null; }
# part_sum IMAGE: sha256 of partition 3, to prove nothing wrote to it.
part_sum() { part_read "$1" 3 | sha256sum | cut -d' ' -f1; }

# fat_clean IMAGE: the FAT of partition 3 needs no repair and its dirty bit is clear (it was never left
# mounted read-write).
fat_clean() { part_read "$1" 3 "$PDIR/fat.fsck" && fat_fsck "$PDIR/fat.fsck"; }
fat_fsck() { # FILE: fsck.fat -n finds nothing, not even the dirty bit
	if fsck.fat -n "$1" >"$PDIR/fatfsck.out" 2>&1 && no_line '[Dd][Ii][Rr][Tt][Yy]|differences' "$PDIR/fatfsck.out"; then
		return 0
	fi
	sed 's/^/# fsck.fat: /' "$PDIR/fatfsck.out" >&2
	return 1
}
# fat_dirty IMAGE: the FAT32 of partition 3 is marked dirty (bit 0 of byte 65 of its boot sector, which Linux sets
# while the file system is mounted read-write); fat_clean_but_dirty IMAGE: with that bit cleared on a copy, fsck.fat
# finds nothing (the state a FAT is left in when it is still mounted read-write at power-off).
fat_dirty() { [ $(($(part_read "$1" 3 | od -An -tu1 -j 65 -N1) & 1)) -eq 1 ]; }
fat_clean_but_dirty() {
	local b
	part_read "$1" 3 "$PDIR/fat.fsck" && b=$(od -An -tu1 -j 65 -N1 "$PDIR/fat.fsck") || return 1
	# shellcheck disable=SC2059 # the format is the byte, built on purpose
	printf "$(printf '\\%03o' $((b & 254)))" | dd of="$PDIR/fat.fsck" bs=1 seek=65 conv=notrunc status=none &&
		fat_fsck "$PDIR/fat.fsck"
}

# exfat_clean IMAGE: the exFAT of partition 3 needs no repair (fsck.exfat -n) and is not marked dirty.
exfat_clean() {
	part_read "$1" 3 "$PDIR/exfat.fsck" || return 1
	if fsck.exfat -n "$PDIR/exfat.fsck" >"$PDIR/exfatfsck.out" 2>&1 &&
		no_line '[Dd]irty|[Cc]orrupt|[Ee]rror' "$PDIR/exfatfsck.out"; then
		return 0
	fi
	sed 's/^/# fsck.exfat: /' "$PDIR/exfatfsck.out" >&2
	return 1
}

# exfat_copy_out FS NAME FILE: the file NAME of the root directory of the exFAT image FS, copied to FILE by reading
# its clusters as dump.exfat lists them (exfatprogs has no copy-out tool; nothing is mounted).
exfat_copy_out() {
	python3 - "$@" <<-'PY'
	import struct, sys
	fs, want, dst = sys.argv[1], sys.argv[2], sys.argv[3]
	f = open(fs, "rb")
	boot = f.read(512)
	if boot[3:11] != b"EXFAT   ":
	    sys.exit("%s: no exFAT boot sector" % fs)
	fat_off, _, heap_off, _, root = struct.unpack_from("<IIIII", boot, 80)
	bps = 1 << boot[108]
	csize = bps << boot[109]
	def fat(c):
	    f.seek(fat_off * bps + 4 * c)
	    return struct.unpack("<I", f.read(4))[0]
	def clusters(first, length, contiguous):
	    n, c = 0, first
	    while n < length:
	        yield c
	        n += csize
	        c = c + 1 if contiguous else fat(c)
	        if not contiguous and c >= 0xFFFFFFF7:
	            break
	def read(first, length, contiguous):
	    out = bytearray()
	    for c in clusters(first, length, contiguous):
	        f.seek(heap_off * bps + (c - 2) * csize)
	        out += f.read(csize)
	    return bytes(out[:length])
	# the root directory: a FAT chain of 32-byte entries; a file is 0x85, then its 0xC0 stream and 0xC1 names
	c, entries = root, b""
	while c < 0xFFFFFFF7 and len(entries) < (1 << 24):
	    f.seek(heap_off * bps + (c - 2) * csize)
	    entries += f.read(csize)
	    c = fat(c)
	i = 0
	while i + 32 <= len(entries) and entries[i] != 0:
	    if entries[i] == 0x85:
	        count = entries[i + 1]
	        stream = entries[i + 32:i + 64]
	        names = b"".join(entries[i + 32 * k + 2:i + 32 * k + 32] for k in range(2, count + 1))
	        name = names[:2 * stream[3]].decode("utf-16-le")
	        if stream[0] == 0xC0 and name == want:
	            first, = struct.unpack_from("<I", stream, 20)
	            length, = struct.unpack_from("<Q", stream, 24)
	            open(dst, "wb").write(read(first, length, stream[1] & 2))
	            sys.exit(0)
	        i += 32 * count
	    i += 32
	sys.exit("%s: no %s in the root directory" % (fs, want))
	PY
}

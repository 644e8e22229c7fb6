# shellcheck shell=bash
# Sourced by the scenarios that make or change ISOs (layers, verity, toram, bad-squashfs, unionfs-*) and by
# bench/toram (build host): test ISOs with extra layers, where a file lies in an ISO, damaging a copy in place.
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "${BASH_SOURCE[0]}")/vm.bash"
# shellcheck source=tests/qemu/lib/media.bash
. "$(dirname "${BASH_SOURCE[0]}")/media.bash"
MDIR=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-medium.XXXXXX")
at_exit "rm -rf '$MDIR'"

# iso_without ISO COPY PATH...: COPY = ISO with the files PATH... deleted, as anyone who can write a stick could:
# the boot records, both menus and the volume's UUID (the medium's identity on the command line) kept.
iso_without() {
	local in=$1 out=$2 uuid p rm=()
	shift 2
	uuid=$(blkid -p -o value -s UUID "$in" | tr -d -) || return 1
	[ -n "$uuid" ] || return 1
	for p in "$@"; do rm+=(-rm "$p" --); done
	rm -f "$out"
	xorriso -indev "$in" -outdev "$out" -boot_image any replay -volume_date uuid "$uuid" "${rm[@]}" \
		-commit >/dev/null 2>&1 || return 1
	[ "$(blkid -p -o value -s UUID "$out")" = "$(blkid -p -o value -s UUID "$in")" ]
}

# iso_menu_lines ISO: every kernel line of both menus (isolinux APPEND, GRUB linux).
iso_menu_lines() {
	xorriso -indev "$1" -osirrox on -extract /isolinux/isolinux.cfg "$MDIR/isolinux.cfg" \
		-extract /boot/grub/grub.cfg "$MDIR/grub.cfg" >/dev/null 2>&1 || return 1
	grep -h -E '^[[:space:]]*(APPEND|linux) ' "$MDIR/isolinux.cfg" "$MDIR/grub.cfg"
}

# conformance_iso: $OUT/tests/conformance.iso = the built kernel, initramfs and 10-base plus the 50-middle and
# 90-conformance test layers (tests/conformance/mklayer.sh): three squashfs lowers. Both steps are cached by their
# inputs and never rebuild a build stage.
CONFORMANCE_ISO=$OUT/tests/conformance.iso
conformance_iso() {
	"$TOP/tests/conformance/mklayer.sh" >&2 &&
		"$TOP/build.sh" iso-with "$CONFORMANCE_ISO" "$OUT/tests/50-middle.squashfs" "$OUT/tests/90-conformance.squashfs" >&2
}
# The overlayfs limits docs/tests.md documents for the init's options with a tmpfs upper (index=on,
# redirect_dir=on, kernel/patches/0002 and 0003): the conformance scenarios fail on any other known-limit line.
CONFORMANCE_KNOWN_LIMITS='mmap.shared-lower-then-write namemax.lower-256-remove'
# After `vm_run unionconf -v` (both conformance scenarios): conformance_passed: every check passed, and enough of
# them ran for the run to mean something; conformance_only_documented_limits: no known-limit line but those above.
# shellcheck disable=SC2317 # these predicates run through check
conformance_passed() {
	local s p f
	s=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' <<<"$VM_OUT" | tail -n 1)
	[ -n "$s" ] || { vm_note "no 'N passed, N failed' line from unionconf"; return 1; }
	p=${s%% passed*} f=${s#*passed, } f=${f%% failed}
	vm_note "unionconf: $s"
	[ "$f" -eq 0 ] && [ "$p" -ge 90 ]
}
# shellcheck disable=SC2317
conformance_only_documented_limits() {
	local n bad=0
	while read -r n; do
		case " $CONFORMANCE_KNOWN_LIMITS " in
		*" $n "*) vm_note "known limit (docs/tests.md): $n" ;;
		*) vm_note "known-limit $n is not a documented overlayfs limit"; bad=1 ;;
		esac
	done < <(sed -n 's/^known-limit \([^:]*\):.*/\1/p' <<<"$VM_OUT")
	return "$bad"
}

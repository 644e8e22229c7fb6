#!/usr/bin/env bash
# summary: signed layers: a layer added to a copy of the tiny ISO after it was built (its menus' live.verify= does not name it) is stacked through dm-verity when its root hash is signed with the build's key (the kernel checks the signature against the certificate built into it); the same layer unsigned, signed by another key, or changed with its hash tree and root hash made again under the old signature, is refused naming it
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"

iso=$OUT/liveunion.iso
copy=$OUT/tests/signed-layers.iso
mkdir -p "$OUT/tests"
at_exit "rm -f '$copy'"

# iso_add ISO COPY FILE...: COPY = ISO with FILE... added under /live, as anyone who can write an ISO file on a
# stick (or a netboot tree) could: boot records, menus and the volume's UUID kept, nothing signed again.
# shellcheck disable=SC2317 # called through require
iso_add() {
	local in=$1 out=$2 uuid f map=()
	shift 2
	uuid=$(blkid -p -o value -s UUID "$in" | tr -d -) || return 1
	for f in "$@"; do map+=(-map "$f" "/live/$(basename "$f")"); done
	rm -f "$out"
	xorriso -indev "$in" -outdev "$out" -boot_image any replay -volume_date uuid "$uuid" "${map[@]}" \
		-commit >/dev/null 2>&1
}

# boot_refused NAME WHY-REGEX: the copy's boot stops at the layers step with WHY about 50-course, and no login.
boot_refused() {
	require "qemu-starts-$1" vm_start "signed-$1" cd-bios "$copy" --keys "loglevel=4"
	require "rescue-prompt-$1" vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
	check "$1-refusal-names-the-layer" log_has "^liveunion: .*layer 50-course.*$2"
	check "$1-step-layers-failed" log_has '^liveunion: step layers failed'
	check "$1-no-login" log_lacks 'login: *$'
	vm_stop
}

L=$MDIR/signed
mkdir -p "$MDIR/course/opt/course" "$MDIR/evil/opt/course" "$MDIR/unsigned" "$MDIR/other" "$MDIR/tampered"
echo "course v1" >"$MDIR/course/opt/course/README"
echo "attacker's" >"$MDIR/evil/opt/course/README"
require iso-has-no-50-course fails iso_file_offset "$iso" /live/50-course.squashfs
require layer-built "$TOP/build.sh" layer "$MDIR/course" -o "$L/50-course.squashfs" --sign
check layer-has-its-four-files test -s "$L/50-course.squashfs" -a -s "$L/50-course.verity" -a -s "$L/50-course.roothash" -a -s "$L/50-course.roothash.p7s"
check layer-names-its-base grep -q "^LIVEUNION_BASE=$(tr ' ' '\n' <"$OUT/iso/cmdline" | sed -n 's/^live\.verify=10-base:\([0-9a-f]*\).*/\1/p')\$" \
	<(unsquashfs -cat "$L/50-course.squashfs" usr/lib/extension-release.d/extension-release.50-course)
# The attacker's three: no signature; the same root hash signed by a key of their own; their own layer (hash tree
# and root hash made again) beside the real signature.
cp "$L/50-course.squashfs" "$L/50-course.verity" "$L/50-course.roothash" "$MDIR/unsigned/"
cp "$L/50-course.squashfs" "$L/50-course.verity" "$L/50-course.roothash" "$MDIR/other/"
require other-key-made openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=other -days 1 -keyout "$MDIR/other.key" -out "$MDIR/other.crt"
require other-key-signs sh -c "printf %s \"\$(cat '$L/50-course.roothash')\" | openssl smime -sign -nocerts -noattr -binary -md sha256 \
	-inkey '$MDIR/other.key' -signer '$MDIR/other.crt' -outform der -out '$MDIR/other/50-course.roothash.p7s'"
require evil-layer-built "$TOP/build.sh" layer "$MDIR/evil" -o "$MDIR/tampered/50-course.squashfs"
cp "$L/50-course.roothash.p7s" "$MDIR/tampered/"
check tampered-root-hash-differs fails cmp -s "$L/50-course.roothash" "$MDIR/tampered/50-course.roothash"

# 1. The signed layer: stacked above 10-base, through dm-verity, the plan saying it is covered.
require copy-signed iso_add "$iso" "$copy" "$L"/50-course.*
require qemu-starts-signed vm_start signed-good cd-bios "$copy" --keys "loglevel=4"
require login-signed vm_login
check signed-said log_has '^liveunion: layer 50-course: dm-verity /dev/dm-1 .*\(signed: the kernel checked \.roothash\.p7s against its trusted keyring\)$'
check signed-stack log_has '^liveunion: stack, bottom to top \(2 layer\(s\), dm-verity\): 10-base 50-course$'
check signed-file-read vm_fact 'cat /opt/course/README' 'course v1'
check signed-plan-covers vm_fact 'grep "^verify.covers=" /run/live/plan' 'verify.covers=10-base,50-course'
check signed-plan-marks vm_fact 'grep "^layer.50-course.signed=" /run/live/plan' 'layer.50-course.signed=1'
# the kernel's builtin keyring holds the build's certificate (kernel/kernel.sh), and nothing else
cn=$(openssl x509 -in "$(find "$OUT/kernel" -maxdepth 2 -name liveunion-trusted.pem -print -quit)" -noout -subject -nameopt multiline | sed -n 's/^ *commonName *= //p')
check signed-kernel-loaded-our-cert vm_run "dmesg | grep 'Loaded X.509 cert' | grep -c '$cn'"
check signed-kernel-cert-count out_has '^1'
vm_stop

# 2. The same layer without its signature.
require copy-unsigned iso_add "$iso" "$copy" "$MDIR/unsigned"/50-course.*
boot_refused unsigned 'no root hash for layer 50-course and it is not signed \(no \.roothash\.p7s beside it\): refused while verification is on'

# 3. Its root hash signed by another key.
require copy-other iso_add "$iso" "$copy" "$MDIR/other"/50-course.*
boot_refused other-key 'REFUSED: its root hash signature \(50-course\.roothash\.p7s\) is not by a key the kernel trusts'

# 4. Another layer under the name, its .verity and .roothash made for it, the real signature beside them.
require copy-tampered iso_add "$iso" "$copy" "$MDIR/tampered"/50-course.*
boot_refused tampered 'REFUSED: its root hash signature \(50-course\.roothash\.p7s\) is not by a key the kernel trusts'
finish

#!/usr/bin/env bash
# summary: the debian profile's pc ISO with Secure Boot on (OVMF's secure firmware, q35, SMM). Microsoft's keys: shim, Debian's signed GRUB and Debian's signed kernel boot it to login from a CD (and to the hand-over from a USB stick); the SecureBoot variable is 1, the kernel is locked down, our overlay.ko (signed with this checkout's key, not enrolled) is refused and Debian's overlay module runs, with the warning. Our key enrolled as docs/secure-boot.md says (mokutil --import, then MokManager answered on the serial console): the next boot loads our overlay.ko and squashfs.ko, and the tiny ISO, whose kernel that key signed, boots with Secure Boot on; so does its ISO_UKI=1 build through shim (shim -> our systemd-boot -> the UKI checked by shim), which a machine without our key refuses at shim. The lab's own keys (Debian's snakeoil PK/KEK/db): the same profile built with SB_KEY/SB_CERT of that key and ISO_UKI=1 boots its signed UKI to login, and the kernel loads our overlay.ko and squashfs.ko, signed with that key
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
# shellcheck disable=SC2317 # functions run through check and require
VM_TIMEOUT=${VM_TIMEOUT:-900}
# shellcheck source=tests/qemu/lib/profile.bash
. "$(dirname "$0")/lib/profile.bash"
needs_root "profile builds (debootstrap)"
SB_VAR=/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
W=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-sbpc.XXXXXX") || exit 1
at_exit "rm -rf '$W'"

iso=$OUT/liveunion-debian.iso
require profile-built profile_iso debian
require pc-flavour grep -q 'pc kernel' "$OUT/profiles/debian/iso/tree/isolinux/isolinux.cfg"
VM_MEM=2048

# sb_facts NAME: Secure Boot as the running kernel sees it.
sb_facts() {
	check "$1-secureboot-variable-is-1" vm_fact "od -An -tu1 $SB_VAR | awk '{ print \$NF }'" 1
	check "$1-kernel-says-secure-boot" vm_run 'dmesg | grep -q "Secure boot enabled"'
	check "$1-kernel-locked-down" vm_fact 'cat /sys/kernel/security/lockdown' 'none [integrity] confidentiality'
}

# A module signed with a throwaway key (Debian's dummy.ko, its signature stripped, signed again with a key made
# here and thrown away): on a raw disk of its own, read by the guest with head -c, since nothing may mount it
pcroot=$(find "$OUT/pc" -mindepth 2 -maxdepth 2 -name root -type d | head -n 1)
mod_throwaway() {
	local src sf
	src=$(find "$pcroot/lib/modules" -name dummy.ko.xz | head -n 1)
	sf=$(find "$pcroot/usr/lib" -path '*/scripts/sign-file' | head -n 1)
	[ -n "$src" ] && [ -n "$sf" ] || return 1
	openssl req -new -x509 -newkey rsa:2048 -nodes -days 1 -subj '/CN=throwaway module key/' -outform DER \
		-keyout "$W/throwaway.key" -out "$W/throwaway.der" 2>/dev/null &&
		xz -dc "$src" >"$W/dummy.ko.signed" && objcopy --strip-debug "$W/dummy.ko.signed" "$W/dummy.ko" &&
		"$sf" sha256 "$W/throwaway.key" "$W/throwaway.der" "$W/dummy.ko" &&
		tail -c 28 "$W/dummy.ko" | grep -q 'Module signature appended' &&
		truncate -s 1M "$W/mod.img" && dd if="$W/dummy.ko" of="$W/mod.img" conv=notrunc status=none
}
require throwaway-signed-module mod_throwaway
MOD_BYTES=$(stat -c %s "$W/dummy.ko")
# insmod_throwaway: the guest loads it; prints the kernel's answer
insmod_throwaway() {
	vm_run "head -c $MOD_BYTES /dev/vda >/tmp/throwaway.ko && cmp -s -n $MOD_BYTES /dev/vda /tmp/throwaway.ko && echo read; insmod /tmp/throwaway.ko 2>&1; echo insmod-exit=\$?; lsmod | grep -c '^dummy ' || true"
}

# The ISO_UKI=1 build's way for a machine that keeps Microsoft's keys: shim (EFI/liveunion/shimx64.efi) starts our
# systemd-boot (its grubx64.efi), which asks shim to check the UKI. A firmware boot entry for
# \EFI\liveunion\shimx64.efi does that on a PC; here a copy of the tiny UKI ISO has those three files moved to
# EFI/BOOT/ (the firmware's removable-media path; the ESP has no room for a second copy), so that OVMF starts shim.
# Signed with this checkout's key, as is the tiny kernel above.
export MTOOLS_SKIP_CHECK=1
shimpath=$OUT/tests/secureboot-pc-shim-uki.iso
shim_path_iso() {
	local f
	ISO_UKI=1 "$TOP/build.sh" iso-with "$shimpath" >"$W/shim-iso.log" 2>&1 || { tail -n 5 "$W/shim-iso.log" >&2; return 1; }
	part_read "$shimpath" 2 "$W/esp.img" || return 1
	mdel -i "$W/esp.img" ::/EFI/BOOT/BOOTX64.EFI || return 1 # systemd-boot, the same as EFI/liveunion/grubx64.efi
	for f in shimx64.efi:BOOTX64.EFI grubx64.efi:grubx64.efi mmx64.efi:mmx64.efi; do
		mcopy -n -i "$W/esp.img" "::/EFI/liveunion/${f%%:*}" "$W/${f%%:*}" &&
			mmove -i "$W/esp.img" "::/EFI/liveunion/${f%%:*}" "::/EFI/BOOT/${f#*:}" || return 1
	done
	part_write "$shimpath" 2 "$W/esp.img"
}
require shim-uki-iso-built shim_path_iso
at_exit "rm -f '$shimpath'"
# the UKI's signed command line, to compare with what the kernel got
require shim-uki-cmdline sh -c "mcopy -n -i '$W/esp.img' ::/EFI/Linux/liveunion-3-live.efi '$W/live.efi' && objcopy -O binary --only-section=.cmdline '$W/live.efi' '$W/uki.cmdline'"
check shim-uki-boot-manager-is-systemd-boot grep -aq 'systemd-boot' "$W/grubx64.efi"
check shim-uki-shim-is-debians output_is "$(sha256sum <"$(find "$OUT/sb/root" -name shimx64.efi.signed -path '*shim*' | head -n 1)" | cut -d' ' -f1)" \
	sh -c "sha256sum <'$W/shimx64.efi' | cut -d' ' -f1"
# efivar NAME: the bytes of an EFI variable of the boot loaders' vendor GUID (systemd's), as text
efivar() { printf '%s' "grep -q ' /sys/firmware/efi/efivars ' /proc/mounts || mount -t efivarfs efivarfs /sys/firmware/efi/efivars; tail -c +5 /sys/firmware/efi/efivars/$1-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f | tr -d '\\000'"; }

# 1. A stock PC: Microsoft's keys in db, Secure Boot on. The firmware's variables stay in $W/vars.fd from one VM to
# the next, as a machine's do.
require ms-vars cp /usr/share/OVMF/OVMF_VARS_4M.ms.fd "$W/vars.fd"
VM_SB=$W/vars.fd
require ms-qemu-starts vm_start sb-pc-ms cd-uefi "$iso"
require ms-login profile_login
sb_facts ms
check ms-our-overlay-refused-warned log_has 'liveunion: WARNING: our overlay.ko was refused \(.*\): using the kernel.s own overlay module; without our patch NAME_MAX on / is 256, not 255'
check ms-debian-overlay-runs log_has 'liveunion: overlayfs: loaded the kernel.s kernel/fs/overlayfs/overlay.ko.xz'
check ms-running-overlay-is-debians vm_fact 'cat /sys/module/overlay/taint' ''
check ms-root-is-overlay vm_run 'grep -q "^[^ ]* / overlay " /proc/mounts'

# Enrolling our key as docs/secure-boot.md says: mokutil --import in the live system, then MokManager (shim's) at the next boot,
# answered on the serial console: a key within its 10 s, Enroll MOK, Continue, Yes, the password, Reboot.
fpr=$(openssl x509 -in "$OUT/sb/key/db.crt" -noout -fingerprint -sha1 | sed 's/.*=//' | tr 'A-F' 'a-f')
check mok-import-queued vm_run 'printf "liveunion\nliveunion\n" | mokutil --import /run/live/medium/boot/liveunion-sb.cer'
check mok-request-is-our-key vm_run "mokutil --list-new | grep -qi 'SHA1 Fingerprint: $fpr'"
mok_key() { printf '%b' "$1" >&"$VM_IN"; }
down_enter() { mok_key '\e[B' && sleep 1 && mok_key '\r'; }
# Off and on again, as a cold start: MokNew is in the firmware's variables ($W/vars.fd). (qemu's warm reset of
# OVMF with SMM under TCG, after `systemctl reboot`, spun without output here twice in about ten runs.)
require mok-powered-off profile_poweroff 300
vm_stop || true
require mok-qemu-starts vm_start sb-pc-mok cd-uefi "$iso" -drive "file=$W/mod.img,if=virtio,format=raw,readonly=on"
require mokmanager-starts vm_wait 'Press any key to perform MOK management' "$VM_BOOT_TIMEOUT"
mok_key ' '
require mokmanager-menu vm_wait 'Enroll MOK' 60
down_enter
require mokmanager-enroll-screen vm_wait 'View key 0' 60
down_enter
require mokmanager-asks-to-enroll vm_wait 'Enroll the key\(s\)\?' 60
down_enter
require mokmanager-asks-password vm_wait 'Password:' 60
mok_key 'liveunion\r'
require mokmanager-offers-reboot vm_wait 'Reboot' 60
sleep 1
mok_key '\r'
require mok-login profile_login
check mok-key-enrolled vm_run "mokutil --list-enrolled | grep -qi 'SHA1 Fingerprint: $fpr'"
check mok-our-overlay-loaded log_has 'liveunion: overlayfs: loaded our overlay.ko'
check mok-our-squashfs-loaded log_has 'liveunion: squashfs: loaded our squashfs.ko'
check mok-running-overlay-is-ours vm_fact 'cat /sys/module/overlay/taint' O
check mok-namemax-255 vm_fact 'getconf NAME_MAX /' 255
# enrolling a key leaves Secure Boot and lockdown on, and trusts that key only: a module signed with another one
# is refused, and never loaded
sb_facts mok
check mok-throwaway-module-tried insmod_throwaway
check mok-throwaway-module-read out_has '^read$'
check mok-throwaway-module-refused out_has 'Key was rejected by service|Required key not available'
check mok-throwaway-module-exit out_has '^insmod-exit=[1-9]'
check mok-throwaway-module-not-loaded out_has '^0$'
vm_stop

# The tiny ISO, its kernel signed with the same key, on the same machine: shim now trusts it.
require tiny-qemu-starts vm_start sb-tiny-mok cd-uefi "$OUT/liveunion.iso"
require tiny-login vm_login
check tiny-kernel-says-secure-boot vm_run 'dmesg | grep -q "Secure boot enabled"'
check tiny-not-refused log_lacks 'bad shim signature'
vm_stop

# The ISO_UKI=1 image through shim on the same machine: shim checks systemd-boot against our MOK, systemd-boot has
# shim check the UKI; login with Secure Boot on and exactly the signed command line.
require shim-uki-qemu-starts vm_start sb-shim-uki-mok cd-uefi "$shimpath"
require shim-uki-login vm_login
check shim-uki-kernel-says-secure-boot vm_run 'dmesg | grep -q "Secure boot enabled"'
check shim-uki-loader-is-systemd-boot vm_run "$(efivar LoaderInfo) | grep -q '^systemd-boot'"
check shim-uki-loader-started-as-grubx64 vm_fact "$(efivar LoaderImageIdentifier)" '\EFI\BOOT\grubx64.efi'
check shim-uki-shim-ran vm_run 'ls /sys/firmware/efi/efivars/ | grep -q "^MokListRT-"'
check shim-uki-cmdline-is-the-signed-one vm_fact 'cat /proc/cmdline' "$(tr -d '\n\0' <"$W/uki.cmdline")"
check shim-uki-layers-verified log_has '^liveunion: stack, bottom to top \([0-9]+ layer\(s\), dm-verity\)'
vm_stop

# The pc ISO written to a stick (xHCI), on a machine with Microsoft's keys only: shim and GRUB from its ESP
# partition, which finds the ISO9660 volume by UUID.
VM_SB=ms
require ms-stick-qemu-starts vm_start sb-pc-ms-stick usb-uefi "$iso"
require ms-stick-hand-over vm_wait '^liveunion: switching to ' "$VM_BOOT_TIMEOUT"
check ms-stick-secure-boot log_has 'EFI stub: UEFI Secure Boot is enabled'
check ms-stick-medium-is-the-stick log_has '^liveunion: medium UUID=[0-9]+ found on /dev/sd[a-z]'
vm_stop
# The same shim path on a machine that never enrolled our key: shim refuses our systemd-boot; no kernel starts.
require shim-uki-ms-qemu-starts vm_start sb-shim-uki-ms cd-uefi "$shimpath"
check shim-uki-refused-without-mok vm_wait 'Verification failed: .*Security Violation' 300
sleep 3
check shim-uki-no-kernel-without-mok log_lacks 'Linux version|liveunion: '
vm_stop

# 2. A lab's own keys: the profile built again, as a lab would, with SB_KEY/SB_CERT and ISO_UKI=1, into an OUT
# that shares the first build's outputs (hard links: only the pc initramfs, whose modules are signed again, and
# the ISO are made anew; stamps are copied, as the build rewrites them).
require snakeoil-key openssl pkey -in /usr/share/ovmf/PkKek-1-snakeoil.key -passin pass:snakeoil -out "$W/lab.key"
lab=$OUT/tests/secureboot-pc-out
rm -rf "$lab" && mkdir -p "$lab/sb"
at_exit "rm -rf '$lab'"
require lab-out-shared sh -c "cp -al '$OUT/pc' '$OUT/profiles' '$OUT/initramfs' '$OUT/initramfs.img' '$lab/' && cp -al '$OUT/sb/debs' '$OUT/sb/root' '$OUT/sb/root.done' '$lab/sb/' && cp -a '$OUT/stamps' '$lab/' && { [ ! -e '$OUT/cache' ] || cp -al '$OUT/cache' '$lab/'; }"
require lab-iso-built env OUT="$lab" SB_KEY="$W/lab.key" SB_CERT=/usr/share/ovmf/PkKek-1-snakeoil.pem ISO_UKI=1 \
	"$TOP/build.sh" --profile debian build
# sign-file records the signer's serial number: the lab certificate's, on both of our modules
serial=$(openssl x509 -in /usr/share/ovmf/PkKek-1-snakeoil.pem -noout -serial | sed 's/.*=//' | tr 'A-F' 'a-f')
for m in overlay squashfs; do
	check "lab-$m-signed-by-lab-key" output_is "$serial" sh -c "/sbin/modinfo -F sig_key '$lab/pc/initramfs/tree/lib/liveunion/$m.ko' | tr -d ':' | tr 'A-F' 'a-f'"
done
VM_SB=snakeoil
require lab-qemu-starts vm_start sb-pc-lab cd-uefi "$lab/liveunion-debian.iso"
require lab-login profile_login
sb_facts lab
check lab-our-overlay-loaded log_has 'liveunion: overlayfs: loaded our overlay.ko'
check lab-our-squashfs-loaded log_has 'liveunion: squashfs: loaded our squashfs.ko'
check lab-no-refusal-warning log_lacks 'WARNING: our [a-z]+.ko was refused'
# modules built out of tree carry O in their taint; Debian's have none
check lab-running-overlay-is-ours vm_fact 'cat /sys/module/overlay/taint' O
check lab-namemax-255 vm_fact 'getconf NAME_MAX /' 255
vm_stop
finish

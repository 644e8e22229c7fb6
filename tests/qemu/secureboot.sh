#!/usr/bin/env bash
# summary: Secure Boot with OVMF's secure firmware (q35, SMM): Microsoft's keys: shim and Debian's signed GRUB start from the tiny ISO, and our kernel, signed with this checkout's key that the machine does not trust, is refused with GRUB's message; an unsigned GRUB on a copy of the ISO is refused by shim. The lab's own keys (Debian's snakeoil PK/KEK/db): the ISO_UKI=1 build signed with that key boots through systemd-boot to login with Secure Boot on and exactly the signed command line; the same image with one character of its command line changed after signing, or signed with another key, is refused and no kernel starts; a loader entry added to the stick with options init=/bin/sh and made the default is booted with the signed command line only; the UKI build has no rescue entry and live.panic signed into every entry: a copy with its verified layer deleted stops naming it and panics, and keys typed on the console get no shell
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
# shellcheck disable=SC2317 # functions run through check and require
# shellcheck source=tests/qemu/lib/iso.bash
. "$(dirname "$0")/lib/iso.bash"
needs_root "iso-with writes under OUT as the build did"
W=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-sb.XXXXXX") || exit 1
at_exit "rm -rf '$W'"
SB_VAR=/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
export MTOOLS_SKIP_CHECK=1

# esp_get ISO DIR: the ISO's ESP (partition 2 of the hybrid image, also its El Torito EFI image) as DIR/esp.img.
esp_get() { part_read "$1" 2 "$2/esp.img"; }
# esp_replace ISO FILE ESPPATH: FILE in place of ESPPATH in W/esp.img, written back into ISO (a copy of the test's).
esp_replace() { mcopy -o -i "$W/esp.img" "$2" "$3" && part_write "$1" 2 "$W/esp.img"; }
# refused REGEX: the firmware or a loader printed REGEX, and no kernel ever started (its first line never came).
refused() {
	vm_wait "$1" 300 || return 1
	sleep 3 # anything that would come after the refusal has had its chance
	log_lacks 'Linux version|liveunion: '
}

require iso-built test -f "$ISO"
require cert-on-esp esp_get "$ISO" "$W"
check cert-is-this-checkouts output_is "$(openssl x509 -in "$OUT/sb/key/db.crt" -outform DER | sha256sum)" \
	sh -c "mtype -i '$W/esp.img' ::/liveunion-sb.cer | sha256sum"
check esp-has-shim-grub-mokmanager sh -c "mdir -b -i '$W/esp.img' ::/EFI/BOOT/ | sort | tr '\n' ' ' | grep -qx '::/EFI/BOOT/BOOTX64.EFI ::/EFI/BOOT/grubx64.efi ::/EFI/BOOT/mmx64.efi '"
require kernel-extracted xorriso -indev "$ISO" -osirrox on -extract /boot/bzImage "$W/bzImage"
check kernel-signed-with-our-key sbverify --cert "$OUT/sb/key/db.crt" "$W/bzImage"

# 1. A stock PC (Microsoft's keys, Secure Boot on): shim and Debian's GRUB are trusted; our kernel is not.
VM_SB=ms
require ms-qemu-starts vm_start sb-ms-tiny cd-uefi "$ISO"
check ms-grub-menu-shown vm_wait 'liveunion [^ ]+, tiny kernel' 300
check ms-kernel-refused-by-name refused 'error: bad shim signature'
vm_stop

# 2. An unsigned GRUB put in place of Debian's on a copy: shim refuses it before any menu.
require copy-made cp "$ISO" "$W/unsigned.iso"
require unsigned-grub-made grub-mkimage -O x86_64-efi -o "$W/grubx64.efi" -p /boot/grub normal configfile search iso9660 fat part_gpt linux
require unsigned-grub-in-place esp_replace "$W/unsigned.iso" "$W/grubx64.efi" ::/EFI/BOOT/grubx64.efi
require unsigned-qemu-starts vm_start sb-ms-unsigned-grub cd-uefi "$W/unsigned.iso"
check shim-refuses-unsigned-grub refused 'Verification failed: .*Security Violation'
check no-grub-menu-from-it log_lacks 'liveunion [^ ]+, tiny kernel'
vm_stop

# 3. A lab's own keys: PK, KEK and db hold one certificate (Debian's snakeoil); the UKI build is signed with it.
require snakeoil-key openssl pkey -in /usr/share/ovmf/PkKek-1-snakeoil.key -passin pass:snakeoil -out "$W/lab.key"
uki=$OUT/tests/secureboot-uki.iso
require uki-iso-built env SB_KEY="$W/lab.key" SB_CERT=/usr/share/ovmf/PkKek-1-snakeoil.pem ISO_UKI=1 "$TOP/build.sh" iso-with "$uki"
require uki-esp esp_get "$uki" "$W"
live=::/EFI/Linux/liveunion-3-live.efi
require uki-extracted mcopy -n -i "$W/esp.img" "$live" "$W/live.efi"
check uki-signed-by-lab-key sbverify --cert /usr/share/ovmf/PkKek-1-snakeoil.pem "$W/live.efi"
check boot-manager-signed-by-lab-key sh -c "mcopy -n -i '$W/esp.img' ::/EFI/BOOT/BOOTX64.EFI '$W/sdboot.efi' && sbverify --cert /usr/share/ovmf/PkKek-1-snakeoil.pem '$W/sdboot.efi'"
require uki-cmdline objcopy -O binary --only-section=.cmdline "$W/live.efi" "$W/cmdline"
check uki-cmdline-has-root-hashes grep -q 'live.verify=10-base:[0-9a-f]\{64\}' "$W/cmdline"
# no shell before the live root for whoever sits at the keyboard: no rescue entry, and a failed step panics
check uki-cmdline-has-live-panic grep -qw 'live.panic' "$W/cmdline"
check uki-no-rescue-entry sh -c "mdir -/ -b -i '$W/esp.img' ::/EFI/Linux | grep -q 'liveunion-3-live.efi' && ! mdir -/ -b -i '$W/esp.img' ::/EFI/Linux | grep -qi rescue"
check uki-no-entry-breaks sh -c "for e in \$(mdir -/ -b -i '$W/esp.img' ::/EFI/Linux); do mcopy -n -i '$W/esp.img' \"\$e\" '$W/e.efi' && objcopy -O binary --only-section=.cmdline '$W/e.efi' '$W/e.cmdline' && grep -qw live.panic '$W/e.cmdline' && ! grep -q live.break '$W/e.cmdline' || exit 1; done"
VM_SB=snakeoil
require uki-qemu-starts vm_start sb-uki cd-uefi "$uki"
require uki-login vm_login
check uki-kernel-says-secure-boot vm_run 'dmesg | grep -q "Secure boot enabled"'
check uki-secureboot-variable-is-1 vm_fact "grep -q ' /sys/firmware/efi/efivars ' /proc/mounts || mount -t efivarfs efivarfs /sys/firmware/efi/efivars; od -An -tu1 $SB_VAR | awk '{ print \$NF }'" 1
check uki-cmdline-is-the-signed-one vm_fact 'cat /proc/cmdline' "$(tr -d '\n' <"$W/cmdline")"
check uki-layers-verified log_has '^liveunion: stack, bottom to top \([0-9]+ layer\(s\), dm-verity\)'
vm_stop

# 4. The same UKI with one character of a root hash changed after signing: refused, no kernel starts.
require altered-copy cp "$uki" "$W/altered.iso"
off=$(objdump -h "$W/live.efi" | awk '$2 == ".cmdline" { print $6 }')
off=${off:+$((0x$off))}
pos=$(grep -bo 'live.verify=10-base:' "$W/cmdline" | cut -d: -f1)
require cmdline-found test -n "$off" -a -n "$pos"
require altered-copy-of-uki cp "$W/live.efi" "$W/altered.efi"
require altered-root-hash other_digit "$W/altered.efi" $((off + pos + 20)) # the first digit of 10-base's root hash
check altered-uki-differs-from-signed fails cmp -s "$W/live.efi" "$W/altered.efi"
check altered-uki-fails-sbverify fails sbverify --cert /usr/share/ovmf/PkKek-1-snakeoil.pem "$W/altered.efi"
require altered-in-place esp_replace "$W/altered.iso" "$W/altered.efi" "$live"
require altered-qemu-starts vm_start sb-uki-altered cd-uefi "$W/altered.iso"
check altered-uki-refused refused 'Error loading .EFI.Linux.liveunion-3-live.efi: Access Denied'
vm_stop

# 5. The same UKI signed with another key (not in db): refused.
require other-key openssl req -new -x509 -newkey rsa:2048 -nodes -days 1 -subj '/CN=not the lab key/' \
	-keyout "$W/other.key" -out "$W/other.crt"
require other-signed sh -c "sbattach --remove '$W/live.efi' >/dev/null && sbsign --key '$W/other.key' --cert '$W/other.crt' --output '$W/other.efi' '$W/live.efi' >/dev/null 2>&1"
require other-copy cp "$uki" "$W/other.iso"
require uki-esp-again esp_get "$uki" "$W"
require other-in-place esp_replace "$W/other.iso" "$W/other.efi" "$live"
require other-qemu-starts vm_start sb-uki-other-key cd-uefi "$W/other.iso"
check other-key-uki-refused refused 'Error loading .EFI.Linux.liveunion-3-live.efi: Access Denied'
vm_stop

# 5b. Whoever can write the stick deletes the verified layer: the boot stops naming it, and there is no shell to
# type into (live.panic, signed): PID 1 exits, the kernel panics; keys typed on the console get no answer.
require layerless-copy iso_without "$uki" "$W/layerless.iso" /live/10-base.squashfs
require layerless-qemu-starts vm_start sb-uki-layerless cd-uefi "$W/layerless.iso"
check layerless-stops-naming-the-layer vm_wait 'live\.verify= has a root hash for layer 10-base, which is not on the medium' "$VM_BOOT_TIMEOUT"
check layerless-panics vm_wait 'Kernel panic - not syncing: Attempted to kill init' 120
vm_send 'echo shell-$((6 * 7))'
sleep 5
check layerless-no-rescue-shell log_lacks '\(liveunion rescue\)|shell-42'
vm_stop

# 6. Whoever can write the stick adds a loader entry for the same signed UKI with its own options (init=/bin/sh)
# and makes it the default. systemd-boot boots that entry (its choice is in LoaderEntrySelected), but under Secure
# Boot the UKI's stub ignores the options: the kernel gets the signed command line only.
LOADER_VAR=/sys/firmware/efi/efivars/LoaderEntrySelected-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f
require entry-copy cp "$uki" "$W/entry.iso"
require uki-esp-for-entry esp_get "$uki" "$W"
printf 'title liveunion (changed)\nefi /EFI/Linux/liveunion-3-live.efi\noptions init=/bin/sh liveunion.attack=1\n' >"$W/attack.conf"
printf 'timeout 0\ndefault attack.conf\neditor no\n' >"$W/loader.conf"
mmd -i "$W/esp.img" ::/loader/entries 2>/dev/null # there already, or made
require entry-added mcopy -o -i "$W/esp.img" "$W/attack.conf" ::/loader/entries/attack.conf
require entry-made-default esp_replace "$W/entry.iso" "$W/loader.conf" ::/loader/loader.conf
require entry-qemu-starts vm_start sb-uki-entry cd-uefi "$W/entry.iso"
require entry-login vm_login
check entry-was-booted vm_run "grep -q ' /sys/firmware/efi/efivars ' /proc/mounts || mount -t efivarfs efivarfs /sys/firmware/efi/efivars; tail -c +5 $LOADER_VAR | tr -d '\\0'"
check entry-chosen-by-the-loader out_is attack.conf
check entry-options-ignored vm_fact 'cat /proc/cmdline' "$(tr -d '\n' <"$W/cmdline")"
check entry-no-shell-as-init vm_none 'cat /proc/cmdline' 'init=/bin/sh|liveunion\.attack'
check entry-secure-boot-on vm_fact "od -An -tu1 $SB_VAR | awk '{ print \$NF }'" 1
vm_stop
finish

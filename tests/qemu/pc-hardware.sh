#!/usr/bin/env bash
# summary: the debian profile on the pc kernel (Debian's signed 6.12 + our overlay.ko), q35 with 4 CPUs and 2 GiB, the ISO as an AHCI CD, with NVMe, SD on sdhci-pci, USB on xHCI/EHCI/OHCI/UHCI (keyboard, tablet), e1000e and rtl8139, HDA, VGA and virtio-gpu, i6300esb: 4 CPUs online, a driver on every PCI device, our overlay.ko in force (NAME_MAX 255), flavour named in os-release and the plan; then under lockdown=integrity our unsigned module is refused and Debian's loads with the warning (NAME_MAX 256); with no medium the init lists the devices no driver took; the same ISO found on a USB stick, an NVMe disk and an SD card, and booted by UEFI from the CD
# shellcheck disable=SC2016 # the single-quoted commands are expanded by the guest's shell
VM_TIMEOUT=${VM_TIMEOUT:-900}
# shellcheck source=tests/qemu/lib/profile.bash
. "$(dirname "$0")/lib/profile.bash"

iso=$OUT/liveunion-debian.iso
require profile-built profile_iso debian
require pc-flavour grep -q 'pc kernel' "$OUT/profiles/debian/iso/tree/isolinux/isolinux.cfg"
disks=$(mktemp -d "${TMPDIR:-/tmp}/liveunion-pc.XXXXXX") || exit 1
at_exit "rm -rf '$disks'"
truncate -s 64M "$disks/nvme.img" "$disks/sd.img" "$disks/ehci.img"

# 4 CPUs in one host thread (VM_TCG_THREAD, lib/vm.bash): 4 threads on the 2 host CPUs beside another VM made
# the boot to the login prompt take over 400 s in CI once (about 150 s alone)
VM_MACHINE=q35 VM_SMP=4 VM_MEM=2048 VM_TCG_THREAD=single
# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
hw=(-drive "if=none,id=nv,format=raw,file=$disks/nvme.img" -device nvme,serial=liveunion,drive=nv
	-device sdhci-pci -drive "if=none,id=sd,format=raw,file=$disks/sd.img" -device sd-card,drive=sd
	-device qemu-xhci,id=xhci -device usb-kbd,bus=xhci.0 -device usb-tablet,bus=xhci.0
	-device usb-ehci,id=ehci -drive "if=none,id=st,format=raw,file=$disks/ehci.img" -device usb-storage,bus=ehci.0,drive=st
	-device pci-ohci -device ich9-usb-uhci1
	-nic user,model=e1000e -nic user,model=rtl8139
	-audiodev none,id=snd -device ich9-intel-hda -device hda-duplex,audiodev=snd -device virtio-gpu-pci -device i6300esb)
require qemu-starts vm_start pc-hardware cd-bios "$iso" "${hw[@]}"
require login-as-live-user-then-sudo profile_login
vm_note "qemu start to root shell: $(($(now_ms) - VM_T0)) ms"
check init-loaded-our-overlay log_has 'liveunion: overlayfs: loaded our overlay.ko'
check init-loaded-our-squashfs log_has 'liveunion: squashfs: loaded our squashfs.ko'
# the running modules are ours: built out of tree (M=), the kernel marks them O in their taint; Debian's have none
check running-squashfs-is-ours vm_fact 'cat /sys/module/squashfs/taint' OE
check running-overlay-is-ours vm_fact 'cat /sys/module/overlay/taint' OE
check no-module-failed log_lacks 'liveunion: module [^ ]+ \(for .*\) failed to load'
check nproc-is-4 vm_fact nproc 4
check plan-names-flavour vm_run 'liveunion status | grep -E "^  kernel"'
check plan-kernel-pc out_has '^  kernel +pc$'
check plan-overlay-ours out_has '^  kernel.overlay +ours'
check os-release-pc vm_fact '. /etc/os-release; echo $VARIANT_ID' liveunion-pc
check kernel-release vm_fact 'uname -r' 6.12.118+deb12-amd64
check name-max-255 vm_fact 'getconf NAME_MAX /' 255
# every PCI device bound; a failure names each device without a driver (vendor:device, class). Host bridges
# (class 0x0600) never have one: Linux drives them through the PCI core itself.
check pci-all-bound vm_run 'udevadm settle -t 60; n=0; for d in /sys/bus/pci/devices/*; do [ -e "$d/driver" ] && continue; case $(cat $d/class) in 0x0600??) continue ;; esac; echo "no driver: ${d##*/} $(cat $d/vendor):$(cat $d/device) class $(cat $d/class)"; n=$((n + 1)); done; echo "unbound=$n"'
check pci-unbound-0 out_has '^unbound=0$'
check pci-devices-seen vm_run 'ls /sys/bus/pci/devices | wc -l'
check pci-many out_has '^(1[0-9]|2[0-9])$'
check drm-card vm_run 'ls /dev/dri/'
check drm-card0 out_has 'card0'
check hda-card vm_run 'cat /proc/asound/cards'
check hda-listed out_has 'HDA-Intel'
check usb-stick-on-ehci vm_run 'for i in $(seq 30); do ls /dev/disk/by-id/ 2>/dev/null | grep -q usb- && break; sleep 1; done; ls /dev/disk/by-id/'
check usb-stick-seen out_has '^usb-'
# usb-storage is a module here: the init gave it the menu's usb_storage.delay_use= (ISO_USB_DELAY), as modprobe would
check usb-settle-delay-from-menu vm_fact 'cat /sys/module/usb_storage/parameters/delay_use' 100ms
check nvme-seen vm_fact 'test -b /dev/nvme0n1 && echo yes' yes
check sd-seen vm_fact 'test -b /dev/mmcblk0 && echo yes' yes
check two-addresses vm_fact 'for i in $(seq 60); do [ "$(ip -4 -o addr show scope global | grep -c "inet 10\.0\.2\.15/")" -ge 2 ] && break; sleep 1; done; ip -4 -o addr show scope global | grep -c "inet 10\.0\.2\.15/"' 2
vm_stop

# Our module refused (lockdown=integrity allows only signed modules, as Secure Boot does): Debian's loads.
cmdline=$(cat "$OUT/profiles/debian/iso/cmdline")
VM_MACHINE=pc VM_SMP=1 VM_MEM=1024 VM_TCG_THREAD=multi
require qemu-starts-locked-down vm_start pc-hardware-lockdown kernel "" -kernel "$OUT/pc/vmlinuz" \
	-initrd "$OUT/pc/initramfs.img" -append "$cmdline lockdown=integrity" \
	-drive "file=$iso,if=ide,index=2,media=cdrom,readonly=on"
require login-locked-down profile_login
check refused-warning log_has 'liveunion: WARNING: our overlay.ko was refused \(Operation not permitted\): using the kernel.s own overlay module; without our patch NAME_MAX on / is 256, not 255'
check kernel-overlay-loaded log_has 'liveunion: overlayfs: loaded the kernel.s kernel/fs/overlayfs/overlay.ko.xz'
check squashfs-refused-warning log_has 'liveunion: WARNING: our squashfs.ko was refused \(Operation not permitted\): using the kernel.s own squashfs module'
check kernel-squashfs-loaded log_has 'liveunion: squashfs: loaded the kernel.s kernel/fs/squashfs/squashfs.ko.xz'
check running-squashfs-is-debians vm_fact 'echo "taint=[$(cat /sys/module/squashfs/taint)]"' 'taint=[]'
check lockdown-active vm_run 'cat /sys/kernel/security/lockdown'
check lockdown-integrity out_has '\[integrity\]'
check plan-overlay-kernels vm_run 'liveunion status | grep -E "^  kernel.overlay"'
check plan-says-refused out_has 'kernel.s kernel/fs/overlayfs/overlay.ko.xz \(ours refused: Operation not permitted\)'
check name-max-256 vm_fact 'getconf NAME_MAX /' 256
vm_stop

# No medium: the report lists the devices no driver of the initramfs took (the rtl8139 NIC has none there: the
# initramfs carries only the network-boot NICs),
# and live.debug names the module each device pulled in (the IDE controller of the pc machine: ata_piix).
require qemu-starts-no-medium vm_start pc-hardware-nomedium kernel "" -kernel "$OUT/pc/vmlinuz" \
	-initrd "$OUT/pc/initramfs.img" -nic user,model=rtl8139 \
	-append "console=ttyS0,115200n8 live.timeout=3 live.medium=UUID=1999123123595900 live.debug"
require rescue-prompt vm_wait '\(liveunion rescue\)' "$VM_BOOT_TIMEOUT"
check debug-names-module log_has '^liveunion: .*\(pci:v00008086d00007010[^)]*\) -> ata_piix(,|$)'
check lists-unbound-devices log_has '^liveunion: devices with no driver \(pci, usb, virtio, scsi, mmc\):'
check names-rtl8139-without-module log_has '^liveunion: +.*\(pci:v000010ECd00008139[^)]*\): no module in the initramfs for it$'
check bridges-not-listed log_lacks '^liveunion: +.*\(pci:[^)]*bc06sc[^)]*\):'
check ide-not-listed log_lacks '^liveunion: +.*\(pci:v00008086d00007010[^)]*\):'
vm_stop

# The ISO as users boot it from other media: written to a USB stick (xHCI), an NVMe disk and an SD card (sdhci-pci),
# the initramfs loads their drivers by modalias and stacks the verified root from them (up to the hand-over; the
# boot to a login is the CD's above). An SD card's size is a power of two in qemu: the copy is padded.
require medium-copy cp --sparse=always "$iso" "$disks/medium.img"
require medium-padded truncate -s 512M "$disks/medium.img"
for m in usb nvme sd; do
	# shellcheck disable=SC2054 # the commas belong to qemu's option syntax
	case $m in
	usb) bus=(-device qemu-xhci,id=xhci -device usb-storage,bus=xhci.0,drive=m) want='sd[a-z]' ;;
	nvme) bus=(-device nvme,serial=liveunion,drive=m) want='nvme0n1' ;;
	sd) bus=(-device sdhci-pci -device sd-card,drive=m) want='mmcblk0' ;;
	esac
	# on the stick, a user's own delay after the menu's (other spelling): both reach the module, the last counts
	extra=
	[ $m != usb ] || extra=' live.debug usb-storage.delay_use=250ms'
	require "$m-qemu-starts" vm_start "pc-hardware-$m" kernel "" -kernel "$OUT/pc/vmlinuz" -initrd "$OUT/pc/initramfs.img" \
		-append "$cmdline$extra" -drive "if=none,id=m,format=raw,file=$disks/medium.img,snapshot=on" "${bus[@]}"
	require "$m-hand-over" vm_wait '^liveunion: switching to ' "$VM_BOOT_TIMEOUT"
	check "$m-medium-found-on-it" log_has "^liveunion: medium UUID=[0-9]+ found on /dev/${want}p?[0-9]* "
	check "$m-layers-verified" log_has '^liveunion: stack, bottom to top \([0-9]+ layer\(s\), dm-verity\)'
	check "$m-no-module-failed" log_lacks 'liveunion: module [^ ]+ \(for .*\) failed to load'
	[ $m != usb ] || check usb-module-gets-both-delays log_has '^liveunion: module usb_storage: options from the command line: delay_use=100ms delay_use=250ms$'
	vm_stop
done

# UEFI (OVMF) from the CD: GRUB's menu names the flavour and boots the pc kernel to the hand-over.
require uefi-qemu-starts vm_start pc-hardware-uefi cd-uefi "$iso"
require uefi-hand-over vm_wait '^liveunion: switching to ' "$VM_BOOT_TIMEOUT"
check uefi-menu-names-pc log_has 'liveunion [^ ]+, pc kernel'
check uefi-kernel-is-pc log_has '^liveunion: +kernel=pc$'
check uefi-medium-is-the-cd log_has '^liveunion: medium UUID=[0-9]+ found on /dev/sr0 '
vm_stop
finish

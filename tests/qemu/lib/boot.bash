# shellcheck shell=bash
# Sourced by tests/qemu/boot-*.sh (build host): the assertions of one way of booting the ISO.
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "${BASH_SOURCE[0]}")/vm.bash"

# boot_scenario MODE: the issue-2 assertions for one way of booting the ISO (boot-*.sh call this).
boot_scenario() {
	local mode=$1 token version
	version=$(cat "$TOP/VERSION")
	token="liveunion-$mode-$$-$RANDOM"
	require iso-exists test -f "$ISO"
	require "$mode-qemu-starts" vm_start "boot-$mode" "$mode" "$ISO"
	require "$mode-login" vm_login
	check banner-shows-version banner_has "liveunion $version"
	# every CPU qemu gives is used (CONFIG_SMP): nproc counts the CPUs the kernel brought online
	check "nproc-is-$VM_SMP" vm_fact nproc "$VM_SMP"
	vm_run "grep ' / ' /proc/mounts | tail -n 1"
	check root-is-overlay out_has '^[^ ]+ / overlay '
	check overlay-upper-is-run-live-upper out_has 'upperdir=/run/live/upper/upper,'
	check overlay-lower-has-10-base out_has 'lowerdir[+]?=[^ ]*/run/live/layers/10-base'
	vm_run "grep ' /run/live/medium ' /proc/mounts"
	check medium-mounted-ro out_has '^[^ ]+ /run/live/medium [^ ]+ ro[, ]'
	# the kernel's iso9660 (a build host may lack it: tests/unit/init-stack.sh then mounts a stand-in)
	check medium-is-iso9660 out_has '^[^ ]+ /run/live/medium iso9660 '
	case "$mode" in # the medium must be the device this mode attached, not some other path to the image
	cd-*) check medium-is-the-cd out_has '^/dev/sr[0-9]+ ' ;;
	usb-*) check medium-is-the-usb-disk out_has '^/dev/sd[a-z]+[0-9]* ' ;;
	esac
	# the menus' usb_storage.delay_use= (ISO_USB_DELAY) in force: not the kernel's 1 s before a stick is probed
	case "$mode" in usb-*) check usb-settle-delay-from-menu vm_fact 'cat /sys/module/usb_storage/parameters/delay_use' 100ms ;; esac
	check medium-write-fails fails vm_run "echo x >/run/live/medium/$token"
	check medium-write-error-is-read-only out_has 'Read-only file system'
	check medium-has-no-written-file fails vm_run "test -e /run/live/medium/$token"
	check root-write-works vm_fact "echo $token >/$token && sync && cat /$token" "$token"
	check root-write-lands-in-upper vm_run "test -f /run/live/upper/upper/$token"
	check run-live-lists-stack vm_run 'ls -1 /run/live'
	check run-live-has-medium-layers-upper-plan out_has_all medium layers upper plan
	check layer-10-base-mounted vm_run "grep ' /run/live/layers/10-base squashfs ro' /proc/mounts"
	check plan-is-key-value vm_run "grep -c '^[a-z][a-z0-9._]*=' /run/live/plan"
	check plan-has-lines out_has '^[1-9][0-9]*$'
	# the boot budget (bench/boot) reads the init's own step times from the plan
	check plan-has-init-time vm_run "grep -E '^time[.]init=[0-9]+$' /run/live/plan"
	check plan-has-switch-time vm_run "grep -E '^time[.]switch=[0-9]+([+][0-9]+)?$' /run/live/plan"
	# the init's whole story is in dmesg (first and last line), and the kernel's limit on writers is back on
	check dmesg-has-init-start vm_run "dmesg | grep -c 'liveunion: init '"
	check dmesg-has-switch vm_run "dmesg | grep -c 'liveunion: switching to '"
	check devkmsg-limit-restored vm_fact 'cat /proc/sys/kernel/printk_devkmsg' ratelimit
	require reboot-in-same-vm vm_reboot
	check banner-after-reboot banner_has "liveunion $version"
	vm_run "grep ' / ' /proc/mounts | tail -n 1"
	check root-is-overlay-after-reboot out_has '^[^ ]+ / overlay '
	check written-file-gone-after-reboot vm_run "test ! -e /$token && test ! -e /run/live/upper/upper/$token"
	vm_stop
	finish
}

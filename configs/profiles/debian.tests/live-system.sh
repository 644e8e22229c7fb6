# live-system.sh: the debian profile as an IDE CD, BIOS, with a virtio NIC: systemd boots with no failed unit, the
# live user on the serial console with sudo, DHCP, python3 and perl run, / is the overlay (medium read-only, writes
# in tmpfs, gone after reboot), a new machine-id each boot. Run by ./build.sh --profile debian check (and in our
# suite by tests/qemu/profile-debian.sh).
# shellcheck shell=bash disable=SC2016,SC2034 # guest commands in single quotes; the VM_ tunables are the library's
token="liveunion-debian-$$-$RANDOM"
VM_POWEROFF_WAIT=300 # systemd's shutdown under TCG
running() { # systemd has finished starting up (running or degraded)
	vm_run 'systemctl is-system-running --wait' 300
	case "$VM_OUT" in *running* | *degraded*) return 0 ;; esac
	return 1
}
require qemu-starts vm_boot --mem 1024 -- -nic user,model=virtio-net-pci
require login-as-live-user-then-sudo vm_login
check banner-names-profile banner_has "profile debian"
check systemd-running running
check systemd-is-pid-1 vm_fact 'readlink /proc/1/exe' /usr/lib/systemd/systemd
check no-failed-units vm_none 'systemctl --failed --no-legend --plain'
# the image is complete: no "first boot after an update" units at every live boot (/etc/.updated, /var/.updated)
check sysusers-not-run-at-boot vm_fact 'systemctl show -P ConditionResult systemd-sysusers.service' no
check etc-marked-updated-at-usr-time vm_fact 'n=$(sed -n "s/^TIMESTAMP_NSEC=//p" /etc/.updated); [ "$((n / 1000000000))" -eq "$(stat -c %Y /usr)" ] && echo same' same
check serial-getty-on-ttyS0 vm_run 'systemctl is-active serial-getty@ttyS0.service'
check live-user-in-sudo-group vm_run 'id -nG live'
check live-user-groups out_has '(^| )sudo( |$)'
check no-root-password-login vm_run 'grep "^root:" /etc/shadow | cut -d: -f2'
check root-password-locked out_has '^[!*]'
check python3-runs vm_fact 'python3 -c "import sys, json; print(json.dumps({\"v\": sys.version_info[0], \"x\": 6 * 7}))"' '{"v": 3, "x": 42}'
check perl-runs vm_fact 'perl -MPOSIX -e "print floor(42.5), qq(\n)"' 42
check dhcp-address vm_run 'for i in $(seq 60); do ip -4 -o addr show scope global | grep -q "inet 10\.0\.2\.15/" && break; sleep 1; done; ip -4 -o addr show scope global'
check dhcp-address-is-qemu-user-net out_has 'inet 10\.0\.2\.15/24'
check dns-from-dhcp vm_run 'for i in $(seq 30); do resolvectl dns 2>&1 | grep -q "10\.0\.2\.3" && break; sleep 1; done; resolvectl dns 2>&1'
check dns-server-is-qemu out_has '10\.0\.2\.3'
check no-initramfs-generator vm_none 'dpkg-query -W -f="\${db:Status-Status} \${Package}\n"' '^installed (initramfs-tools|dracut)$'
check fstab-empty vm_none 'cat /etc/fstab' '^[^#]'
check locale-from-profile vm_run '. /etc/default/locale; echo $LANG; locale -a'
check locale-generated out_has '^en_US\.utf8$'
check timezone-from-profile vm_fact 'readlink /etc/localtime' /usr/share/zoneinfo/Etc/UTC
check run-is-handed-over vm_fact 'test -f /run/live/plan && findmnt -n -o FSTYPE /run' tmpfs
vm_run 'cat /etc/machine-id'
mid1=$VM_OUT
check machine-id-generated test "${#mid1}" -eq 32
# boot and modify: the medium refuses writes, / takes them in the upper, a reboot forgets them
vm_run "grep ' / ' /proc/mounts | tail -n 1"
check root-is-overlay out_has '^[^ ]+ / overlay '
check overlay-lower-is-10-base out_has 'lowerdir[+]?=[^ ]*/run/live/layers/10-base'
vm_run "grep ' /run/live/medium ' /proc/mounts"
check medium-is-the-cd-read-only out_has '^/dev/sr[0-9]+ /run/live/medium [^ ]+ ro[, ]'
check medium-write-fails fails vm_run "echo x >/run/live/medium/$token"
check medium-write-error-is-read-only out_has 'Read-only file system'
check root-write-works vm_fact "echo $token >/$token && echo $token >/etc/$token && sync && cat /$token" "$token"
check root-write-lands-in-upper vm_run "test -f /run/live/upper/upper/$token && test -f /run/live/upper/upper/etc/$token"
check apt-database-readable vm_fact 'dpkg-query -W systemd | cut -f1' systemd
require reboot-in-same-vm vm_reboot
check systemd-running-after-reboot running
check written-files-gone-after-reboot vm_run "test ! -e /$token && test ! -e /etc/$token"
vm_run 'cat /etc/machine-id'
check new-machine-id-each-boot test "${#VM_OUT}" -eq 32 -a "$VM_OUT" != "$mid1"
check no-failed-units-after-reboot vm_none 'systemctl --failed --no-legend --plain'
check powers-off vm_poweroff

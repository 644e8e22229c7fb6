# shellcheck shell=bash
# Helpers for the profile scenarios (tests/qemu/profile-*.sh, host side).
# The Debian-based profiles have no password-less root: the console login is the live user's (empty password
# on the live system only), then sudo gives the root shell the other helpers expect.
# shellcheck source=tests/qemu/lib/vm.bash
. "$(dirname "${BASH_SOURCE[0]}")/vm.bash"

PROFILE_USER=${PROFILE_USER:-live}
VM_BOOT_TIMEOUT=${PROFILE_BOOT_TIMEOUT:-400} # systemd under TCG, UEFI included
# each step of the login after the prompt (a guest busy starting a browser under TCG takes minutes)
PROFILE_LOGIN_WAIT=${PROFILE_LOGIN_WAIT:-60}

# profile_iso NAME: builds (or finds cached) out/liveunion-NAME.iso; the build's own output goes to stderr.
# A build that failed once in this test run (tests/run sets LIVEUNION_TEST_RUN) is not tried again by the
# next scenario of the same profile: it would fail the same way (a mirror out of reach) and cost as long.
profile_iso() {
	local mark=$OUT/tests/profile-$1.failed
	if [ -n "${LIVEUNION_TEST_RUN:-}" ] && [ "$(cat "$mark" 2>/dev/null)" = "$LIVEUNION_TEST_RUN" ]; then
		vm_note "the $1 profile failed to build earlier in this test run (its log is in that scenario's log): not tried again"
		return 1
	fi
	if ! "$TOP/build.sh" --profile "$1" >&2; then
		mkdir -p "$OUT/tests" && printf '%s\n' "${LIVEUNION_TEST_RUN:-}" >"$mark"
		return 1
	fi
	rm -f "$mark"
}

# profile_login: log in as the live user on the serial console, then a root shell (dash: no line editing,
# so vm_quiet's stty -echo holds) through sudo: vm_login as that user. PROFILE_POKE=1: the login prompt may already
# be on the console (the caller waited for something else first): an empty line makes getty print it again.
profile_login() {
	VM_LOGIN_USER=$PROFILE_USER VM_LOGIN_PROMPT='login: *$' VM_LOGIN_WAIT=$PROFILE_LOGIN_WAIT \
		VM_LOGIN_POKE=${PROFILE_POKE:-} vm_login
}

# profile_reboot: reboot in the same qemu process and log in again.
profile_reboot() {
	vm_reboot_begin 'systemctl reboot' && profile_login
}

# profile_poweroff [TIMEOUT]: systemctl poweroff in the live system, until the kernel says it powers down (within
# TIMEOUT seconds, default 180); qemu is left to the caller.
profile_poweroff() {
	vm_mark
	vm_send 'systemctl poweroff' || return 1
	vm_wait 'reboot: Power down' "${1:-180}"
}

# profile_running: wait until systemd has finished starting up (running or degraded), print the state.
profile_running() {
	vm_run 'systemctl is-system-running --wait' 300
	case "$VM_OUT" in *running* | *degraded*) return 0 ;; esac
	return 1
}

# shellcheck shell=bash
# The floor of the boot benchmarks (bench/boot, bench/boot-peers): an initramfs whose /init only prints a marker
# and powers off.
# floor_cpio WORK GEN_INIT_CPIO: WORK/floor.cpio, made with the kernel tree's gen_init_cpio (time SOURCE_DATE_EPOCH).
# Its /init is the least a userspace can do (no shell, no libc start-up beyond musl's): it writes
# "LIVEUNION-FLOOR-MARKER" to /dev/console (the last console= of the command line: the serial port) and powers off.
floor_cpio() {
	local work=$1 gen=$2 cc=musl-gcc
	cat >"$work/floor.c" <<'C'
#include <sys/reboot.h>
#include <unistd.h>
int main(void)
{
	static const char m[] = "\nLIVEUNION-FLOOR-MARKER\n";
	if (write(1, m, sizeof(m) - 1) != (ssize_t)(sizeof(m) - 1))
		return 1;
	sync();
	return reboot(RB_POWER_OFF);
}
C
	command -v "$cc" >/dev/null || cc=gcc
	"$cc" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Os -static -o "$work/floor-init" "$work/floor.c" || return 1
	printf '%s\n' 'dir /dev 0755 0 0' 'nod /dev/console 0600 0 0 c 5 1' "file /init $work/floor-init 0755 0 0" \
		>"$work/floor.list" || return 1
	"$gen" -t "${SOURCE_DATE_EPOCH:-0}" "$work/floor.list" >"$work/floor.cpio"
}

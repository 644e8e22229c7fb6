# shellcheck shell=bash
# grub-rescue.sh: an ISO that is not ours and has no serial console of its own: Debian's GRUB rescue CD
# (package grub-rescue-pc, /usr/lib/grub-rescue/grub-rescue-cdrom.iso), BIOS. Its menu is checked on the screen,
# keys typed on the VGA keyboard open GRUB's command line and move its input to the serial port, then commands are
# typed there and their output read on the serial console, and GRUB's halt powers the machine off.
#   ./build.sh check --iso /usr/lib/grub-rescue/grub-rescue-cdrom.iso tests/check/scenarios/grub-rescue.sh
require booted vm_boot
# the menu: black screen, the first entry highlighted in grey (the bar to its right end); then the bar is gone
check menu-on-screen screen_wait grub-menu 120 5,5=000000 400,71=aaaaaa 690,71=aaaaaa 400,87!=aaaaaa
check key-c-opens-command-line screen_keys c
check menu-gone screen_wait grub-command-line 30 690,71=000000 400,300=000000
check serial-terminal-typed screen_type serial
check serial-terminal-on screen_keys ret
check input-on-serial-typed screen_type 'terminal_input serial'
check input-on-serial screen_keys ret
# from here on GRUB reads the serial console: the rest is typed there
vm_send 'terminal_output --append serial'
check prompt-on-serial vm_wait 'grub> ' 30
vm_send 'echo hello-foreign'
check echo-answers vm_wait '^.?hello-foreign *$' 30
vm_send 'ls'
check ls-lists-the-cd vm_wait '^.?\(cd\) .*\(fd0\)' 30
check screenshot-kept screen_shot grub-after
vm_send 'halt'
check halt-powers-off vm_wait_exit 60

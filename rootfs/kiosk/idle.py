#!/usr/bin/python3
"""liveunion kiosk idle reset (live system, root: liveunion-kiosk-idle.service).

Usage: idle.py SECONDS. Watches every /dev/input/event* device (rescanned every 5 s: USB keyboards come and go);
once there has been input and then none for SECONDS, it marks /run/liveunion-kiosk/reset and restarts
liveunion-kiosk.service, whose `kiosk prepare` then removes the browser profile: the next visitor gets a fresh
session (no cookies, form data or history). No input since the last start: nothing to reset."""
import glob
import os
import select
import subprocess
import sys
import time


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) <= 0:
        sys.exit("usage: idle.py SECONDS (a positive number)")
    idle = int(sys.argv[1])
    fds = {}
    last_input, used, scanned = time.monotonic(), False, 0.0
    while True:
        now = time.monotonic()
        if now - scanned >= 5:
            scanned = now
            for path in glob.glob("/dev/input/event*"):
                if path not in fds.values():
                    try:
                        fds[os.open(path, os.O_RDONLY | os.O_NONBLOCK)] = path
                    except OSError as e:
                        print(f"kiosk idle: cannot open {path}: {e}", file=sys.stderr, flush=True)
        ready, _, _ = select.select(list(fds), [], [], 1.0)
        for fd in ready:
            try:
                if os.read(fd, 4096):
                    last_input, used = time.monotonic(), True
            except OSError:  # the device went away
                os.close(fd)
                del fds[fd]
        if used and time.monotonic() - last_input >= idle:
            print(f"kiosk idle: no input for {idle} s: resetting the session", file=sys.stderr, flush=True)
            os.makedirs("/run/liveunion-kiosk", exist_ok=True)
            open("/run/liveunion-kiosk/reset", "w").close()
            r = subprocess.run(["systemctl", "restart", "liveunion-kiosk.service"])
            if r.returncode != 0:
                print(f"kiosk idle: systemctl restart liveunion-kiosk.service failed ({r.returncode})",
                      file=sys.stderr, flush=True)
            used, last_input = False, time.monotonic()


main()

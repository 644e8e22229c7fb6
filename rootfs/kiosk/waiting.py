#!/usr/bin/python3
"""liveunion kiosk (live system, as the kiosk user, started by session): the browser's first page.

Serves on 127.0.0.1:PORT a local page that says "waiting for <host>" and asks /ready every 2 s; /ready answers
200 once the kiosk's URL answers an HTTP request with a status below 500, and the page then replaces itself by
the URL. So a server that is down at boot leaves this page on screen, never the browser's own error page.
Usage: waiting.py BROWSER-PID PORT URL; it returns once it listens and goes on in the background. While the
kiosk is up, the URL is probed every CHECK seconds; after FAILS failures in a row the browser (BROWSER-PID: the
session shell, which then execs the browser) is ended, systemd starts the kiosk again, and the page is this one
again. It ends with the browser."""
import html
import http.server
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

CHECK, FAILS = 10, 3

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>waiting for {host}</title>
<style>
html, body {{ margin: 0; height: 100%; background: #202a44; color: #f0f0f0; font: 32px sans-serif;
  cursor: none; overflow: hidden; }}
main {{ display: flex; flex-direction: column; align-items: center; justify-content: center; height: 100%; }}
small {{ font-size: 20px; color: #a0a8c0; }}
</style></head>
<body><main><p id="w">waiting for {host}</p><small id="n">trying</small></main>
<script>
const target = {target};
let tries = 0;
async function poll() {{
  tries += 1;
  try {{
    const r = await fetch("/ready", {{cache: "no-store"}});
    if (r.ok) {{ location.replace(target); return; }}
  }} catch (e) {{}}
  document.getElementById("n").textContent = "tried " + tries + " times, retrying every 2 s";
  setTimeout(poll, 2000);
}}
poll();
</script></body></html>
"""


def answers(url):
    """The server answers: any HTTP status below 500 (a 404 is the venue's page to fix, not an outage)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=4) as r:
            return r.status < 500
    except urllib.error.HTTPError as e:
        return e.code < 500
    except (OSError, ValueError):
        return False


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def main():
    if len(sys.argv) != 4 or not sys.argv[1].isdigit() or not sys.argv[2].isdigit():
        sys.exit("usage: waiting.py BROWSER-PID PORT URL")
    browser, port, url = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    host = urllib.parse.urlsplit(url).hostname or url
    page = PAGE.format(host=html.escape(host), target=repr(url).replace("<", "\\x3c")).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/ready":
                ok = answers(url)
                self.send_response(200 if ok else 503)
                body = b"ready\n" if ok else b"waiting\n"
            else:
                self.send_response(200)
                body = page
            self.send_header("Content-Type", "text/html; charset=utf-8" if body is page else "text/plain")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            pass

    # The server of a browser that was just killed may still hold the port for a second or two.
    for _ in range(60):
        try:
            server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
            break
        except OSError as e:
            err = e
            time.sleep(0.5)
    else:
        sys.exit(f"kiosk: cannot listen on 127.0.0.1:{port}: {err}")
    # Listening: the parent returns, so that session starts the browser only now (never on a refused connection).
    if os.fork() > 0:
        os._exit(0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    up, fails, last = False, 0, time.monotonic()
    while alive(browser):
        time.sleep(1)
        if time.monotonic() - last < CHECK:
            continue
        last = time.monotonic()
        if answers(url):
            up, fails = True, 0
            continue
        fails += 1
        # Only an outage after the page was reached ends the browser: before that, this page is on screen.
        if up and fails >= FAILS:
            print(f"kiosk: {url} has not answered {FAILS} times in a row: restarting on the waiting page",
                  file=sys.stderr, flush=True)
            os.kill(browser, signal.SIGTERM)
            return


main()

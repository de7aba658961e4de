"""`make screenshots`: the dashboard's three pages, light and dark, as PNGs for the README.

Usage: dashboard-screenshots.py FETCHRUN OUT_DIR

Serves a few feeds and a shop page from 127.0.0.1 (a free port), lets FETCHRUN record a
history of them (two runs, the page's price changed between), starts a watch with --listen
and photographs `/`, `/sources/shop` and `/outputs` in Debian's headless chromium
(Playwright with executable_path; nothing is downloaded).
"""
import http.server
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from playwright.sync_api import sync_playwright

fetchrun, out_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
files = {}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = files.get(self.path)
        if body is None:
            self.send_response(500 if self.path == "/down.xml" else 404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8" if self.path.endswith(".html") else "application/rss+xml")
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(503 if self.path == "/chat" else 200)
        self.end_headers()

    def log_message(self, *args):
        pass


def feed(title, items):
    entries = "".join(f"<item><guid>{guid}</guid><title>{text}</title><link>https://example.org/{guid}</link></item>" for guid, text in items)
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>{title}</title>{entries}</channel></rss>'


def page(price, stock):
    return f"<html><head><meta charset=utf-8></head><body><div id=offer><h2>Kaffeemühle «Brno»</h2><p class=price>{price}</p><p class=stock>{stock}</p></div></body></html>"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
origin = f"http://127.0.0.1:{server.server_address[1]}"
listen = free_port()

work = tempfile.mkdtemp(prefix="fetchrun-screenshots-")
with open(os.path.join(work, "sources.yaml"), "w") as config:
    config.write(f"""state_dir: state
listen: {{ address: "127.0.0.1:{listen}" }}
defaults: {{ interval: 30m }}
sources:
  - {{ name: shop, type: page, url: "{origin}/shop.html", css: "#offer", tags: [shops] }}
  - {{ name: kernel-news, type: rss, url: "{origin}/kernel.xml", tags: [tech] }}
  - {{ name: tokyo-transit, type: rss, url: "{origin}/transit.xml", tags: [travel, 東京] }}
  - {{ name: city-council, type: rss, url: "{origin}/down.xml", tags: [local] }}
  - {{ name: weather-alerts, type: rss, url: "{origin}/weather.xml", interval: 10m }}
outputs:
  - {{ name: phone, type: webhook, url: "{origin}/hook" }}
  - {{ name: team-chat, type: webhook, url: "{origin}/chat" }}
""")

files["/shop.html"] = page("1 299,00 €", "In stock")
files["/kernel.xml"] = feed("Kernel", [("k1", "Linux 6.18 released")])
files["/transit.xml"] = feed("Transit", [("t1", "Yamanote line: normal service")])
files["/weather.xml"] = feed("Weather", [("w1", "No warnings")])
subprocess.run([fetchrun, "run"], cwd=work, check=False, capture_output=True)
files["/shop.html"] = page("1 099,00 €", "Only 2 left")
files["/kernel.xml"] = feed("Kernel", [("k2", "Rust in the kernel: new drivers merged"), ("k1", "Linux 6.18 released")])
files["/transit.xml"] = feed("Transit", [("t2", "山手線: 遅延 (signal check at 渋谷)"), ("t1", "Yamanote line: normal service")])
subprocess.run([fetchrun, "run"], cwd=work, check=False, capture_output=True)

watch = subprocess.Popen([fetchrun, "watch", "--for", "120s"], cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    base = f"http://127.0.0.1:{listen}"
    for _ in range(200):
        try:
            if len(urllib.request.urlopen(base + "/status", timeout=2).read().splitlines()) == 5:
                break
        except OSError:
            pass
        time.sleep(0.1)
    time.sleep(2)  # the watch's first fetches, spread over its start
    os.makedirs(out_dir, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        for scheme in ["light", "dark"]:
            context = browser.new_context(viewport={"width": 1100, "height": 720}, color_scheme=scheme)
            shot = context.new_page()
            for name, path in [("sources", "/"), ("source", "/sources/shop"), ("outputs", "/outputs")]:
                shot.goto(base + path)
                shot.screenshot(path=os.path.join(out_dir, f"dashboard-{name}-{scheme}.png"), full_page=name == "source")
                print(os.path.join(out_dir, f"dashboard-{name}-{scheme}.png"))
            context.close()
        browser.close()
finally:
    watch.terminate()
    watch.wait()
    server.shutdown()

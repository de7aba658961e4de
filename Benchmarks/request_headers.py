#!/usr/bin/env python3
"""Prints the header lines fetchrun's rss adapter sends besides the ones curl makes itself
(Host, Accept-Encoding) and the validators (If-None-Match, If-Modified-Since): today its
User-Agent and Accept. The yardstick reads them (`--request-headers`), so that its requests
are fetchrun's byte for byte.

    Benchmarks/request_headers.py FETCHRUN > FILE

They are taken from a request, not written down here: fetchrun fetches one feed from a
listener on 127.0.0.1 that this script runs, in a state folder of its own that is then
removed. Exits 1 when no request came.
"""
import http.server
import os
import subprocess
import sys
import tempfile
import threading

OWN_OR_VALIDATORS = {"host", "accept-encoding", "if-none-match", "if-modified-since"}
FEED = b'<?xml version="1.0"?><rss version="2.0"><channel><title>probe</title></channel></rss>'


class Listener(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.requests.append(list(self.headers.items()))
        self.send_response(200)
        self.send_header("Content-Type", "application/rss+xml")
        self.send_header("Content-Length", str(len(FEED)))
        self.end_headers()
        self.wfile.write(FEED)

    def log_message(self, *args):
        pass


def request_headers(fetchrun):
    """The header lines of the first request `fetchrun` sends, those curl makes and the
    validators left out, in the order they were sent."""
    server = http.server.HTTPServer(("127.0.0.1", 0), Listener)
    server.requests = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as work:
            config = os.path.join(work, "sources.yaml")
            with open(config, "w") as file:
                file.write(f"sources:\n  - name: probe\n    type: rss\n    url: http://127.0.0.1:{server.server_port}/feed.xml\n")
            try:
                subprocess.run([fetchrun, "--config", config, "--state-dir", os.path.join(work, "state")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            except subprocess.TimeoutExpired:
                pass  # what it sent before hanging still counts
    finally:
        server.shutdown()
        server.server_close()
    if not server.requests:
        return None
    return [f"{name}: {value}" for name, value in server.requests[0] if name.lower() not in OWN_OR_VALIDATORS]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: request_headers.py FETCHRUN")
    lines = request_headers(sys.argv[1])
    if lines is None:
        sys.exit(f"request_headers.py: {sys.argv[1]} sent no request to the listener")
    print("\n".join(lines))

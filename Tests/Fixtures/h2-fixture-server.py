#!/usr/bin/python3
"""An HTTP/2 feed server on 127.0.0.1 for fetchrun's tests and benchmarks.

TLS with ALPN "h2" (--cert, --key: a certificate the tests make with their own CA), or
--plain: HTTP/2 without TLS, for clients with prior knowledge (h2c). Binds a free port and
prints it as the first line of stdout; stops when stdin closes or on SIGTERM.

On stopping, prints what it counted as one JSON line (see /stats).

Routes (each takes ?latency=100ms, waited before the answer):
  /feed/N.xml   an RSS feed of 20 items, ETag "feed-N"; If-None-Match with it gets a 304
  /hang         never answers
  /stats        JSON: connections accepted, requests served, most streams open at once on one
                connection
Built on the h2 library (Debian's python3-h2): frames, HPACK and flow control are its job;
what is answered, when, is ours.
"""
import argparse
import asyncio
import json
import signal
import ssl
import sys
from urllib.parse import urlsplit, parse_qs

import h2.config
import h2.connection
import h2.events

stats = {"connections": 0, "requests": 0, "max_streams_on_a_connection": 0}


def duration(text):
    """'100ms', '2s' or a number of seconds."""
    if not text:
        return 0.0
    if text.endswith("ms"):
        return float(text[:-2]) / 1000
    if text.endswith("s"):
        return float(text[:-1])
    return float(text)


def feed(number):
    items = []
    for index in range(20):
        items.append(
            f"<item><title>Feed {number} story {index}</title>"
            f"<link>https://news.example/{number}/{index}</link>"
            f"<guid>https://news.example/{number}/{index}</guid>"
            f"<pubDate>Mon, 0{1 + index % 9} Jun 2026 10:00:00 GMT</pubDate>"
            f"<description>Story {index} of feed {number}, told at some length so that the feed has a realistic size.</description></item>"
        )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>HTTP/2 feed {number}</title>'
        f"<link>https://news.example/{number}</link>{''.join(items)}</channel></rss>"
    ).encode()


class Connection:
    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer
        self.h2 = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.open_streams = set()
        self.window_waiters = {}

    async def serve(self):
        stats["connections"] += 1
        self.h2.initiate_connection()
        await self.flush()
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                for event in self.h2.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        self.open_streams.add(event.stream_id)
                        stats["max_streams_on_a_connection"] = max(stats["max_streams_on_a_connection"], len(self.open_streams))
                        asyncio.ensure_future(self.answer(event.stream_id, dict(event.headers)))
                    elif isinstance(event, (h2.events.StreamReset, h2.events.StreamEnded)):
                        if isinstance(event, h2.events.StreamReset):
                            self.open_streams.discard(event.stream_id)
                    elif isinstance(event, h2.events.WindowUpdated):
                        for waiter in self.window_waiters.values():
                            if not waiter.done():
                                waiter.set_result(None)
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        return
                await self.flush()
        except (ConnectionError, h2.exceptions.ProtocolError, ssl.SSLError):
            pass
        finally:
            self.writer.close()

    async def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def answer(self, stream, headers):
        parts = urlsplit(headers.get(":path", "/"))
        query = parse_qs(parts.query)
        await asyncio.sleep(duration(query.get("latency", [""])[0]))
        path = parts.path
        if path == "/hang":
            return
        stats["requests"] += 1
        if path.startswith("/feed/") and path.endswith(".xml") and path[6:-4].isdigit():
            number = int(path[6:-4])
            etag = f'"feed-{number}"'
            if headers.get("if-none-match") == etag:
                await self.respond(stream, 304, [("etag", etag)], b"")
            else:
                await self.respond(stream, 200, [("content-type", "application/rss+xml"), ("etag", etag)], feed(number))
        elif path == "/stats":
            await self.respond(stream, 200, [("content-type", "application/json")], json.dumps(stats).encode())
        else:
            await self.respond(stream, 404, [("content-type", "text/plain")], b"not found\n")

    async def respond(self, stream, status, headers, body):
        try:
            self.h2.send_headers(stream, [(":status", str(status)), ("content-length", str(len(body)))] + headers, end_stream=not body)
            await self.flush()
            while body:
                window = min(self.h2.local_flow_control_window(stream), self.h2.max_outbound_frame_size)
                if window <= 0:
                    waiter = asyncio.get_running_loop().create_future()
                    self.window_waiters[stream] = waiter
                    await waiter
                    del self.window_waiters[stream]
                    continue
                chunk, body = body[:window], body[window:]
                self.h2.send_data(stream, chunk, end_stream=not body)
                await self.flush()
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, ConnectionError):
            pass
        finally:
            self.open_streams.discard(stream)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--plain", action="store_true")
    arguments = parser.parse_args()
    context = None
    if not arguments.plain:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(arguments.cert, arguments.key)
        context.set_alpn_protocols(["h2"])

    async def accept(reader, writer):
        await Connection(reader, writer).serve()

    server = await asyncio.start_server(accept, "127.0.0.1", 0, ssl=context, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, lambda: stop.done() or stop.set_result(None))
    # Stop when whoever started us goes away (stdin closes).
    loop.add_reader(sys.stdin.fileno(), lambda: sys.stdin.buffer.read1(4096) or stop.done() or stop.set_result(None))
    await stop
    server.close()
    # What was counted, for the test that started us.
    print(json.dumps(stats), flush=True)


asyncio.run(main())

#!/usr/bin/env python3
"""An SMTP receiver that offers STARTTLS, for fetchrun's end-to-end tests.

Listens on 127.0.0.1 on a free port and prints the port on the first line. Offers STARTTLS
with the given certificate, and AUTH only once the connection is encrypted. Every message
taken is appended to --messages as one JSON line: whether it came over TLS, the login, the
envelope and the data. Stops when stdin closes.
"""
import argparse
import base64
import json
import socket
import ssl
import sys
import threading

parser = argparse.ArgumentParser()
parser.add_argument("--cert", required=True)
parser.add_argument("--key", required=True)
parser.add_argument("--messages", required=True)
args = parser.parse_args()

context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(args.cert, args.key)
lock = threading.Lock()


def address(text):
    """`<a@b> SIZE=…` → `a@b`."""
    text = text.strip()
    if "<" in text and ">" in text.split("<", 1)[1]:
        return text.split("<", 1)[1].split(">", 1)[0]
    return text.split(" ")[0] if text else ""


def converse(connection):
    stream = connection.makefile("rb")
    tls = False
    login = None
    envelope = {"from": "", "to": []}

    def reply(text):
        connection.sendall((text + "\r\n").encode())

    def line():
        raw = stream.readline(1 << 20)
        if not raw:
            return None
        return raw.decode("utf-8", "replace").rstrip("\r\n")

    reply("220 fixture ESMTP")
    while True:
        command = line()
        if command is None:
            return
        upper = command.upper()
        if upper.startswith("EHLO"):
            if tls:
                reply("250-fixture")
                reply("250-AUTH PLAIN")
                reply("250 8BITMIME")
            else:
                reply("250-fixture")
                reply("250-STARTTLS")
                reply("250 8BITMIME")
        elif upper == "STARTTLS" and not tls:
            reply("220 ready for TLS")
            connection = context.wrap_socket(connection, server_side=True)
            stream = connection.makefile("rb")
            tls = True
        elif upper.startswith("AUTH PLAIN"):
            if not tls:
                reply("538 encryption required")
                continue
            encoded = command[10:].strip()
            if not encoded:
                reply("334 ")
                encoded = line() or ""
            parts = base64.b64decode(encoded).decode("utf-8", "replace").split("\0")
            login = parts[1:3] if len(parts) == 3 else None
            reply("235 authenticated")
        elif upper.startswith("MAIL FROM:"):
            envelope = {"from": address(command[10:]), "to": []}
            reply("250 ok")
        elif upper.startswith("RCPT TO:"):
            envelope["to"].append(address(command[8:]))
            reply("250 ok")
        elif upper == "DATA":
            reply("354 go on")
            lines = []
            while True:
                data_line = line()
                if data_line is None or data_line == ".":
                    break
                lines.append(data_line[1:] if data_line.startswith("..") else data_line)
            record = {"tls": tls, "login": login, "from": envelope["from"], "to": envelope["to"], "data": "\r\n".join(lines)}
            with lock, open(args.messages, "a") as messages:
                messages.write(json.dumps(record) + "\n")
            reply("250 queued")
        elif upper == "QUIT":
            reply("221 bye")
            return
        else:
            reply("250 ok" if upper.startswith(("HELO", "NOOP", "RSET")) else "502 not implemented")


def serve(listener):
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return

        def run(connection=connection):
            try:
                converse(connection)
            except (OSError, ssl.SSLError):
                pass
            finally:
                connection.close()

        threading.Thread(target=run, daemon=True).start()


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print(listener.getsockname()[1], flush=True)
threading.Thread(target=serve, args=(listener,), daemon=True).start()
sys.stdin.read()
listener.close()

#!/usr/bin/env python3
"""Reads a mail as fetchrun sent it and says what Python's `email` package makes of it.

Usage: mail-parts.py MESSAGE_FILE [HTML_OUT]

Parses the file with the standard library's parser (policy.default, as a mail program would)
and prints one JSON object: the decoded headers that matter (Subject, From, To, List-Id,
Message-ID, Content-Type), any defects the parser found, and every leaf part with its type,
charset, transfer encoding and decoded text. With HTML_OUT, the text/html part is written
there (UTF-8) for a browser to open.
"""
import email
import email.policy
import json
import sys

with open(sys.argv[1], "rb") as file:
    message = email.message_from_binary_file(file, policy=email.policy.default)

parts = []
for part in message.walk():
    if part.is_multipart():
        continue
    parts.append({
        "type": part.get_content_type(),
        "charset": part.get_content_charset(),
        "encoding": part.get("Content-Transfer-Encoding"),
        "text": part.get_content(),
        "defects": [type(defect).__name__ for defect in part.defects],
    })

result = {
    "headers": {name: str(message.get(name)) for name in ["Subject", "From", "To", "List-Id", "Message-ID", "Content-Type", "X-Fetchrun-Delivery-Ids"] if message.get(name) is not None},
    "content_type": message.get_content_type(),
    "multipart": [part.get_content_type() for part in message.walk() if part.is_multipart()],
    "defects": [type(defect).__name__ for defect in message.defects],
    "parts": parts,
}
if len(sys.argv) > 2:
    html = next((part["text"] for part in parts if part["type"] == "text/html"), "")
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        out.write(html)
print(json.dumps(result, ensure_ascii=False))

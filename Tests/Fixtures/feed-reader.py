"""Reads feeds as a feed reader would, for the end-to-end tests: Atom with Python's feedparser,
JSON Feed (which feedparser 6 does not read) with Python's json and JSON Feed 1.1's rules.

Usage: feed-reader.py REQUESTS_JSON
REQUESTS_JSON is a list of {"url": ..., "headers": {...}}. Prints one JSON list: per request
the status, the response headers (lower-cased names) and, for a 200, what Python's feedparser
made of the body: whether it found it malformed (bozo, and why), the feed's title and each
entry's id, title, link, updated (as written) and content.
"""
import json
import sys
import urllib.error
import urllib.request

import feedparser


def read(request):
    req = urllib.request.Request(request["url"], headers=request.get("headers", {}))
    try:
        with urllib.request.urlopen(req, timeout=20) as response:
            status, headers, body = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, headers, body = error.code, error.headers, error.read()
    result = {"status": status, "headers": {k.lower(): v for k, v in headers.items()}}
    if status == 200 and "json" in headers.get("content-type", ""):
        result.update(read_json_feed(body))
    elif status == 200:
        parsed = feedparser.parse(body, response_headers={"content-type": headers.get("content-type", "")})
        result["bozo"] = bool(parsed.bozo)
        result["bozo_reason"] = str(parsed.get("bozo_exception", ""))
        result["version"] = parsed.version
        result["title"] = parsed.feed.get("title")
        result["entries"] = [
            {
                "id": entry.get("id"),
                "title": entry.get("title"),
                "link": entry.get("link"),
                "updated": entry.get("updated") or entry.get("published"),
                "content": (entry.get("content") or [{}])[0].get("value") or entry.get("summary"),
            }
            for entry in parsed.entries
        ]
    return result


def read_json_feed(body):
    """A JSON Feed 1.1 as its specification asks: version, title, items each with an id and
    content; bozo when any of that is missing, as feedparser says of a malformed feed."""
    try:
        feed = json.loads(body)
        problems = []
        if feed.get("version") != "https://jsonfeed.org/version/1.1":
            problems.append("version")
        if not isinstance(feed.get("title"), str):
            problems.append("title")
        items = feed.get("items")
        if not isinstance(items, list):
            problems.append("items")
            items = []
        for item in items:
            if not isinstance(item.get("id"), str) or not (isinstance(item.get("content_html"), str) or isinstance(item.get("content_text"), str)):
                problems.append("an item without id or content")
    except ValueError as error:
        return {"bozo": True, "bozo_reason": str(error), "version": "", "entries": []}
    return {
        "bozo": bool(problems),
        "bozo_reason": ", ".join(problems),
        "version": "json11",
        "title": feed.get("title"),
        "entries": [
            {"id": item.get("id"), "title": item.get("title"), "link": item.get("url"), "updated": item.get("date_published"), "content": item.get("content_html")}
            for item in items
        ],
    }


print(json.dumps([read(request) for request in json.loads(sys.argv[1])]))

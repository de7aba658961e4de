#!/usr/bin/env python3
"""Opens a mail's HTML part in headless Chromium (Debian's, driven by Playwright from PyPI) as
a mail client would show it, and checks what a reader would see.

Usage: mail-render.py HTML_FILE CHROMIUM SCREENSHOT_DIR

Loads the file with scripts enabled (stricter than any mail client) at a phone's width and at
a desktop's, in the light and the dark scheme. Prints one JSON object: each check's name with
`true`, or with what was seen instead. Writes mail-light.png and mail-dark.png (the phone's
width) to SCREENSHOT_DIR.
"""
import json
import os
import sys

from playwright.sync_api import sync_playwright

html_file, chromium, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
with open(html_file, encoding="utf-8") as file:
    html = file.read()
checks = {}


def check(name, ok, seen=None):
    checks[name] = True if ok else (seen if seen is not None else False)


with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
    requests, dialogs, errors = [], [], []
    backgrounds = {}
    for scheme in ["light", "dark"]:
        context = browser.new_context(viewport={"width": 390, "height": 800}, color_scheme=scheme, device_scale_factor=1)
        context.on("request", lambda request: requests.append(request.url) if not request.url.startswith("about:") else None)
        page = context.new_page()
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.set_content(html, wait_until="load")
        page.wait_for_timeout(300)
        backgrounds[scheme] = page.evaluate("getComputedStyle(document.body).backgroundColor")
        width = page.evaluate("document.documentElement.scrollWidth")
        check(scheme + ": fits a phone's width without scrolling sideways", width <= 390, width)
        check(scheme + ": no script of a summary ran", page.evaluate("typeof window.pwned === 'undefined' && typeof window.pwned2 === 'undefined'"))
        check(scheme + ": every link is http, https or mailto", page.evaluate(
            "[...document.querySelectorAll('a[href]')].every(a => /^(https?:|mailto:|#)/.test(a.getAttribute('href')))"))
        check(scheme + ": no element has an event handler", page.evaluate(
            "[...document.querySelectorAll('*')].every(e => [...e.attributes].every(a => !a.name.startsWith('on')))"))
        check(scheme + ": no image, frame, form or embedded object", page.evaluate(
            "document.querySelectorAll('img, iframe, form, object, embed, input, video, audio, svg').length === 0"))
        check(scheme + ": one style block, the mail's own", page.evaluate("document.querySelectorAll('style').length === 1"))
        titles = page.evaluate("[...document.querySelectorAll('h3')].map(h => h.innerText)")
        check(scheme + ": every item's title shows", len(titles) >= 3, titles)
        page.screenshot(path=os.path.join(out_dir, "mail-%s.png" % scheme), full_page=True)
        context.close()
    check("the dark scheme changes the page", backgrounds["light"] != backgrounds["dark"], backgrounds)
    check("the light page is light", backgrounds["light"] in ("rgb(246, 248, 250)",), backgrounds["light"])
    check("nothing was fetched", not requests, requests)
    check("no dialog opened", not dialogs, dialogs)
    check("no script error", not errors, errors)
    browser.close()

print(json.dumps(checks, ensure_ascii=False))

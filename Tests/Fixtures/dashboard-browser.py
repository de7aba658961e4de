"""Opens fetchrun's dashboard in headless Chromium (Debian's, driven by Playwright from PyPI)
and checks what a person would do with it: the table, sorting, filters, "check now", the diff
viewer, a hostile feed's payloads, the console and every request the pages make.

Usage: dashboard-browser.py BASE_URL CHROMIUM CHANGED_TEXT

BASE_URL is the watch's --listen address (http://127.0.0.1:PORT). The watch has the sources
`hostile` (a feed whose title, link and summary carry script), `shop` (a page, `p.price`),
`news` (a feed, tag `press`) and `broken` (HTTP 500). Before "check now", the test changed
the shop's price to CHANGED_TEXT. Prints one JSON object: each check's name with `true`, or
with what was seen instead.
"""
import json
import sys
import time

from playwright.sync_api import expect, sync_playwright

base, chromium, changed_text = sys.argv[1], sys.argv[2], sys.argv[3]
checks = {}


def check(name, ok, seen=None):
    checks[name] = True if ok else (seen if seen is not None else False)


def row_names(page):
    return page.locator("table.sources tbody th[scope=row] > a").all_inner_texts()


with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
    context = browser.new_context()
    console_errors, foreign_requests = [], []
    context.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)
    context.on("weberror", lambda error: console_errors.append(str(error.error)))
    context.on("request", lambda request: foreign_requests.append(request.url) if not request.url.startswith(base + "/") else None)
    page = context.new_page()
    page.on("dialog", lambda dialog: (console_errors.append("a dialog opened: " + dialog.message), dialog.dismiss()))

    # The table lists every source.
    page.goto(base + "/")
    names = row_names(page)
    check("table lists the sources", sorted(names) == ["broken", "hostile", "news", "shop"], names)
    check("totals", page.locator(".totals").inner_text().split()[0] == "4", page.locator(".totals").inner_text())

    # Sorting: the name column's link turns the order round, in place (JavaScript) ...
    page.click("table.sources thead th:first-child a")
    # (Waits through locators: the pages' CSP forbids the eval a waiting function needs.)
    expect(page.locator("table.sources thead th").first).to_have_attribute("aria-sort", "descending")
    names = row_names(page)
    check("sorted by name, descending", names == ["shop", "news", "hostile", "broken"], names)
    check("the sort is in the address", "order=desc" in page.url, page.url)
    page.click("table.sources thead th:nth-child(7) a")  # failures, most first
    expect(page.locator("table.sources thead th:nth-child(7)")).to_have_attribute("aria-sort", "descending")
    check("sorted by failures", row_names(page)[0] == "broken", row_names(page))

    # Filters: text, failing only, tag.
    page.goto(base + "/")
    page.fill("#filter-text", "sho")
    expect(page.locator("table.sources tbody th[scope=row]")).to_have_count(1)
    check("text filter", row_names(page) == ["shop"], row_names(page))
    page.goto(base + "/")
    page.check("input[name=failing]")
    expect(page.locator("table.sources tbody th[scope=row]")).to_have_count(1)
    check("failing filter", row_names(page) == ["broken"], row_names(page))
    page.goto(base + "/")
    page.select_option("#filter-tag", "press")
    expect(page.locator("table.sources tbody th[scope=row]")).to_have_count(1)
    check("tag filter", row_names(page) == ["news"], row_names(page))

    # The diff viewer shows the change recorded before the watch began.
    page.goto(base + "/sources/shop")
    first_diff = page.locator("article.change").first
    check("a change is listed", first_diff.count() == 1)
    check("removals marked", first_diff.locator("tr.del").count() >= 1)
    check("additions marked", first_diff.locator("tr.add").count() >= 1)
    page.click("text=side by side")
    check("side by side", page.locator("article.change").first.locator("table.diff.split td.add").count() >= 1)

    # Check now: the source is fetched, and its new change shows.
    page.goto(base + "/sources/shop")
    before = page.locator("article.change").count()
    page.click("button:has-text('Check now')")
    check("check now answers", "done=due" in page.url and page.locator(".notice").count() == 1, page.url)
    deadline = time.time() + 20
    while time.time() < deadline and page.locator("article.change").count() == before:
        time.sleep(0.3)
        page.goto(base + "/sources/shop")
    newest = page.locator("article.change").first
    check("check now fetched the change", page.locator("article.change").count() == before + 1, page.locator("article.change").count())
    check("the new change's diff", changed_text in newest.locator("tr.add").all_inner_texts()[0] if newest.locator("tr.add").count() else False,
          newest.inner_text() if newest.count() else "")

    # A hostile feed: its payloads are text, not markup; its javascript: link is no link.
    for path in ["/", "/sources/hostile", "/sources/hostile?diff=split", "/sources/shop", "/sources/shop?diff=split", "/outputs"]:
        page.goto(base + path)
        pwned = page.evaluate("() => [window.pwned, window.pwned2, window.pwned3]")
        check("nothing set on window at " + path, pwned == [None, None, None], pwned)
        check("no injected image at " + path, page.locator("main img").count() == 0)
        check("no javascript: link at " + path, page.locator("a[href^='javascript' i]").count() == 0)
    page.goto(base + "/sources/hostile")
    check("the payload shows as text", "<script>" in page.locator("main").inner_text(), page.locator("main").inner_text()[:500])
    page.goto(base + "/sources/shop")
    check("a diff's markup shows as text", "<script>window.pwned2=1</script>" in page.locator("main").inner_text(), page.locator("main").inner_text()[:800])

    # The same pages without JavaScript: links and forms are plain HTTP.
    plain = browser.new_context(java_script_enabled=False)
    plain_page = plain.new_page()
    plain_page.goto(base + "/?sort=name&order=desc")
    check("sorting without JavaScript", row_names(plain_page) == ["shop", "news", "hostile", "broken"], row_names(plain_page))
    plain_page.fill("#filter-text", "news")
    plain_page.click("form.filters button[type=submit]")
    check("filtering without JavaScript", row_names(plain_page) == ["news"], row_names(plain_page))
    plain.close()

    # The refresh every 10 s swaps the table in place: the page's clock is moved, not waited for.
    page.clock.install()
    page.goto(base + "/")
    page.evaluate("() => { window.marker = 1; }")
    with page.expect_response(base + "/") as refreshed:
        page.clock.run_for(10500)
    check("the page refreshes every 10 s", refreshed.value.status == 200)
    page.wait_for_load_state("networkidle")
    check("the page refreshes in place", page.evaluate("() => window.marker") == 1 and len(row_names(page)) == 4)

    check("no console errors", console_errors == [], console_errors)
    check("no request leaves the origin", foreign_requests == [], foreign_requests)
    browser.close()

print(json.dumps(checks, ensure_ascii=False))

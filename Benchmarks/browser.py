#!/usr/bin/env python3
"""render: browser against its floor: the same pages fetched by Python Playwright driving the
same Chromium, the same number of pages at a time.

    .build/test-venv/bin/python3 Benchmarks/browser.py --bin DIR [--pages 100] [--hosts 10] [--tabs 4] [--pairs 5]

DIR holds a release-built fetchrun and fetchrun-fixture-server. The fixture server serves
`--pages` pages whose list a script builds (/js/list, 20 stories each) on `--hosts` ports
(hosts, to a browser). Each pair runs, in alternating order:

- fetchrun: a config of `--pages` page sources with `render: browser`, `browser: { tabs: N }`,
  `css: "#list"`; `run` on a fresh state folder (cold: the browser starts with the run), then
  `run` again on that state (repeated: every page rendered again, nothing new);
- Playwright: Chromium launched from /usr/bin/chromium with the arguments fetchrun gives it, then
  every page in a context of its own, N at a time: `goto(wait_until="networkidle")`, the
  document's HTML, the context closed — timed from the launch to the last page (cold) and again
  with the browser already running (repeated, which is the better case for Playwright).

Wall time per run, and the peak memory of the command and every process under it (PSS summed
from /proc/PID/smaps_rollup every 50 ms: Chromium's processes share much of their memory, which
RSS would count again for each). Prints each pair and the medians, and fetchrun's wall time over
Playwright's.
"""
import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

CHROMIUM = "/usr/bin/chromium"


def tree(root):
    """The pids of `root` and everything under it."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def pss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                for line in rollup:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


class PeakMemory:
    """Samples the PSS of `pid`'s process tree until stopped; `peak` in MiB."""

    def __init__(self, pid):
        self.pid, self.peak, self.running = pid, 0, True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while self.running:
            self.peak = max(self.peak, pss_kib(tree(self.pid)))
            time.sleep(0.05)

    def stop(self):
        self.running = False
        self.thread.join()
        return self.peak / 1024


def fetchrun_run(binary, folder):
    started = time.monotonic()
    process = subprocess.Popen([binary, "run", "-c", os.path.join(folder, "sources.yaml")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    memory = PeakMemory(process.pid)
    _, errors = process.communicate()
    wall = time.monotonic() - started
    peak = memory.stop()
    if process.returncode != 0:
        sys.exit(f"fetchrun failed ({process.returncode}): {errors.decode()[-2000:]}")
    return wall, peak


def playwright_runs(urls, tabs, profile):
    """Cold (launch + every page) and repeated (every page again), and the peak memory of this
    process's tree over both."""
    from playwright.async_api import async_playwright

    memory = PeakMemory(os.getpid())

    async def main():
        async with async_playwright() as playwright:
            arguments = ["--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-extensions",
                         "--disable-sync", "--disable-component-update", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
                         "--password-store=basic", "--use-mock-keychain", "--disable-gpu", "--disable-features=Translate,MediaRouter,OptimizationHints"]
            if os.geteuid() == 0:
                arguments.append("--no-sandbox")
            started = time.monotonic()
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=arguments, chromium_sandbox=False)
            slots = asyncio.Semaphore(tabs)

            async def fetch(url):
                async with slots:
                    context = await browser.new_context(viewport={"width": 1280, "height": 800})
                    page = await context.new_page()
                    await page.goto(url, wait_until="networkidle")
                    html = await page.content()
                    await context.close()
                    if "Story 20" not in html:
                        sys.exit(f"Playwright read {url} without its list")

            await asyncio.gather(*(fetch(url) for url in urls))
            cold = time.monotonic() - started
            started = time.monotonic()
            await asyncio.gather(*(fetch(url) for url in urls))
            repeated = time.monotonic() - started
            await browser.close()
            return cold, repeated

    cold, repeated = asyncio.run(main())
    return cold, repeated, memory.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--tabs", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=5)
    arguments = parser.parse_args()
    fetchrun = os.path.join(arguments.bin, "fetchrun")
    server = subprocess.Popen([os.path.join(arguments.bin, "fetchrun-fixture-server"), "--hosts", str(arguments.hosts)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    bases = [server.stdout.readline().strip() for _ in range(arguments.hosts)]
    urls = [f"{bases[page % arguments.hosts]}/js/list?items=20&v={page}" for page in range(arguments.pages)]
    rows = []
    try:
        for pair in range(arguments.pairs):
            def run_fetchrun():
                folder = tempfile.mkdtemp(prefix="fetchrun-browser-bench-")
                with open(os.path.join(folder, "sources.yaml"), "w") as config:
                    config.write(f"state_dir: state\nbrowser: {{ tabs: {arguments.tabs} }}\ndefaults: {{ deadline: 120s }}\nsources:\n")
                    for index, url in enumerate(urls):
                        config.write(f'  - {{ name: page-{index}, type: page, url: "{url}", render: browser, css: "#list" }}\n')
                cold = fetchrun_run(fetchrun, folder)
                repeated = fetchrun_run(fetchrun, folder)
                subprocess.run(["rm", "-rf", folder])
                return cold, repeated

            def run_playwright():
                with tempfile.TemporaryDirectory() as profile:
                    return playwright_runs(urls, arguments.tabs, profile)

            if pair % 2 == 0:
                ours = run_fetchrun()
                theirs = run_playwright()
            else:
                theirs = run_playwright()
                ours = run_fetchrun()
            row = {
                "fetchrun_cold": ours[0][0], "fetchrun_repeated": ours[1][0], "fetchrun_peak": max(ours[0][1], ours[1][1]),
                "playwright_cold": theirs[0], "playwright_repeated": theirs[1], "playwright_peak": theirs[2],
            }
            rows.append(row)
            print(f"pair {pair + 1}: fetchrun cold {row['fetchrun_cold']:.2f}s repeated {row['fetchrun_repeated']:.2f}s peak {row['fetchrun_peak']:.0f} MiB | "
                  f"Playwright cold {row['playwright_cold']:.2f}s repeated {row['playwright_repeated']:.2f}s peak {row['playwright_peak']:.0f} MiB", flush=True)
    finally:
        server.stdin.close()
        server.wait()

    def median(key):
        return statistics.median(row[key] for row in rows)

    print(f"medians over {len(rows)} pairs, {arguments.pages} pages on {arguments.hosts} hosts, {arguments.tabs} at a time:")
    for phase in ["cold", "repeated"]:
        ratio = statistics.median(row[f"fetchrun_{phase}"] / row[f"playwright_{phase}"] for row in rows)
        print(f"  {phase}: fetchrun {median(f'fetchrun_{phase}'):.2f}s, Playwright {median(f'playwright_{phase}'):.2f}s, fetchrun/Playwright {ratio:.2f}")
    print(f"  peak memory (PSS, the command and its browser): fetchrun {median('fetchrun_peak'):.0f} MiB, Playwright {median('playwright_peak'):.0f} MiB")


if __name__ == "__main__":
    main()

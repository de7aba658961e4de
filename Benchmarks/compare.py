#!/usr/bin/env python3
"""fetchrun against the tools people use today, on the same work, in the same run.

    make bench            # every benchmark; N = 100, 1,000, 10,000
    make bench-quick      # a smoke run in a minute or two

Run by `make bench` inside .venv-bench (urlwatch, feedparser, fastfeedparser from PyPI);
newsboat comes from Debian's packages. Writes Benchmarks/RESULTS.md and
Benchmarks/results-fanout.svg.
"""
import argparse
import calendar
import datetime
import json
import os
import platform
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from one_host import one_host
from request_headers import request_headers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "Benchmarks")
TIME_LIMIT = 300  # a peer that would take longer is stopped and marked so
YARDSTICK = "libcurl alone, per_host: 20 (C yardstick)"


def sh(*args, **kwargs):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs).stdout


def expected_items(n):
    # The fixture's feed i has 20 + i % 31 items.
    return sum(20 + i % 31 for i in range(1, n + 1))


class Fixture:
    """The fixture server on `hosts` ports of 127.0.0.1, serving generated feeds."""

    def __init__(self, binary, hosts):
        self.process = subprocess.Popen([binary, "--hosts", str(hosts)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.bases = [self.process.stdout.readline().strip() for _ in range(hosts)]

    def urls(self, n, latency, route="feed"):
        return [f"{self.bases[i % len(self.bases)]}/{route}/{i}.xml?latency={latency}" for i in range(1, n + 1)]

    def hits(self):
        return sum(json.load(urllib.request.urlopen(base + "/stats"))["requests"] for base in self.bases)

    def stop(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def timed(command, env=None, cwd=None):
    """Runs a command under GNU time; returns (status, wall, cpu, peak RSS in MB, stdout) or None past the limit."""
    with tempfile.NamedTemporaryFile("r") as report:
        # A session of its own, so that a tool stopped at the limit is stopped with everything it
        # started: killing only /usr/bin/time left newsboat fetching under the next tool's run.
        process = subprocess.Popen(["/usr/bin/time", "-f", "%e %U %S %M", "-o", report.name] + command,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, start_new_session=True)
        try:
            stdout, _ = process.communicate(timeout=TIME_LIMIT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return None
        wall, user, system, rss = report.read().strip().splitlines()[-1].split()
        return process.returncode, float(wall), float(user) + float(system), int(rss) / 1024, stdout


class Tool:
    """One contender: prepares a scratch folder for N URLs, runs once, says how much it fetched."""

    def __init__(self, name, prepare, command, fetched):
        self.name, self.prepare, self.command, self.fetched = name, prepare, command, fetched


def tools(bin_dir, venv_bin):
    def fetchrun_prepare(work, urls, http=""):
        with open(os.path.join(work, "sources.yaml"), "w") as config:
            if http:
                config.write(f"http: {{ {http} }}\n")
            config.write("sources:\n")
            for index, url in enumerate(urls, 1):
                config.write(f'  - name: feed-{index}\n    type: rss\n    url: "{url}"\n')

    def fetchrun_fetched(work, output, fixture_hits):
        match = re.search(r"^\w+: (\d+) new items? from", output, re.M)
        return int(match.group(1)) if match else 0

    def newsboat_prepare(threads):
        def prepare(work, urls):
            with open(os.path.join(work, "urls"), "w") as file:
                file.write("\n".join(urls) + "\n")
            with open(os.path.join(work, "config"), "w") as file:
                if threads:
                    file.write(f"reload-threads {threads}\n")
            os.makedirs(os.path.join(work, "home"), exist_ok=True)
        return prepare

    def newsboat_fetched(work, output, fixture_hits):
        database = os.path.join(work, "cache.db")
        if not os.path.exists(database):
            return 0
        with sqlite3.connect(database) as connection:
            return connection.execute("select count(*) from rss_item").fetchone()[0]

    def urlwatch_prepare(work, urls):
        with open(os.path.join(work, "urls.yaml"), "w") as file:
            for url in urls:
                file.write(f'---\nurl: "{url}"\n')
        os.makedirs(os.path.join(work, "home"), exist_ok=True)
        # Its first start writes a default config; do that outside the measured run.
        subprocess.run([os.path.join(venv_bin, "urlwatch"), "--urls", os.devnull, "--config", os.path.join(work, "urlwatch.yaml"),
                        "--cache", os.path.join(work, "warmup.db"), "--hooks", os.path.join(work, "hooks.py")],
                       capture_output=True, env=dict(os.environ, HOME=os.path.join(work, "home")))

    def urlwatch_fetched(work, output, fixture_hits):
        # urlwatch stores pages, not items: the server's count of requests says what it fetched.
        return fixture_hits

    def yardstick_prepare(work, urls):
        with open(os.path.join(work, "urls"), "w") as file:
            file.write("\n".join(urls) + "\n")
        with open(os.path.join(work, "request-headers"), "w") as file:
            file.write("\n".join(fetchrun_headers) + "\n")

    fetchrun = os.path.join(bin_dir, "fetchrun")
    urlwatch = os.path.join(venv_bin, "urlwatch")
    yardstick = os.path.join(bin_dir, "fetchrun-curl-yardstick")
    # fetchrun's own request headers (User-Agent, Accept), for the yardstick to send too.
    fetchrun_headers = request_headers(fetchrun)
    if fetchrun_headers is None:
        sys.exit(f"compare.py: {fetchrun} sent no request to learn its headers from")
    return [
        Tool("fetchrun", fetchrun_prepare,
             lambda work: [fetchrun, "--config", os.path.join(work, "sources.yaml"), "--state-dir", os.path.join(work, "state")],
             fetchrun_fetched),
        # Repeat runs only: each host's 20 feeds on connections of their own, so that the
        # network's queue (20 feeds over 6 connections = 4 round trips) is not what is measured.
        Tool("fetchrun, per_host: 20", lambda work, urls: fetchrun_prepare(work, urls, "per_host: 20"),
             lambda work: [fetchrun, "--config", os.path.join(work, "sources.yaml"), "--state-dir", os.path.join(work, "state")],
             fetchrun_fetched),
        # Repeat runs only: the same requests from libcurl alone (C, no config, state, parsing
        # or report), per_host 20 as in the row above: what no tool on this machine can beat.
        Tool(YARDSTICK, yardstick_prepare,
             lambda work: [yardstick, "--urls", os.path.join(work, "urls"), "--state", os.path.join(work, "validators"), "--per-host", "20",
                           "--request-headers", os.path.join(work, "request-headers")],
             lambda work, output, fixture_hits: 0),
        Tool("newsboat (default threads)", newsboat_prepare(None),
             lambda work: ["newsboat", "-x", "reload", "-u", os.path.join(work, "urls"), "-c", os.path.join(work, "cache.db"), "-C", os.path.join(work, "config")],
             newsboat_fetched),
        Tool("newsboat (32 threads)", newsboat_prepare(32),
             lambda work: ["newsboat", "-x", "reload", "-u", os.path.join(work, "urls"), "-c", os.path.join(work, "cache.db"), "-C", os.path.join(work, "config")],
             newsboat_fetched),
        Tool("urlwatch", urlwatch_prepare,
             lambda work: [urlwatch, "--urls", os.path.join(work, "urls.yaml"), "--config", os.path.join(work, "urlwatch.yaml"),
                           "--cache", os.path.join(work, "cache.db"), "--hooks", os.path.join(work, "hooks.py")],
             urlwatch_fetched),
    ]


def fanout(fixture, contenders, sizes, runs, latency):
    """Alternating runs of every tool at every N; medians and a check of the work done."""
    results = {}
    for n in sizes:
        urls = fixture.urls(n, latency)
        stopped = set()
        samples = {tool.name: [] for tool in contenders}
        for run in range(runs):
            for tool in contenders:
                if tool.name in stopped:
                    continue
                work = tempfile.mkdtemp(prefix="fetchrun-bench-")
                try:
                    tool.prepare(work, urls)
                    env = dict(os.environ, HOME=os.path.join(work, "home")) if tool.name != "fetchrun" else None
                    before = fixture.hits()
                    outcome = timed(tool.command(work), env=env, cwd=work)
                    hits = fixture.hits() - before
                    if outcome is None:
                        stopped.add(tool.name)
                        print(f"  N={n} {tool.name}: stopped after {TIME_LIMIT}s", flush=True)
                        continue
                    status, wall, cpu, rss, output = outcome
                    fetched = tool.fetched(work, output, hits)
                    wanted = n if tool.name == "urlwatch" else expected_items(n)
                    samples[tool.name].append({"wall": wall, "cpu": cpu, "rss": rss, "complete": fetched >= wanted, "fetched": fetched, "wanted": wanted, "status": status})
                    print(f"  N={n} run {run + 1} {tool.name}: {wall:.2f}s wall, {cpu:.2f}s CPU, {rss:.0f} MB, {fetched}/{wanted} {'items' if tool.name != 'urlwatch' else 'requests'}", flush=True)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
        for tool in contenders:
            runs_done = samples[tool.name]
            if tool.name in stopped:
                results[(n, tool.name)] = {"stopped": True}
            elif runs_done:
                results[(n, tool.name)] = {
                    "wall": statistics.median(s["wall"] for s in runs_done),
                    "cpu": statistics.median(s["cpu"] for s in runs_done),
                    "rss": statistics.median(s["rss"] for s in runs_done),
                    "complete": all(s["complete"] for s in runs_done),
                    "runs": len(runs_done),
                }
    return results


def repeats(fixture, contenders, n, runs, latency):
    """A cold run, then the run after it (nothing changed), per tool: the steady state of a
    tool run from cron. Feeds served with ETag and Last-Modified (a repeat gets 304s) and
    without (a repeat gets the same 200 body). Medians of `runs`."""
    results = {}
    for route, label in [("conditional", "304 (ETag)"), ("feed", "200, same body")]:
        urls = fixture.urls(n, latency, route)
        samples = {tool.name: {"cold": [], "again": []} for tool in contenders}
        for run in range(runs):
            for tool in contenders:
                work = tempfile.mkdtemp(prefix="fetchrun-bench-")
                try:
                    tool.prepare(work, urls)
                    env = dict(os.environ, HOME=os.path.join(work, "home")) if tool.name != "fetchrun" else None
                    cold = timed(tool.command(work), env=env, cwd=work)
                    # A pause between the two: on ext4 a run right after another that wrote
                    # and deleted many files is slowed by the kernel's inode bookkeeping.
                    time.sleep(2)
                    again = timed(tool.command(work), env=env, cwd=work)
                    if cold is None or again is None:
                        print(f"  repeat {label} {tool.name}: stopped after {TIME_LIMIT}s", flush=True)
                        continue
                    samples[tool.name]["cold"].append(cold[1])
                    samples[tool.name]["again"].append(again[1])
                    print(f"  repeat {label} run {run + 1} {tool.name}: cold {cold[1]:.2f}s, again {again[1]:.2f}s", flush=True)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
        for tool in contenders:
            done = samples[tool.name]
            if done["again"]:
                results[(label, tool.name)] = {"cold": statistics.median(done["cold"]), "again": statistics.median(done["again"])}
    return results


def parsing(bin_dir, venv_python, feeds, rounds):
    """Parser speed of fetchrun, feedparser and fastfeedparser on one corpus, and agreement with feedparser."""
    corpus = tempfile.mkdtemp(prefix="fetchrun-corpus-")
    extras = [os.path.join(ROOT, "feeds", "reuters-technology.xml")] + sorted(
        os.path.join(BENCH, "corpus", name) for name in os.listdir(os.path.join(BENCH, "corpus")))
    extra_args = [arg for path in extras for arg in ("--extra", path)]
    benchmark = os.path.join(bin_dir, "fetchrun-parser-benchmark")
    sh(benchmark, "--feeds", str(feeds), *extra_args, "--dump", corpus)
    ours = sh(benchmark, "--feeds", str(feeds), "--rounds", str(rounds), *extra_args)
    raw_mbps = float(re.search(r"libxml2 reader pass:\s+([\d.]+)", ours).group(1))
    our_mbps = float(re.search(r"fetchrun FeedParser:\s+([\d.]+)", ours).group(1))
    our_items = int(re.search(r"\((\d+) items\)", ours).group(1))

    peers = json.loads(subprocess.run([venv_python, "-c", PEER_PARSERS, corpus, str(rounds)], check=True, capture_output=True, text=True).stdout)
    agreement = agree(bin_dir, venv_python, corpus)
    shutil.rmtree(corpus, ignore_errors=True)
    total_mb = peers["bytes"] / 1048576
    return {
        "documents": peers["documents"], "megabytes": total_mb,
        "fetchrun": {"mbps": our_mbps, "items_per_s": our_items * our_mbps / total_mb},
        "libxml2 reader pass": {"mbps": raw_mbps},
        "feedparser": peers["feedparser"], "fastfeedparser": peers["fastfeedparser"],
        "agreement": agreement,
    }


PEER_PARSERS = r"""
import json, os, sys, time
import feedparser, fastfeedparser
folder, rounds = sys.argv[1], int(sys.argv[2])
documents = [open(os.path.join(folder, name), "rb").read() for name in sorted(os.listdir(folder))]
total = sum(len(d) for d in documents)
result = {"documents": len(documents), "bytes": total}
for name, parse, count in [("feedparser", feedparser.parse, lambda r: len(r.entries)),
                           ("fastfeedparser", fastfeedparser.parse, lambda r: len(r["entries"]))]:
    speeds, items = [], 0
    for _ in range(max(1, rounds // 3)):
        start, items = time.perf_counter(), 0
        for document in documents:
            try:
                items += count(parse(document))
            except Exception:
                pass
        elapsed = time.perf_counter() - start
        speeds.append(total / 1048576 / elapsed)
    speeds.sort()
    mbps = speeds[len(speeds) // 2]
    result[name] = {"mbps": mbps, "items_per_s": items * mbps / (total / 1048576)}
print(json.dumps(result))
"""

FEEDPARSER_ITEMS = r"""
import calendar, json, os, sys
import feedparser
folder = sys.argv[1]
out = {}
for name in sorted(os.listdir(folder)):
    parsed = feedparser.parse(open(os.path.join(folder, name), "rb").read())
    items = []
    for entry in parsed.entries:
        date = entry.get("published_parsed") or entry.get("updated_parsed")
        items.append({"id": entry.get("id") or entry.get("link"), "title": entry.get("title"), "link": entry.get("link"),
                      "date": calendar.timegm(date) if date else None})
    out[name] = items
print(json.dumps(out))
"""


def agree(bin_dir, venv_python, corpus):
    """Share of items whose id, title, link and date agree between fetchrun and feedparser."""
    reference = json.loads(subprocess.run([venv_python, "-c", FEEDPARSER_ITEMS, corpus], check=True, capture_output=True, text=True).stdout)
    fetchrun = os.path.join(bin_dir, "fetchrun")
    agreeing = total = 0
    for name, theirs in reference.items():
        lines = subprocess.run([fetchrun, "probe", "--format", "json", os.path.join(corpus, name)], capture_output=True, text=True).stdout.splitlines()
        ours = [json.loads(line) for line in lines[1:]]
        for index, their in enumerate(theirs):
            total += 1
            if index >= len(ours):
                continue
            our = ours[index]
            date = our.get("published") or our.get("updated")
            our_date = calendar.timegm(datetime.datetime.strptime(date, "%Y-%m-%dT%H:%M:%SZ").timetuple()) if date else None
            same = (our.get("id") == their["id"] and " ".join((our.get("title") or "").split()) == " ".join((their["title"] or "").split())
                    and our.get("link") == their["link"] and our_date == their["date"])
            agreeing += same
    return {"items": total, "agreeing": agreeing, "share": agreeing / total if total else 0}


def svg_plot(results, sizes, names, path):
    """Wall time against N, log-log, one line per tool."""
    width, height, left, bottom, top, right = 640, 400, 70, 50, 30, 200
    points = {name: [(n, results[(n, name)]["wall"]) for n in sizes if (n, name) in results and "wall" in results[(n, name)]] for name in names}
    values = [w for line in points.values() for _, w in line if w > 0]
    if not values:
        return
    import math
    low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    high = max(high, low + 1)
    def x(n):
        span = math.log10(max(sizes)) - math.log10(min(sizes)) or 1
        return left + (math.log10(n) - math.log10(min(sizes))) / span * (width - left - right)
    def y(w):
        return height - bottom - (math.log10(w) - low) / (high - low) * (height - bottom - top)
    colors = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{left}" y="18" font-size="14">Wall time to fetch, parse and store N feeds (100 ms latency), log-log</text>']
    for exponent in range(low, high + 1):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(10 ** exponent):.1f}" y2="{y(10 ** exponent):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 8}" y="{y(10 ** exponent) + 4:.1f}" text-anchor="end">{10 ** exponent:g} s</text>')
    for n in sizes:
        parts.append(f'<text x="{x(n):.1f}" y="{height - bottom + 18}" text-anchor="middle">N = {n:,}</text>')
    for index, (name, line) in enumerate(points.items()):
        color = colors[index % len(colors)]
        if len(line) > 1:
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(f"{x(n):.1f},{y(w):.1f}" for n, w in line)}"/>')
        for n, w in line:
            parts.append(f'<circle cx="{x(n):.1f}" cy="{y(w):.1f}" r="3" fill="{color}"/>')
        parts.append(f'<rect x="{width - right + 15}" y="{top + 20 * index}" width="12" height="3" fill="{color}"/>')
        parts.append(f'<text x="{width - right + 32}" y="{top + 20 * index + 5}">{name}</text>')
    parts.append("</svg>")
    with open(path, "w") as file:
        file.write("\n".join(parts) + "\n")


def run_script(command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT).stdout.strip().splitlines()
    except subprocess.TimeoutExpired:
        return ["(did not finish within 10 minutes)"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="N = 100 only, one run, a small corpus, a short idle check")
    parser.add_argument("--bin", required=True, help="the folder of the release binaries")
    args = parser.parse_args()
    sizes, runs, feeds, rounds, idle_seconds = ([100], 1, 20, 3, 10) if args.quick else ([100, 1000, 10000], 3, 200, 9, 60)
    venv_bin = os.path.dirname(sys.executable)
    started = time.time()

    print("fan-out:", flush=True)
    fixture = Fixture(os.path.join(args.bin, "fetchrun-fixture-server"), 50)
    contenders = tools(args.bin, venv_bin)
    try:
        fan = fanout(fixture, [tool for tool in contenders if tool.name not in ("fetchrun, per_host: 20", YARDSTICK)], sizes, runs, "100ms")
        print("repeat runs:", flush=True)
        repeat = repeats(fixture, contenders, 100 if args.quick else 1000, runs, "100ms")
    finally:
        fixture.stop()
    print("one host:", flush=True)
    one = one_host(args.bin, 100 if args.quick else 1000, runs)
    print("parsing:", flush=True)
    parse = parsing(args.bin, sys.executable, feeds, rounds)
    print("conformance:", flush=True)
    conformance = run_script([sys.executable, os.path.join(BENCH, "conformance.py"), "--bin", args.bin, "--python", sys.executable])
    print("deadlines and idle:", flush=True)
    hang = run_script([os.path.join(BENCH, "fanout.sh"), "--feeds", "100", "--hang", "--runs", "3" if not args.quick else "1"])
    idle = run_script([os.path.join(BENCH, "idle.sh"), "--seconds", str(idle_seconds)])
    scale_n = 10000 if args.quick else 100000
    scale = run_script([os.path.join(BENCH, "idle.sh"), "--synthetic", "--feeds", str(scale_n), "--seconds", str(idle_seconds)])
    svg_plot(fan, sizes, [tool.name for tool in contenders if (sizes[0], tool.name) in fan], os.path.join(BENCH, "results-fanout.svg"))
    write_results(fan, repeat, one, parse, conformance, hang, idle, (scale_n, scale), sizes, runs, [tool.name for tool in contenders], args.quick, time.time() - started)


def write_results(fan, repeat, one, parse, conformance, hang, idle, scale, sizes, runs, names, quick, seconds):
    def version(command):
        try:
            return subprocess.run(command, capture_output=True, text=True).stdout.strip().splitlines()[0]
        except Exception:
            return "?"
    import importlib.metadata as metadata
    lines = [
        "# Benchmark results", "",
        f"Written by `make bench{'-quick' if quick else ''}` on {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC in {seconds / 60:.1f} minutes. "
        "Regenerate with `make bench` (every size) or `make bench-quick` (a smoke run).", "",
        "## Machine and versions", "",
        f"- {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2 ** 30:.0f} GiB, {platform.platform()}",
        f"- {version(['swift', '--version'])}; fetchrun {version([os.path.join(ROOT, '.build/release/fetchrun'), '--version'])}",
        f"- {version(['newsboat', '--version'])}; urlwatch {metadata.version('urlwatch')}; feedparser {metadata.version('feedparser')}; fastfeedparser {metadata.version('fastfeedparser')}; Python {platform.python_version()}",
        "", "## Fan-out: fetch, parse and store N feeds at 100 ms latency", "",
        f"The fixture server serves N generated feeds (20–60 KB, 20–50 items) on 50 ports of 127.0.0.1. "
        f"Every tool starts from empty state; runs alternate between tools ({runs} each, medians). "
        "“complete” checks the work: items in fetchrun's report and in newsboat's cache against the feeds' items, "
        "and requests the server saw for urlwatch (which stores pages, not items). "
        f"A tool that would take over {TIME_LIMIT // 60} minutes is stopped.", "",
        "| N | tool | wall | CPU | peak RSS | complete | wall ÷ fetchrun's |", "|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        base = fan.get((n, "fetchrun"), {}).get("wall")
        for name in names:
            result = fan.get((n, name))
            if result is None:
                continue
            if result.get("stopped"):
                lines.append(f"| {n:,} | {name} | stopped after {TIME_LIMIT} s | | | | > {TIME_LIMIT / base:.0f}× |" if base else f"| {n:,} | {name} | stopped | | | | |")
                continue
            ratio = f"{result['wall'] / base:.1f}×" if base else ""
            lines.append(f"| {n:,} | {name} | {result['wall']:.2f} s | {result['cpu']:.2f} s | {result['rss']:.0f} MB | {'yes' if result['complete'] else 'NO'} | {ratio} |")
    repeat_n = 100 if quick else 1000
    lines += ["", "![wall time against N](results-fanout.svg)", "",
              f"## Repeat runs: {repeat_n:,} feeds, nothing changed since the last run", "",
              "Each tool runs once from empty state, then again on the same state (2 s apart) — what a tool run "
              "from cron does most of the time. With validators the server answers 304; without, the same 200 body. "
              f"Medians of {runs}. The {YARDSTICK} row is `Benchmarks/CurlYardstick`: the same requests through one "
              "curl multi handle from C, validators kept in a flat file and nothing else — the least any tool can spend here.", "",
              "| feeds answer | tool | cold run | second run | second ÷ cold |", "|---|---|---|---|---|"]
    for label in ["304 (ETag)", "200, same body"]:
        for name in names:
            result = repeat.get((label, name))
            if result:
                lines.append(f"| {label} | {name} | {result['cold']:.2f} s | {result['again']:.2f} s | {100 * result['again'] / result['cold']:.0f} % |")
    one_table, one_targets = one
    lines += ["", f"## One host: {repeat_n:,} feeds behind a single host name, 100 ms latency", "",
              "Many real sources share a host (release feeds, video channels, a self-hosted bridge). "
              "An HTTPS host speaking HTTP/2 (`Tests/Fixtures/h2-fixture-server.py`, a CA made for the run; newsboat told "
              "not to check certificates) and a plain HTTP/1.1 host (the fixture server on one port). "
              f"Runs alternate between tools ({runs} each, medians); `Benchmarks/one_host.py`.", ""] + one_table
    scale_n, scale_lines = scale
    lines += ["", f"## Watch at scale: {scale_n:,} synthetic sources, 1 h intervals", "", "```"] + scale_lines[-4:] + ["```", "",
              "## Parsing, one core, the same bytes", "",
              f"{parse['documents']} documents, {parse['megabytes']:.1f} MiB: generated RSS 2.0 and Atom 1.0 feeds, the bundled "
              "Reuters-style feed, and hand-written RDF, Atom and podcast feeds (`Benchmarks/corpus/`).", "",
              "| parser | MB/s | items/s |", "|---|---|---|"]
    for name in ["fetchrun", "libxml2 reader pass", "fastfeedparser", "feedparser"]:
        entry = parse[name]
        items = f"{entry['items_per_s']:,.0f}" if "items_per_s" in entry else ""
        lines.append(f"| {name} | {entry['mbps']:.1f} | {items} |")
    agreement = parse["agreement"]
    lines += ["", f"Agreement with feedparser on id, title, link and date: {agreement['agreeing']:,} of {agreement['items']:,} items "
              f"({100 * agreement['share']:.1f} %).", "",
              "## Conformance: feedparser's own well-formed test documents", "",
              "The RSS, RDF and Atom cases of `tests/wellformed` in feedparser's source distribution, read by both; "
              "title, link and id of every entry feedparser finds, compared as plain text (`Benchmarks/conformance.py`).", "",
              "```"] + [line for line in conformance if not line.startswith("  ")] + ["```", "",
              "## Deadlines and idle", "", "```"] + hang[-2:] + idle[-2:] + ["```", "", "## Targets", ""]
    targets = []
    thousand = fan.get((1000, "fetchrun"), {}).get("wall")
    for name in ["newsboat (32 threads)", "urlwatch"]:
        peer = fan.get((1000, name), {})
        if thousand and (peer.get("wall") or peer.get("stopped")):
            ratio = TIME_LIMIT / thousand if peer.get("stopped") else peer["wall"] / thousand
            targets.append(f"- N = 1,000: fetchrun at most 1/10 of {name}'s wall time: {ratio:.1f}× — {'met' if ratio >= 10 else 'MISSED'}")
    ten = fan.get((10000, "fetchrun"), {})
    if ten:
        met = "wall" in ten and ten["rss"] < 300 and ten["complete"]
        targets.append(f"- N = 10,000: fetchrun finishes with peak RSS under 300 MB: {ten.get('rss', 0):.0f} MB — {'met' if met else 'MISSED'}")
    targets.append(f"- parsing at least fastfeedparser's MB/s: {parse['fetchrun']['mbps']:.1f} vs {parse['fastfeedparser']['mbps']:.1f} — {'met' if parse['fetchrun']['mbps'] >= parse['fastfeedparser']['mbps'] else 'MISSED'}")
    ratio = parse['fetchrun']['mbps'] / parse['libxml2 reader pass']['mbps']
    targets.append(f"- parsing at least 90 % of a raw libxml2 reader pass: {100 * ratio:.0f} % — {'met' if ratio >= 0.9 else 'MISSED'}")
    times = parse['fetchrun']['mbps'] / parse['feedparser']['mbps']
    targets.append(f"- parsing at least 40× feedparser: {times:.0f}× — {'met' if times >= 40 else 'MISSED'}")
    targets.append(f"- at least 98 % agreement with feedparser: {100 * agreement['share']:.1f} % — {'met' if agreement['share'] >= 0.98 else 'MISSED'}")
    ours = repeat.get(("304 (ETag)", "fetchrun"))
    if ours and not quick:
        share = ours["again"] / ours["cold"]
        targets.append(f"- 1,000 unchanged feeds (304): repeat run under 0.4 s and at most 25 % of the cold run: {ours['again']:.2f} s, {100 * share:.0f} % — {'met' if ours['again'] < 0.4 and share <= 0.25 else 'MISSED'}")
    wide = repeat.get(("304 (ETag)", "fetchrun, per_host: 20"))
    if wide and not quick:
        share = wide["again"] / wide["cold"]
        targets.append(f"- the same with http.per_host: 20 (no host queue): {wide['again']:.2f} s, {100 * share:.0f} % — {'met' if wide['again'] < 0.4 and share <= 0.25 else 'MISSED'}")
    floor = repeat.get(("304 (ETag)", YARDSTICK))
    if floor and wide and not quick:
        targets.append(f"  (libcurl alone sends the same 1,000 conditional requests in {floor['again']:.2f} s here: the floor on this machine; "
                       f"fetchrun's repeat run is {wide['again'] / floor['again']:.2f}× it)")
    same = repeat.get(("200, same body", "fetchrun"))
    if same and not quick:
        targets.append(f"- 1,000 unchanged feeds (200, same body): repeat run under 0.6 s: {same['again']:.2f} s — {'met' if same['again'] < 0.6 else 'MISSED'}")
    total = next((line for line in conformance if line.startswith("all ")), None)
    if total:
        share = float(total.split("%")[0].split()[-1])
        targets.append(f"- at least 98 % agreement with feedparser on its well-formed RSS/RDF/Atom cases: {share:.1f} % — {'met' if share >= 98 else 'MISSED'}")
    targets += one_targets
    lines += targets + [""]
    with open(os.path.join(BENCH, "RESULTS.md"), "w") as file:
        file.write("\n".join(lines))
    print("\n".join(targets))
    print(f"wrote {os.path.join(BENCH, 'RESULTS.md')}")


if __name__ == "__main__":
    main()

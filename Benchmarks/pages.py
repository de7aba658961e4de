#!/usr/bin/env python3
"""`page` sources against 1,000 feeds and against urlwatch on the same pages.

    make bench-pages

The fixture server serves N generated shop pages (about 50 KB each, `/page/<n>.html`) on 50
ports of 127.0.0.1 at 100 ms latency. fetchrun watches each page's `#product` block
(`type: page`, `css: "#product"`); urlwatch runs the same job (`css: "#product"`, then
`html2text`). fetchrun also fetches the same number of feeds in the same run, the figure
pages are measured against. Every tool starts from empty state (cold), then runs again on it
(repeat): once with pages that carry an ETag (the repeat gets 304s), once without (the same
200 body). Runs alternate between tools; medians of RUNS. The parse-and-select figures for a
1 MB page come from `fetchrun-parser-benchmark --page`, printed after the table.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import Fixture, timed, TIME_LIMIT  # noqa: E402


def fetchrun_config(work, urls, kind):
    with open(os.path.join(work, "sources.yaml"), "w") as config:
        config.write("sources:\n")
        for index, url in enumerate(urls, 1):
            if kind == "page":
                config.write(f'  - name: page-{index}\n    type: page\n    url: "{url}"\n    css: "#product"\n')
            else:
                config.write(f'  - name: feed-{index}\n    type: rss\n    url: "{url}"\n')


def urlwatch_config(work, urls, venv_bin):
    with open(os.path.join(work, "urls.yaml"), "w") as file:
        for index, url in enumerate(urls, 1):
            file.write(f'---\nname: page-{index}\nurl: "{url}"\nfilter:\n  - css: "#product"\n  - html2text\n')
    os.makedirs(os.path.join(work, "home"), exist_ok=True)
    # Its first start writes a default config; done outside the measured run.
    subprocess.run([os.path.join(venv_bin, "urlwatch"), "--urls", os.devnull, "--config", os.path.join(work, "urlwatch.yaml"),
                    "--cache", os.path.join(work, "warmup.db"), "--hooks", os.path.join(work, "hooks.py")],
                   capture_output=True, env=dict(os.environ, HOME=os.path.join(work, "home")))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--venv-bin", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".venv-bench", "bin"))
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    args.bin = os.path.abspath(args.bin)
    fetchrun = os.path.join(args.bin, "fetchrun")
    urlwatch = os.path.join(args.venv_bin, "urlwatch")
    fixture = Fixture(os.path.join(args.bin, "fetchrun-fixture-server"), 50)
    latency = "100ms"

    def urls(route, extension):
        return [f"{fixture.bases[i % len(fixture.bases)]}/{route}/{i}.{extension}?latency={latency}" for i in range(1, args.n + 1)]

    fetchrun_command = lambda work: [fetchrun, "--config", os.path.join(work, "sources.yaml"), "--state-dir", os.path.join(work, "state")]
    urlwatch_command = lambda work: [urlwatch, "--urls", os.path.join(work, "urls.yaml"), "--config", os.path.join(work, "urlwatch.yaml"),
                                     "--cache", os.path.join(work, "cache.db"), "--hooks", os.path.join(work, "hooks.py")]
    contenders = [
        (f"fetchrun, {args.n:,} pages", lambda work, u: fetchrun_config(work, u, "page"), fetchrun_command, None, "page"),
        (f"fetchrun, {args.n:,} feeds", lambda work, u: fetchrun_config(work, u, "rss"), fetchrun_command, None, "feed"),
        (f"urlwatch, {args.n:,} pages", lambda work, u: urlwatch_config(work, u, args.venv_bin), urlwatch_command, True, "page"),
    ]
    routes = {
        "200, same body": {"page": urls("page", "html"), "feed": urls("feed", "xml")},
        "304 (ETag)": {"page": urls("conditional-page", "html"), "feed": urls("conditional", "xml")},
    }
    rows = []
    try:
        for label, by_kind in routes.items():
            samples = {name: {"cold": [], "cold_cpu": [], "rss": [], "again": [], "again_cpu": [], "complete": []} for name, *_ in contenders}
            for run in range(args.runs):
                for name, prepare, command, needs_home, kind in contenders:
                    work = tempfile.mkdtemp(prefix="fetchrun-bench-")
                    try:
                        prepare(work, by_kind[kind])
                        env = dict(os.environ, HOME=os.path.join(work, "home")) if needs_home else None
                        before = fixture.hits()
                        cold = timed(command(work), env=env, cwd=work)
                        served = fixture.hits() - before
                        time.sleep(2)
                        again = timed(command(work), env=env, cwd=work)
                        if cold is None or again is None:
                            print(f"  {label} {name}: stopped after {TIME_LIMIT}s", flush=True)
                            continue
                        s = samples[name]
                        s["cold"].append(cold[1]); s["cold_cpu"].append(cold[2]); s["rss"].append(cold[3])
                        s["again"].append(again[1]); s["again_cpu"].append(again[2])
                        # Every URL requested once, and fetchrun's own verdict: no source failed.
                        s["complete"].append(served == args.n and (needs_home or cold[0] == 0))
                        print(f"  {label} run {run + 1} {name}: cold {cold[1]:.2f}s ({cold[2]:.2f}s CPU, {cold[3]:.0f} MB, {served} requests, exit {cold[0]}), "
                              f"repeat {again[1]:.2f}s ({again[2]:.2f}s CPU)", flush=True)
                    finally:
                        shutil.rmtree(work, ignore_errors=True)
            for name, *_ in contenders:
                s = samples[name]
                if s["cold"]:
                    rows.append((label, name, *(statistics.median(s[key]) for key in ["cold", "cold_cpu", "rss", "again", "again_cpu"]), all(s["complete"])))
    finally:
        fixture.stop()

    print()
    print(f"| answer | tool | cold | cold CPU | peak RSS | repeat | repeat CPU | complete |")
    print("|---|---|---|---|---|---|---|---|")
    for label, name, cold, cold_cpu, rss, again, again_cpu, complete in rows:
        print(f"| {label} | {name} | {cold:.2f} s | {cold_cpu:.2f} s | {rss:.0f} MB | {again:.2f} s | {again_cpu:.2f} s | {'yes' if complete else 'no'} |")
    by = {(label, name): (cold, again) for label, name, cold, _, _, again, _, _ in rows}
    for label in routes:
        pages, feeds, peer = by.get((label, contenders[0][0])), by.get((label, contenders[1][0])), by.get((label, contenders[2][0]))
        if pages and feeds and peer and min(pages + feeds) > 0:
            print(f"{label}: pages ÷ feeds cold {pages[0] / feeds[0]:.2f}×, repeat {pages[1] / feeds[1]:.2f}×; "
                  f"urlwatch ÷ pages cold {peer[0] / pages[0]:.1f}×, repeat {peer[1] / pages[1]:.1f}×")
    print()
    subprocess.run([os.path.join(args.bin, "fetchrun-parser-benchmark"), "--page", "1000000", "--rounds", "9"], check=True)


if __name__ == "__main__":
    main()

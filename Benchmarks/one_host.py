#!/usr/bin/env python3
"""Many feeds on ONE host: fetchrun's per-host limits and HTTP/2 against newsboat.

    make bench-one-host      # prints the table; `make bench` puts it in RESULTS.md

Two cases, 1,000 feeds at 100 ms latency each, runs alternating between tools (medians):
- one HTTPS host speaking HTTP/2 (Tests/Fixtures/h2-fixture-server.py behind a CA made here):
  fetchrun trusts the CA with `ca_file`; newsboat is told not to check certificates
  (`ssl-verifypeer no`), which if anything saves it work;
- one plain-HTTP host (the fixture server on one port): fetchrun with `http: { per_host: 32 }`
  and with its default of 6, newsboat with 32 threads.
Every tool starts from empty state; "complete" checks the items stored against the feeds'.
"""
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

H2_SERVER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Tests", "Fixtures", "h2-fixture-server.py")


def make_certificates(folder):
    def openssl(*arguments):
        subprocess.run(["openssl", *arguments], cwd=folder, check=True, capture_output=True)
    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=fetchrun bench CA")
    openssl("req", *curve, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(folder, "san.ext"), "w") as file:
        file.write("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    return os.path.join(folder, "ca.pem")


def fetchrun_tool(binary, http_settings, defaults):
    def prepare(work, urls):
        with open(os.path.join(work, "sources.yaml"), "w") as config:
            if http_settings:
                config.write(f"http: {{ {http_settings} }}\n")
            if defaults:
                config.write(f"defaults: {{ {defaults} }}\n")
            config.write("sources:\n")
            for index, url in enumerate(urls, 1):
                config.write(f'  - name: feed-{index}\n    type: rss\n    url: "{url}"\n')

    def command(work):
        return [binary, "--config", os.path.join(work, "sources.yaml"), "--state-dir", os.path.join(work, "state")]

    def fetched(work, output):
        for line in output.splitlines()[::-1]:
            if " new item" in line and ":" in line:
                return int(line.split(":", 1)[1].split()[0])
        return 0
    return prepare, command, fetched


def newsboat_tool(threads, insecure):
    def prepare(work, urls):
        with open(os.path.join(work, "urls"), "w") as file:
            file.write("\n".join(urls) + "\n")
        with open(os.path.join(work, "config"), "w") as file:
            file.write(f"reload-threads {threads}\n")
            if insecure:
                file.write("ssl-verifypeer no\nssl-verifyhost no\n")
        os.makedirs(os.path.join(work, "home"), exist_ok=True)

    def command(work):
        return ["newsboat", "-x", "reload", "-u", os.path.join(work, "urls"), "-c", os.path.join(work, "cache.db"), "-C", os.path.join(work, "config")]

    def fetched(work, output):
        database = os.path.join(work, "cache.db")
        if not os.path.exists(database):
            return 0
        with sqlite3.connect(database) as connection:
            return connection.execute("select count(*) from rss_item").fetchone()[0]
    return prepare, command, fetched


def measure(case, tools, urls, wanted, runs, scratch):
    """Alternating runs; each in a folder of its own under `scratch`, all removed at the end
    of the benchmark: on ext4, creating files within a minute of deleting many spends most
    of its time in the kernel's check for recently deleted inodes (`recently_deleted`, a
    third of a 1,000-feed run in `perf`), which would measure the previous run's clean-up."""
    import compare  # here, not at the top: compare.py imports this file
    samples = {name: [] for name, _ in tools}
    for run in range(runs):
        for name, (prepare, command, fetched) in tools:
            work = tempfile.mkdtemp(prefix="run-", dir=scratch)
            try:
                prepare(work, urls)
                env = dict(os.environ, HOME=os.path.join(work, "home")) if name.startswith("newsboat") else None
                outcome = compare.timed(command(work), env=env, cwd=work)
                if outcome is None:
                    print(f"  {case} {name}: stopped after {compare.TIME_LIMIT}s", flush=True)
                    continue
                status, wall, cpu, rss, output = outcome
                got = fetched(work, output)
                samples[name].append({"wall": wall, "cpu": cpu, "rss": rss, "complete": got >= wanted})
                print(f"  {case} run {run + 1} {name}: {wall:.2f}s wall, {cpu:.2f}s CPU, {rss:.0f} MB, {got}/{wanted} items", flush=True)
            finally:
                pass
    return {name: {
        "wall": statistics.median(s["wall"] for s in done),
        "cpu": statistics.median(s["cpu"] for s in done),
        "rss": statistics.median(s["rss"] for s in done),
        "complete": all(s["complete"] for s in done),
    } for name, done in samples.items() if done}


def one_host(bin_dir, n=1000, runs=3, latency="100ms"):
    """Both cases; returns (markdown lines, target lines)."""
    bin_dir = os.path.abspath(bin_dir)
    fetchrun = os.path.join(bin_dir, "fetchrun")
    results = {}
    scratch = tempfile.mkdtemp(prefix="fetchrun-onehost-")
    try:
        return report(run_cases(fetchrun, bin_dir, n, runs, latency, scratch, results), n)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_cases(fetchrun, bin_dir, n, runs, latency, scratch, results):
    import compare
    folder = tempfile.mkdtemp(prefix="ca-", dir=scratch)
    server = None
    try:
        ca = make_certificates(folder)
        server = subprocess.Popen(["/usr/bin/python3", H2_SERVER, "--cert", os.path.join(folder, "server.pem"), "--key", os.path.join(folder, "server.key")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = int(server.stdout.readline())
        urls = [f"https://127.0.0.1:{port}/feed/{i}.xml?latency={latency}" for i in range(1, n + 1)]
        results["HTTPS, HTTP/2"] = measure("https", [
            ("fetchrun", fetchrun_tool(fetchrun, "", f'ca_file: "{ca}"')),
            ("newsboat (32 threads)", newsboat_tool(32, insecure=True)),
        ], urls, n * 20, runs, scratch)
    finally:
        if server:
            server.stdin.close()
            server.wait(timeout=30)

    plain = subprocess.Popen([os.path.join(bin_dir, "fetchrun-fixture-server"), "--hosts", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base = plain.stdout.readline().strip()
        urls = [f"{base}/feed/{i}.xml?latency={latency}" for i in range(1, n + 1)]
        # One run first, not counted: the fixture server generates each feed once and keeps it.
        prepare, command, _ = fetchrun_tool(fetchrun, "per_host: 32", "")
        warm = tempfile.mkdtemp(prefix="warm-", dir=scratch)
        prepare(warm, urls)
        subprocess.run(command(warm), capture_output=True)
        results["plain HTTP/1.1"] = measure("plain", [
            ("fetchrun, per_host: 32", fetchrun_tool(fetchrun, "per_host: 32", "")),
            ("fetchrun, per_host: 6 (default)", fetchrun_tool(fetchrun, "", "")),
            ("newsboat (32 threads)", newsboat_tool(32, insecure=False)),
        ], urls, compare.expected_items(n), runs, scratch)
    finally:
        plain.stdin.close()
        plain.wait(timeout=30)
    return results


def report(results, n):
    lines = [f"| host | tool | wall | CPU | peak RSS | complete | newsboat-32 ÷ tool |", "|---|---|---|---|---|---|---|"]
    for case, tools in results.items():
        peer = tools.get("newsboat (32 threads)", {}).get("wall")
        for name, result in tools.items():
            ratio = f"{peer / result['wall']:.1f}×" if peer else ""
            lines.append(f"| {case} | {name} | {result['wall']:.2f} s | {result['cpu']:.2f} s | {result['rss']:.0f} MB | {'yes' if result['complete'] else 'NO'} | {ratio} |")
    targets = []
    https = results.get("HTTPS, HTTP/2", {})
    if "fetchrun" in https and "newsboat (32 threads)" in https:
        ours, peer = https["fetchrun"]["wall"], https["newsboat (32 threads)"]["wall"]
        targets.append(f"- {n:,} feeds on one HTTPS host (HTTP/2): at most 1/10 of newsboat-32 and under 1.5 s: {ours:.2f} s, {peer / ours:.1f}× — {'met' if peer / ours >= 10 and ours < 1.5 else 'MISSED'}")
    plain_results = results.get("plain HTTP/1.1", {})
    if "fetchrun, per_host: 32" in plain_results and "newsboat (32 threads)" in plain_results:
        ours, peer = plain_results["fetchrun, per_host: 32"]["wall"], plain_results["newsboat (32 threads)"]["wall"]
        targets.append(f"- {n:,} feeds on one plain-HTTP host, per_host: 32: at most 1/10 of newsboat-32: {ours:.2f} s, {peer / ours:.1f}× — {'met' if peer / ours >= 10 else 'MISSED'}")
    return lines, targets


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the folder of the release binaries")
    parser.add_argument("--feeds", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    table, targets = one_host(arguments.bin, arguments.feeds, arguments.runs)
    print("\n".join(table + [""] + targets))

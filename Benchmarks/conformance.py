#!/usr/bin/env python3
"""Agreement with feedparser on feedparser's own well-formed test documents.

    Benchmarks/conformance.py --bin DIR --python VENV_PYTHON [--sdist DIR] [--show N]

The documents are the RSS, RDF and Atom cases of tests/wellformed in feedparser's source
distribution (downloaded once from PyPI with pip into --sdist, default .build/feedparser-sdist).
Each document is read by feedparser and by `fetchrun probe --format json`; for every entry
feedparser finds, its title, link and id are compared with fetchrun's item at the same
position, as plain text (feedparser's HTML with markup removed and entities decoded; both
with whitespace collapsed). A field
feedparser leaves empty is not compared: fetchrun fills ids and titles in where a feed has
none. Prints the share of entries that agree in every compared field, per folder and in all,
and with --show the first N disagreements.
"""
import argparse
import glob
import html
import json
import os
import re
import subprocess
import sys
import tarfile

FOLDERS = ["rss", "rdf", "atom", "atom10", "base", "amp", "namespace", "node_precedence", "xml"]

FEEDPARSER_ENTRIES = r"""
import json, sys, feedparser
result = {}
for path in sys.argv[1:]:
    parsed = feedparser.parse(path)
    result[path] = [{"title": entry.get("title"), "link": entry.get("link"), "id": entry.get("id")} for entry in parsed.entries]
print(json.dumps(result))
"""


def plain(text):
    """feedparser's text (HTML for most fields) as a reader sees it: tags removed, entities
    decoded, whitespace collapsed."""
    if text is None:
        return None
    text = re.sub(r"<[^>]*>", "", text)
    text = html.unescape(text)
    return " ".join(text.split())


def collapsed(text):
    """fetchrun's text, already plain: whitespace collapsed."""
    return None if text is None else " ".join(text.split())


def sdist_tests(folder):
    """The tests/wellformed folder of feedparser's sdist, fetched once."""
    found = glob.glob(os.path.join(folder, "feedparser-*", "tests", "wellformed"))
    if found:
        return found[0]
    os.makedirs(folder, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "-q", "-d", folder, "feedparser==6.0.14"], check=True)
    archive = glob.glob(os.path.join(folder, "feedparser-*.tar.gz"))[0]
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if "/tests/wellformed/" in m.name and m.isreg()]
        tar.extractall(folder, members=members, filter="data")
    return glob.glob(os.path.join(folder, "feedparser-*", "tests", "wellformed"))[0]


def fetchrun_items(fetchrun, path):
    completed = subprocess.run([fetchrun, "probe", "--format", "json", path], capture_output=True, text=True)
    lines = completed.stdout.splitlines()
    return [json.loads(line) for line in lines[1:]] if completed.returncode == 0 else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the folder of the release binaries")
    parser.add_argument("--python", default=sys.executable, help="a Python with feedparser installed")
    parser.add_argument("--sdist", default=os.path.join(os.path.dirname(__file__), "..", ".build", "feedparser-sdist"))
    parser.add_argument("--show", type=int, default=0, help="print the first N disagreements")
    args = parser.parse_args()

    tests = sdist_tests(args.sdist)
    fetchrun = os.path.join(args.bin, "fetchrun")
    totals = {"entries": 0, "agreeing": 0, "documents": 0, "unread": 0}
    shown = 0
    print(f"feedparser's well-formed cases: {tests}")
    for folder in FOLDERS:
        paths = sorted(glob.glob(os.path.join(tests, folder, "*.xml")))
        if not paths:
            continue
        reference = json.loads(subprocess.run([args.python, "-c", FEEDPARSER_ENTRIES] + paths, check=True, capture_output=True, text=True).stdout)
        entries = agreeing = unread = 0
        for path in paths:
            theirs = reference[path]
            if not theirs:
                continue
            ours = fetchrun_items(fetchrun, path)
            if ours is None:
                unread += 1
            for index, their in enumerate(theirs):
                entries += 1
                our = ours[index] if ours is not None and index < len(ours) else {}
                differences = [field for field in ("title", "link", "id")
                               if plain(their[field]) and plain(their[field]) != collapsed(our.get(field))]
                if not differences:
                    agreeing += 1
                elif shown < args.show:
                    shown += 1
                    print(f"  {os.path.relpath(path, tests)} entry {index + 1}: " + "; ".join(
                        f"{field}: feedparser {plain(their[field])!r}, fetchrun {collapsed(our.get(field))!r}" for field in differences))
        totals["entries"] += entries
        totals["agreeing"] += agreeing
        totals["documents"] += len(paths)
        totals["unread"] += unread
        share = 100 * agreeing / entries if entries else 100
        print(f"{folder:16} {len(paths):4} documents {entries:4} entries  agreeing {agreeing:4}  {share:5.1f} %" + (f"  ({unread} not read by fetchrun)" if unread else ""))
    share = 100 * totals["agreeing"] / totals["entries"] if totals["entries"] else 0
    print(f"{'all':16} {totals['documents']:4} documents {totals['entries']:4} entries  agreeing {totals['agreeing']:4}  {share:5.1f} %  (target at least 98 %)")


if __name__ == "__main__":
    main()

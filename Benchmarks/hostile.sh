#!/usr/bin/env bash
# Hostile-neighbour benchmark: 100 healthy feeds at 100 ms latency, run alone and then beside
# hostile sources in one config: a 1 MB element of 100,000 attributes, a 5 MB title, ten
# responses of 50,000 repeated header lines (`X: a`, 300 KB: what libcurl accepts), and three
# page shapes (20,000 sibling paragraphs under `h2 ~ p + p`; entries nested 250 deep around
# 100,000 paragraphs as `items:`; an XPath expression quadratic in the paragraphs), and three
# feed shapes (50,000 categories in one item; 2,000 unreadable dates under a 1 MB title; a
# 1 MB `xml:base` over 2,000 entries), and a JSON API whose entries nest 500 deep around 900,000
# numbers, watched with `$..entry..title`.
# Prints the healthy sources' median and slowest duration and the run's wall time, CPU and peak
# RSS for both, so that the healthy ones can be seen to be unchanged, and each hostile kind's
# outcome and slowest duration. Release build, R runs each.
#
#   Benchmarks/hostile.sh [--runs R]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
[ "${1:-}" = "--runs" ] && runs=$2
. Benchmarks/fixture.sh 10

python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
with open(f"{work}/crowded.xml", "w") as f:
    f.write('<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item')
    f.write("".join(f' a{i}="x"' for i in range(100_000)))
    f.write('><title>x</title></item></channel></rss>')
with open(f"{work}/longtitle.xml", "w") as f:
    f.write('<rss version="2.0"><channel><item><guid>l</guid><title>' + "T" * 5_000_000 + '</title></item></channel></rss>')
with open(f"{work}/siblings.html", "w") as f:
    f.write("<html><body><div><h2>t</h2>" + "<p>x</p>" * 20_000 + "</div></body></html>")
with open(f"{work}/nested.html", "w") as f:
    f.write("<html><body>" + "<div>" * 250 + "<p>x</p>" * 100_000 + "</div>" * 250 + "</body></html>")
with open(f"{work}/categories.xml", "w") as f:
    f.write('<rss version="2.0"><channel><title>t</title><item><guid>c</guid>')
    f.write("".join(f"<category>c{i}</category>" for i in range(50_000)) + "</item></channel></rss>")
with open(f"{work}/dates.xml", "w") as f:
    f.write('<rss version="2.0"><channel><title>t</title><item><guid>d</guid><title>' + "T" * 1_000_000 + "</title>")
    f.write("".join(f"<pubDate>never {i}</pubDate>" for i in range(2_000)) + "</item></channel></rss>")
with open(f"{work}/base.xml", "w") as f:
    f.write('<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://127.0.0.1/' + "a" * 1_000_000 + '/"><title>t</title>')
    f.write("".join(f'<entry><id>e{i}</id><title>t</title><link href="x{i}"/></entry>' for i in range(2_000)) + "</feed>")
with open(f"{work}/nested.json", "w") as f:
    f.write('{"entry":' * 500 + "[" + ",".join(["0"] * 900_000) + "]" + "}" * 500)
PY

config() {
  echo "state_dir: $work/state-$1"
  echo "defaults: { deadline: 10s }"
  echo "sources:"
  for i in $(seq 0 99); do
    echo "  - { name: healthy-$i, type: rss, url: \"${bases[$((i % 10))]}/feed/$i.xml?latency=100ms\" }"
  done
  if [ "$1" = beside ]; then
    echo "  - { name: crowded, type: rss, url: \"file:$work/crowded.xml\" }"
    echo "  - { name: longtitle, type: rss, url: \"file:$work/longtitle.xml\" }"
    for i in $(seq 0 9); do
      echo "  - { name: flood-$i, type: rss, url: \"${bases[$i]}/header-flood?lines=50000&name=X\" }"
    done
    echo "  - { name: siblings, type: page, url: \"file:$work/siblings.html\", css: \"h2 ~ p + p\" }"
    echo "  - { name: nested, type: page, url: \"file:$work/nested.html\", items: { each: div } }"
    echo "  - { name: powers, type: page, url: \"file:$work/siblings.html\", xpath: \"//p[count(following-sibling::p) = count(preceding-sibling::p)]\" }"
    for shape in categories dates base; do
      echo "  - { name: $shape, type: rss, url: \"file:$work/$shape.xml\" }"
    done
    echo "  - { name: entries, type: json, url: \"file:$work/nested.json\", select: \"\$..entry..title\" }"
  fi
}

printf '%-8s %4s %10s %10s %8s %7s %8s\n' case run median_ms slowest_ms wall_s cpu_s peak_mb
for kind in alone beside; do
  config "$kind" > "$work/$kind.yaml"
  for run in $(seq "$runs"); do
    rm -rf "$work/state-$kind"
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
      "$bin/fetchrun" -c "$work/$kind.yaml" --format json > "$work/out.json" || true
    python3 - "$work/out.json" "$kind" "$run" "$work/time" <<'PY'
import json, statistics, sys
wall, user, system, peak_kb = open(sys.argv[4]).read().split()[-4:]
events = [json.loads(l) for l in open(sys.argv[1])]
healthy = [e["duration_ms"] for e in events if e.get("event") == "source" and e["source"].startswith("healthy")]
bad = {}
for e in events:
    if e.get("event") == "source" and not e["source"].startswith("healthy"):
        bad.setdefault(e["source"].split("-")[0], []).append(e)
assert len(healthy) == 100, len(healthy)
def described(name, found):
    outcomes = sorted({e["outcome"] for e in found})
    return f"   {name}: {'/'.join(outcomes)}{f' x{len(found)}' if len(found) > 1 else ''} {max(e['duration_ms'] for e in found) / 1000:.2f}s"
print(f"{sys.argv[2]:<8} {sys.argv[3]:>4} {statistics.median(healthy):>10.0f} {max(healthy):>10.0f} {float(wall):>8.2f}"
      + f" {float(user) + float(system):>7.2f} {int(peak_kb) // 1024:>8}"
      + "".join(described(name, found) for name, found in bad.items()))
PY
  done
done

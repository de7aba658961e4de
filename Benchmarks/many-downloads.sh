#!/usr/bin/env bash
# Many small downloads from one feed: a feed of N items, each with a 100-byte enclosure on one
# of 4 fixture hosts, fetched once by `fetchrun run` from empty state, which then downloads
# every enclosure. The queue keeps a row per URL, so what each download's bookkeeping reads
# decides how the run grows with N. Prints, for each N, the run's wall time, CPU, peak RSS and
# how many entries ended done (all of them, or the script fails).
#
#   Benchmarks/many-downloads.sh [N…]   (500 1000 2000 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(500 1000 2000 5000)
. Benchmarks/fixture.sh 4

printf '%-6s %8s %8s %8s %6s\n' N wall_s cpu_s peak_mb done
for n in "${counts[@]}"; do
  python3 - "$work" "$n" "${bases[@]}" <<'PY'
import sys
work, n, bases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
items = "".join(
    f'<item><guid>i{i}</guid><title>t{i}</title><enclosure url="{bases[i % len(bases)]}/enclosures/f{i}.bin?size=100" type="audio/mpeg" length="100"/></item>'
    for i in range(n))
open(f"{work}/feed.xml", "w").write(f'<rss version="2.0"><channel><title>p</title>{items}</channel></rss>')
open(f"{work}/sources.yaml", "w").write(f'sources:\n  - {{ name: pod, type: rss, url: "file:{work}/feed.xml", download: {{ dir: {work}/media }} }}\n')
PY
  rm -rf "$work/state" "$work/media"
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$bin/fetchrun" run --config "$work/sources.yaml" --state-dir "$work/state" > /dev/null 2> "$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
  read -r wall user system peak_kb < <(tail -1 "$work/time")
  done_count=$("$bin/fetchrun" downloads --config "$work/sources.yaml" --state-dir "$work/state" | grep -c '^done' || true)
  [ "$done_count" = "$n" ] || { echo "$done_count of $n done" >&2; exit 1; }
  printf '%-6s %8.2f %8.2f %8d %6s\n' "$n" "$wall" "$(echo "$user + $system" | bc)" $((peak_kb / 1024)) "$done_count"
done

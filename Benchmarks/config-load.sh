#!/usr/bin/env bash
# Config-load benchmark: `fetchrun validate` over generated configs of 1,000, 10,000 and
# 100,000 rss sources (release build). Loading is part of every command, so it must grow
# linearly with the number of sources. Prints wall time and peak RSS per size (median of R runs).
#
#   Benchmarks/config-load.sh [--runs R]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
[ "${1:-}" = "--runs" ] && runs=$2
[ -x /usr/bin/time ] || { echo "installing GNU time" >&2; apt-get install -y -qq time >/dev/null; }
make -s deps
swift build -c release --product fetchrun >&2
bin=$(swift build -c release --show-bin-path)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '%-9s %8s %12s\n' sources wall_s peak_rss_mb
for n in 1000 10000 100000; do
  python3 - "$n" > "$work/c$n.yaml" <<'PY'
import sys
n = int(sys.argv[1])
print("sources:")
for i in range(n):
    print(f"  - name: feed-{i}\n    type: rss\n    url: https://host{i % 50}.example.org/feed/{i}.xml\n    deadline: 10s")
PY
  walls=() rss=()
  for _ in $(seq "$runs"); do
    out=$( { /usr/bin/time -f '%e %M' "$bin/fetchrun" validate -c "$work/c$n.yaml" > /dev/null; } 2>&1 | tail -1)
    walls+=("${out% *}") rss+=("${out#* }")
  done
  wall=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  peak=$(printf '%s\n' "${rss[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  printf '%-9s %8s %12s\n' "$n" "$wall" "$((peak / 1024))"
done

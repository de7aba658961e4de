#!/usr/bin/env bash
# What recording the history costs: a one-shot run of N feeds in which every feed has new
# items (each one a record of the history), two release builds side by side, run by run: A
# (--after: with the history) and B (--before: a build without it). Each folder holds a
# release-built fetchrun; A's also fetchrun-fixture-server, which serves the feeds.
#
#   Benchmarks/history.sh --after DIR --before DIR [--feeds 1000] [--pairs 7] [--new 5] [--latency 100ms] [--hosts 50]
#   Benchmarks/history.sh --after DIR --before DIR --watch [--sources 10000] [--for 60s] [--pairs 3]
#   Benchmarks/history.sh --after DIR --off --watch [--sources 10000] [--for 60s] [--pairs 7]
#   Benchmarks/history.sh --after DIR --feed [--sources 10000] [--requests 50]
#
# --watch measures a watch instead: `--sources` traffic sources due every 10 s (each fetch has
# 0-2 new items, about one record a fetch once the baselines are in), watched for `--for`; the
# figure is the watch's CPU time (user+sys) over that time. With --off, B is A's own binary with
# `history: off` in `defaults:`: the same program, recording nothing — what recording costs,
# without whatever else changed between two builds.
#
# --feed measures the feeds of changes and the dashboard as a reader and a browser get them: A
# alone, `--sources` traffic sources run ten times (their history then holds some 10,000
# records per 10,000 sources), a watch with --listen over that state (every source due in an
# hour: nothing else runs), and `--requests` GETs one after the other of each feed (50 and 100
# entries) and each dashboard page (the first page of sources as sorted, filtered, searched
# and paged, a source's page, the outputs); prints the median and slowest time to the last byte.
#
# Each pair: per build a fresh state folder, a cold run of the feeds with 20 items each (the
# baselines: a baseline records nothing, so this is the cold run's cost of the rule alone),
# then a run with `--new` more items per feed (feed n's items keep their ids as the list grows,
# so exactly that many are new per feed, each recorded). A and B alternate, A first in odd
# pairs, B first in even ones. Prints each run's wall and CPU time, the medians, and the median
# of the pairs' A/B ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

feeds=1000 pairs=7 new=5 latency=100ms hosts=50 before="" bin="" watch=0 feed=0 off=0 requests=50 sources=10000 duration=60s
while [ $# -gt 0 ]; do
  case "$1" in
    --after) bin=$2; shift 2 ;;
    --before) before=$2; shift 2 ;;
    --feeds) feeds=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --latency) latency=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --watch) watch=1; shift ;;
    --feed) feed=1; shift ;;
    --off) off=1; shift ;;
    --requests) requests=$2; shift 2 ;;
    --sources) sources=$2; shift 2 ;;
    --for) duration=$2; shift 2 ;;
    *) echo "usage: $0 --after DIR --before DIR [--feeds N] [--pairs P] [--new K] [--latency 100ms] [--hosts H]" >&2; exit 64 ;;
  esac
done
[ -x "$bin/fetchrun" ] && [ -x "$bin/fetchrun-fixture-server" ] || { echo "--after must name a folder with release-built fetchrun and fetchrun-fixture-server" >&2; exit 64; }
[ "$off" = 1 ] && before=$bin
[ "$feed" = 1 ] || [ -x "$before/fetchrun" ] || { echo "--before must name a folder with a release-built fetchrun (or --off)" >&2; exit 64; }
[ -x /usr/bin/time ] || { echo "installing GNU time" >&2; apt-get install -y -qq time >/dev/null; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

if [ "$feed" = 1 ]; then
  work=$(mktemp -d)
  trap 'kill $watching 2>/dev/null || true; rm -rf "$work"' EXIT
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  { echo "listen: { address: 127.0.0.1:$port }"; echo "defaults: { interval: 1h }"; echo "sources:"
    for i in $(seq 1 "$sources"); do printf '  - { name: t%d, type: traffic }\n' "$i"; done; } > "$work/feed.yaml"
  for _ in $(seq 10); do "$bin/fetchrun" --config "$work/feed.yaml" --state-dir "$work/state" > /dev/null 2>&1 || true; done
  "$bin/fetchrun" history --config "$work/feed.yaml" --state-dir "$work/state" --format json --limit 100000 | wc -l | xargs echo "records in the history:"
  "$bin/fetchrun" watch --config "$work/feed.yaml" --state-dir "$work/state" --for 600s > /dev/null 2>&1 &
  watching=$!
  python3 - "$port" "$requests" <<'PY'
import statistics, sys, time, urllib.request
port, count = sys.argv[1], int(sys.argv[2])
for _ in range(100):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
        break
    except Exception:
        time.sleep(0.2)
for path in ("/feeds/all.atom", "/feeds/all.json", "/feeds/all.atom?entries=100", "/feeds/all.json?entries=100",
             "/", "/?sort=changed&order=desc", "/?failing=1", "/?q=t99", "/?page=50", "/sources/t1", "/outputs"):
    times, size = [], 0
    for _ in range(count):
        start = time.perf_counter()
        size = len(urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).read())
        times.append((time.perf_counter() - start) * 1000)
    print(f"{path}: {size} bytes, median {statistics.median(times):.1f} ms, slowest {max(times):.1f} ms over {count} requests")
PY
  exit 0
fi

if [ "$watch" = 1 ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  watch_config() {  # $1: more of defaults:
    { echo "defaults: { interval: 10s, max_interval: 10s$1 }"; echo "sources:"
      for i in $(seq 1 "$sources"); do printf '  - { name: t%d, type: traffic }\n' "$i"; done; }
  }
  watch_config "" > "$work/a.yaml"
  if [ "$off" = 1 ]; then watch_config ", history: off" > "$work/b.yaml"; else cp "$work/a.yaml" "$work/b.yaml"; fi
  watch_cpu() {  # $1: the binaries' folder, $2: a fresh state folder, $3: a.yaml or b.yaml
    /usr/bin/time -f "%U %S" -o "$work/time" "$1/fetchrun" watch --config "$work/$3" --state-dir "$2" --for "$duration" > /dev/null 2>&1
    read -r user sys < <(tail -n 1 "$work/time")
    echo "$user + $sys" | bc
  }
  echo "history, watch: $sources traffic sources every 10s for $duration, $(nproc) cores; A=$bin B=$before$([ "$off" = 1 ] && echo " with history: off")"
  printf '%-5s %10s %10s\n' pair A_cpu B_cpu
  : > "$work/results"
  for pair in $(seq 1 "$pairs"); do
    if [ $(( pair % 2 )) = 1 ]; then a=$(watch_cpu "$bin" "$work/a-$pair" a.yaml); b=$(watch_cpu "$before" "$work/b-$pair" b.yaml)
    else b=$(watch_cpu "$before" "$work/b-$pair" b.yaml); a=$(watch_cpu "$bin" "$work/a-$pair" a.yaml); fi
    printf '%-5s %10s %10s\n' "$pair" "$a" "$b"
    echo "$a $b" >> "$work/results"
  done
  printf 'median CPU A %ss, B %ss; A/B %s\n' "$(cut -d' ' -f1 "$work/results" | median)" "$(cut -d' ' -f2 "$work/results" | median)" \
    "$(awk '{ printf "%.3f\n", $1 / $2 }' "$work/results" | median)"
  exit 0
fi

prebuilt=$bin
. Benchmarks/fixture.sh "$hosts"

config() {  # $1: items per feed
  echo "defaults: { deadline: 30s }"
  echo "sources:"
  for i in $(seq 1 "$feeds"); do
    printf '  - name: feed-%d\n    type: rss\n    url: "%s/feed/%d.xml?latency=%s&items=%d"\n' "$i" "${bases[$(( i % hosts ))]}" "$i" "$latency" "$1"
  done
}
config 20 > "$work/first.yaml"
config $(( 20 + new )) > "$work/second.yaml"

# One run of each build first, not counted: the fixture server generates each feed once.
for tool in "$bin" "$before"; do
  "$tool/fetchrun" --config "$work/first.yaml" --state-dir "$work/warm" > /dev/null 2>&1 || true
  "$tool/fetchrun" --config "$work/second.yaml" --state-dir "$work/warm" > /dev/null 2>&1 || true
  rm -rf "$work/warm"
done

measure() {  # $1: the binaries' folder, $2: a fresh state folder; prints "cold_wall cold_cpu wall cpu"
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$1/fetchrun" --config "$work/first.yaml" --state-dir "$2" > /dev/null 2> "$work/err"
  read -r cold_wall cold_user cold_sys < <(tail -n 1 "$work/time")
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$1/fetchrun" --config "$work/second.yaml" --state-dir "$2" > "$work/out" 2> "$work/err"
  read -r wall user sys < <(tail -n 1 "$work/time")
  items=$(tail -n 1 "$work/out" | sed -n 's/^[a-zA-Z]*: \([0-9]*\) new item.*/\1/p')
  [ "$items" = $(( feeds * new )) ] || { echo "$1: $items new items, $(( feeds * new )) expected" >&2; tail -n 5 "$work/err" >&2; exit 1; }
  echo "$cold_wall $(echo "$cold_user + $cold_sys" | bc) $wall $(echo "$user + $sys" | bc)"
}

echo "history: $feeds feeds, then $new new items each, $latency latency, $hosts hosts, $(nproc) cores; A=$bin B=$before"
printf '%-5s %10s %10s %10s %10s   %10s %10s %10s %10s\n' pair A_cold_w A_cold_cpu B_cold_w B_cold_cpu A_new_w A_new_cpu B_new_w B_new_cpu
: > "$work/results"
for pair in $(seq 1 "$pairs"); do
  if [ $(( pair % 2 )) = 1 ]; then
    a=$(measure "$bin" "$work/a-$pair"); b=$(measure "$before" "$work/b-$pair")
  else
    b=$(measure "$before" "$work/b-$pair"); a=$(measure "$bin" "$work/a-$pair")
  fi
  read -r acw acc aw ac <<< "$a"; read -r bcw bcc bw bc <<< "$b"
  printf '%-5s %10s %10s %10s %10s   %10s %10s %10s %10s\n' "$pair" "$acw" "$acc" "$bcw" "$bcc" "$aw" "$ac" "$bw" "$bc"
  echo "$acw $acc $bcw $bcc $aw $ac $bw $bc" >> "$work/results"
done
column() { cut -d' ' -f"$1" "$work/results" | median; }
ratio() { awk -v a="$1" -v b="$2" '{ printf "%.3f\n", $a / $b }' "$work/results" | median; }
printf 'cold (baselines): median A wall %ss cpu %ss, B wall %ss cpu %ss; A/B wall %s, cpu %s\n' \
  "$(column 1)" "$(column 2)" "$(column 3)" "$(column 4)" "$(ratio 1 3)" "$(ratio 2 4)"
printf 'with %s new items per feed: median A wall %ss cpu %ss, B wall %ss cpu %ss; A/B wall %s, cpu %s\n' \
  "$new" "$(column 5)" "$(column 6)" "$(column 7)" "$(column 8)" "$(ratio 5 7)" "$(ratio 6 8)"

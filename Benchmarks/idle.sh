#!/usr/bin/env bash
# Idle cost of watch mode: CPU seconds a watch of N feeds with a 1 h interval uses over a
# minute once its first fetches are done (target: under 0.05 s for 100 feeds).
#
#   Benchmarks/idle.sh [--feeds N] [--seconds S] [--synthetic]
#
# Reads the watch process's user + system time from /proc before and after the quiet minute,
# and its resident memory after it. --synthetic watches `traffic` sources instead of feeds
# (no server: the scale test of 100,000 sources), each with at least one update, so that every
# first fetch prints the baseline line this script counts.
set -euo pipefail
cd "$(dirname "$0")/.."

feeds=100 seconds=60 synthetic=0
while [ $# -gt 0 ]; do
  case "$1" in
    --feeds) feeds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --synthetic) synthetic=1; shift ;;
    *) echo "usage: $0 [--feeds N] [--seconds S] [--synthetic]" >&2; exit 64 ;;
  esac
done

. Benchmarks/fixture.sh 1
base=${bases[0]}
{
  echo "defaults: { interval: 1h }"
  echo "sources:"
  if [ "$synthetic" = 1 ]; then
    for i in $(seq 1 "$feeds"); do printf '  - name: s-%d\n    type: traffic\n    min: 1\n    seed: %d\n' "$i" "$i"; done
  else
    for i in $(seq 1 "$feeds"); do printf '  - name: feed-%d\n    type: rss\n    url: "%s/feed/%d.xml"\n' "$i" "$base" "$i"; done
  fi
} > "$work/sources.yaml"

"$bin/fetchrun" watch --config "$work/sources.yaml" --state-dir "$work/state" > "$work/out" 2> "$work/err" &
watch=$!
extra_pids=$watch
started=$(date +%s.%N)
for _ in $(seq 6000); do [ "$(grep -c 'baseline' "$work/out" || true)" -ge "$feeds" ] && break; sleep 0.1; done
echo "first fetches took $(echo "$(date +%s.%N) - $started" | bc | cut -c1-6) s"
echo "first fetches done: $(grep -c baseline "$work/out") of $feeds sources"
# The last baselines are printed while the database and snapshot writes of the first round
# settle; the quiet minute starts after them.
sleep 5

ticks() { awk '{ print $14 + $15 }' "/proc/$watch/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
sleep "$seconds"
after=$(ticks)
echo "CPU used by the idle watch over ${seconds}s: $(echo "scale=3; ($after - $before) / $hz" | bc) s (target < 0.05 s)"
echo "resident memory: $(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$watch/status") MB, peak $(awk '/VmHWM/ { print int($2 / 1024) }' "/proc/$watch/status") MB"
kill -TERM "$watch"
wait "$watch" || true

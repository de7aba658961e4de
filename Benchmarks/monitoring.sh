#!/usr/bin/env bash
# The cost of being watched: CPU of a watch over N synthetic sources for S seconds, without
# --listen and with --listen plus a scrape of /metrics every second; and how long one scrape
# of N sources' metrics takes (target: < 5 % more CPU, a scrape under 100 ms at 10,000).
#
#   Benchmarks/monitoring.sh [--sources N] [--seconds S] [--rounds R]
#
# The sources are `traffic` ones with a 30 s interval and new data at every fetch, so every
# source is fetched every 30 s (in waves: the first fetches spread over a second, each next
# one 30 s after the last) and its metrics recorded each time. The CPU is the watch process's
# user + system time from /proc over the window, which starts 5 s after the first fetches and
# by default lasts 75 s: the second and third waves whole, ending before the fourth (a 60 s
# window ended inside the third wave, and how much of it each run caught moved the figure by up
# to a third). The two kinds of run alternate R times (3 by default); the medians are compared.
# Then fetchrun-scrape-benchmark builds the exposition in-process, which no client or HTTP
# blurs.
set -euo pipefail
cd "$(dirname "$0")/.."

sources=10000 seconds=75 rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --sources) sources=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--sources N] [--seconds S] [--rounds R]" >&2; exit 64 ;;
  esac
done

. Benchmarks/fixture.sh 1
{
  echo "defaults: { interval: 30s }"
  echo "sources:"
  for i in $(seq 1 "$sources"); do printf '  - { name: s-%d, type: traffic, min: 1, seed: %d }\n' "$i" "$i"; done
} > "$work/sources.yaml"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
hz=$(getconf CLK_TCK)

# One watch for $seconds after its first fetches; prints its CPU seconds over that window.
measure() {
  rm -rf "$work/state"
  "$bin/fetchrun" watch --config "$work/sources.yaml" --state-dir "$work/state" "$@" > "$work/out" 2> "$work/err" &
  local watch=$!
  extra_pids=$watch
  for _ in $(seq 6000); do [ "$(grep -c 'baseline' "$work/out" || true)" -ge "$sources" ] && break; sleep 0.1; done
  sleep 5
  local before after
  before=$(awk '{ print $14 + $15 }' "/proc/$watch/stat")
  if [ $# -gt 0 ]; then
    python3 - "$port" "$seconds" > "$work/scrapes" <<'PY'
import sys, time, urllib.request
port, seconds = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + seconds
times = []
while time.time() < end:
    start = time.perf_counter()
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    times.append(time.perf_counter() - start)
    time.sleep(max(0, 1 - (time.perf_counter() - start)))
times.sort()
print(f"{len(times)} scrapes of {len(body)} bytes: median {times[len(times) // 2] * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms")
PY
  else
    sleep "$seconds"
  fi
  after=$(awk '{ print $14 + $15 }' "/proc/$watch/stat")
  kill -TERM "$watch"
  wait "$watch" || true
  echo "scale=2; ($after - $before) / $hz" | bc
}

# Alternating, so that the machine's drift falls on both; medians of --rounds.
plains=() watcheds=()
for _ in $(seq "$rounds"); do
  plains+=("$(measure)")
  watcheds+=("$(measure --listen "127.0.0.1:$port")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
plain=$(median "${plains[@]}") watched=$(median "${watcheds[@]}")
echo "$sources sources, ${seconds}s after the first fetches, medians of $rounds alternating runs:"
echo "  watch alone:                          ${plain} s CPU  (${plains[*]})"
echo "  watch --listen, /metrics every second: ${watched} s CPU ($(echo "scale=1; ($watched - $plain) * 100 / $plain" | bc) %)  (${watcheds[*]})"
echo "  last run's $(cat "$work/scrapes")"

# The exposition alone, in-process: no HTTP, no client.
swift build -c release --product fetchrun-scrape-benchmark >&2
"$bin/fetchrun-scrape-benchmark" --sources "$sources"

#!/usr/bin/env bash
# The cost of being watched: CPU of a watch over N synthetic sources for S seconds, without
# --listen and with --listen plus a scrape of /metrics every second (over one kept connection,
# as Prometheus scrapes); and how long one scrape of N sources' metrics takes (target: < 5 %
# more CPU, a scrape under 100 ms at 10,000).
#
#   Benchmarks/monitoring.sh [--sources N] [--seconds S] [--rounds R]   (R: 5)
#
# The sources are `traffic` ones with a 30 s interval and new data at every fetch, so every
# source is fetched every 30 s (in waves: the first fetches spread over a second, each next
# one 30 s after the last) and its metrics recorded each time. The CPU is each watch process's
# user + system time from /proc over the window, which starts 5 s after the first fetches and
# by default lasts 75 s: the second and third waves whole, ending before the fourth.
#
# The two watches run side by side, started together (which one first alternates), each with
# its own state folder: whatever else the machine does then falls on both, and each round
# gives one ratio. Run one after the other, the same build's "alone" figure moved by a fifth
# from run to run, more than the difference measured. The state folders are on tmpfs
# (/dev/shm) when there is one: on ext4, the profile of a round showed the kernel's inode
# allocator (recently_deleted, find_inode_bit, after the previous round's 10,000 files were
# deleted) taking a varying share, which blurred the figure too. The median of R rounds' ratios is the result.
# Then fetchrun-scrape-benchmark builds the exposition in-process, which no client or HTTP
# blurs.
set -euo pipefail
cd "$(dirname "$0")/.."

sources=10000 seconds=75 rounds=5
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
states=$work
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  states=$(mktemp -d -p /dev/shm fetchrun-monitoring.XXXXXX)
  trap 'exec 3>&-; kill "$server" $extra_pids 2>/dev/null || true; rm -rf "$work" "$states"' EXIT
fi

cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
baselined() { [ "$(grep -c 'baseline' "$1" || true)" -ge "$sources" ]; }

# One round: both watches for $seconds after their first fetches, the watched one started
# first when $1 is 1; sets alone_ticks and watched_ticks.
round() {
  local dir=$states/round alone watched
  mkdir -p "$dir/alone" "$dir/watched"
  start_alone() { "$bin/fetchrun" watch --config "$work/sources.yaml" --state-dir "$dir/alone" > "$work/out-alone" 2> /dev/null & alone=$!; }
  start_watched() { "$bin/fetchrun" watch --config "$work/sources.yaml" --state-dir "$dir/watched" --listen "127.0.0.1:$port" > "$work/out-watched" 2> /dev/null & watched=$!; }
  if [ "$1" = 0 ]; then start_alone; start_watched; else start_watched; start_alone; fi
  extra_pids="$alone $watched"
  for _ in $(seq 6000); do baselined "$work/out-alone" && baselined "$work/out-watched" && break; sleep 0.1; done
  sleep 5
  local alone_before watched_before
  alone_before=$(cpu "$alone") watched_before=$(cpu "$watched")
  # One connection kept open, as Prometheus keeps its connection to a target between scrapes.
  python3 - "$port" "$seconds" > "$work/scrapes" <<'PY'
import http.client, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + seconds
times = []
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
while time.time() < end:
    start = time.perf_counter()
    connection.request("GET", "/metrics")
    body = connection.getresponse().read()
    times.append(time.perf_counter() - start)
    time.sleep(max(0, 1 - (time.perf_counter() - start)))
times.sort()
print(f"{len(times)} scrapes of {len(body)} bytes: median {times[len(times) // 2] * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms")
PY
  alone_ticks=$(( $(cpu "$alone") - alone_before )) watched_ticks=$(( $(cpu "$watched") - watched_before ))
  kill -TERM "$alone" "$watched"
  wait "$alone" "$watched" || true
  rm -rf "$dir"
}

alones=() watcheds=() ratios=()
for r in $(seq "$rounds"); do
  round $((r % 2))
  alones+=("$(echo "scale=2; $alone_ticks / $hz" | bc)") watcheds+=("$(echo "scale=2; $watched_ticks / $hz" | bc)")
  ratios+=("$(echo "scale=1; ($watched_ticks - $alone_ticks) * 100 / $alone_ticks" | bc)")
  echo "  round $r: alone ${alones[-1]} s, watched ${watcheds[-1]} s CPU (${ratios[-1]} %)" >&2
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "$sources sources, ${seconds}s after the first fetches, $rounds rounds of the two side by side:"
echo "  watch alone:                          median $(median "${alones[@]}") s CPU  (${alones[*]})"
echo "  watch --listen, /metrics every second: median $(median "${watcheds[@]}") s CPU  (${watcheds[*]})"
echo "  more CPU when watched, per round:     median $(median "${ratios[@]}") %  (${ratios[*]})"
echo "  last round's $(cat "$work/scrapes")"

# The exposition alone, in-process: no HTTP, no client.
swift build -c release --product fetchrun-scrape-benchmark >&2
"$bin/fetchrun-scrape-benchmark" --sources "$sources"

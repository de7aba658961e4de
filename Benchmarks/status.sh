#!/usr/bin/env bash
# What asking a big watch for its status costs: a watch of N synthetic sources (1 h interval)
# with --listen is asked for /status R times once its first fetches are done; then
# `fetchrun status --format json` reads the same state folder beside it.
#
#   Benchmarks/status.sh [--sources N] [--requests R] [--binary PATH]   (N: 100000, R: 5)
#
# For each request: the time until the whole body arrived (a client on one connection, as a
# dashboard polls), the watch's CPU over it (user + system time from /proc, ticks of 10 ms),
# and the body's size. Then the watch's peak resident memory before the first request and
# after the last (VmHWM), and its resident memory after. --binary measures another build of
# fetchrun (an earlier commit's, for a before-and-after), else this tree's release build.
set -euo pipefail
cd "$(dirname "$0")/.."

sources=100000 requests=5 binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sources) sources=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --binary) binary=$(realpath "$2"); shift 2 ;;
    *) echo "usage: $0 [--sources N] [--requests R] [--binary PATH]" >&2; exit 64 ;;
  esac
done

. Benchmarks/fixture.sh 1
fetchrun=${binary:-$bin/fetchrun}
{
  echo "defaults: { interval: 1h }"
  echo "sources:"
  for i in $(seq 1 "$sources"); do printf '  - { name: s-%d, type: traffic, min: 1, seed: %d }\n' "$i" "$i"; done
} > "$work/sources.yaml"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir "$work/state"
"$fetchrun" watch --config "$work/sources.yaml" --state-dir "$work/state" --listen "127.0.0.1:$port" > "$work/out" 2> "$work/err" &
watch=$!
extra_pids=$watch
for _ in $(seq 3000); do [ "$(grep -c baseline "$work/out" || true)" -ge "$sources" ] && break; sleep 0.1; done
sleep 2
memory() { awk -v key="$2" '$1 == key":" { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

echo "$sources sources, $("$fetchrun" --version)"
echo "before the first request: rss $(memory "$watch" VmRSS) MB, peak $(memory "$watch" VmHWM) MB"
for i in $(seq 1 "$requests"); do
  before=$(cpu "$watch")
  result=$(python3 - "$port" <<'PY'
import http.client, sys, time
connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
start = time.perf_counter()
connection.request("GET", "/status")
response = connection.getresponse()
body = response.read()
print(response.status, f"{time.perf_counter() - start:.3f}", len(body), body.count(b"\n"))
PY
)
  after=$(cpu "$watch")
  read -r status seconds bytes lines <<< "$result"
  echo "request $i: HTTP $status, $seconds s, $bytes bytes, $lines lines, watch CPU $(( (after - before) * 10 )) ms"
done
echo "after the last request: rss $(memory "$watch" VmRSS) MB, peak $(memory "$watch" VmHWM) MB"
/usr/bin/time -f "fetchrun status --format json beside it: %e s, %U s user, %S s system, peak %M KB" \
  "$fetchrun" status --config "$work/sources.yaml" --state-dir "$work/state" --format json > "$work/status.ndjson" 2> "$work/status.err" || true
tail -1 "$work/status.err"
echo "its output: $(wc -l < "$work/status.ndjson") lines"

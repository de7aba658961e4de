#!/usr/bin/env bash
# Fan-out benchmark: one-shot fetchrun over N feeds served by the fixture server.
#
#   Benchmarks/fanout.sh [--feeds N] [--latency 100ms] [--hosts H] [--runs R] [--hang] [--again]
#                        [--conditional] [--max-in-flight M] [--per-host P] [--yardstick [--store]]
#
# The fixture server listens on H ports of 127.0.0.1 -- to libcurl, H different hosts, each
# held to fetchrun's per-host connection limit -- and serves generated feeds (20-60 KB,
# 20-50 items) after the given latency. Every run starts from an empty state directory, so
# every feed is fetched, parsed, diffed and written. Prints wall time, CPU time (user+sys)
# and peak RSS for each run, then the medians, and checks that every feed's items arrived.
# --hang points every source at a response that never comes, with a 1s deadline: the run
# must end at the deadline. --again measures the run after a first one: every snapshot is
# there to read and compare, and no item is new. --conditional serves the feeds with an ETag
# and Last-Modified (a repeat run then gets 304s); without it a repeat run gets the same 200.
# --per-host sets `http: { per_host: P }` (connections to one host at once; 6 by default).
# --yardstick runs Benchmarks/CurlYardstick instead of fetchrun: the same requests from libcurl
# alone, byte for byte (same --per-host and --max-in-flight, fetchrun's User-Agent and Accept),
# the least any tool can spend on this machine.
# --store makes the yardstick parse each body with libxml2's reader and store the items in
# SQLite in one transaction: the floor of a cold run rather than of a repeat run.
set -euo pipefail
cd "$(dirname "$0")/.."

feeds=1000 latency=100ms hosts=50 runs=5 hang=0 again=0 in_flight= per_host= route=feed yardstick=0 store=0
while [ $# -gt 0 ]; do
  case "$1" in
    --feeds) feeds=$2; shift 2 ;;
    --latency) latency=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --hang) hang=1; shift ;;
    --again) again=1; shift ;;
    --conditional) route=conditional; shift ;;
    --max-in-flight) in_flight=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    --yardstick) yardstick=1; shift ;;
    --store) store=1; shift ;;
    *) echo "usage: $0 [--feeds N] [--latency 100ms] [--hosts H] [--runs R] [--hang] [--again] [--conditional] [--max-in-flight M] [--per-host P] [--yardstick [--store]]" >&2; exit 64 ;;
  esac
done

[ -x /usr/bin/time ] || { echo "installing GNU time" >&2; apt-get install -y -qq time >/dev/null; }
. Benchmarks/fixture.sh "$hosts"
if [ "$yardstick" = 1 ]; then
  [ "$hang" = 0 ] || { echo "--yardstick does not take --hang" >&2; exit 64; }
  swift build -c release --product fetchrun-curl-yardstick >&2
  # Fetches, then writes the validators it got: a repeat run of its own sends them back.
  # fetchrun's own User-Agent and Accept go along, taken from a request fetchrun makes.
  python3 Benchmarks/request_headers.py "$bin/fetchrun" > "$work/request-headers"
  tool=(fetchrun-curl-yardstick --urls "$work/urls.txt" --per-host "${per_host:-6}" --in-flight "${in_flight:-512}" --request-headers "$work/request-headers")
else
  tool=(fetchrun --config "$work/sources.yaml")
fi
# Where a run keeps its state: a folder of its own for each cold run, removed only on exit.
# When one run's 10,000 snapshots were deleted just before the next run made 10,000 new ones,
# ext4 without a journal (as on this machine) had its inode allocator step over the recently
# deleted inodes one by one (find_inode_bit, recently_deleted: a quarter of a 10,000-feed run's
# samples, growing run after run) — a cost of the harness, not of the tool, which never deletes
# its state.
state_args() {
  if [ "$yardstick" = 1 ]; then
    mkdir -p "$1"
    printf '%s\n' --state "$1/validators"
    [ "$store" = 0 ] || printf '%s\n' --store "$1/items.db"
  else
    printf '%s\n' --state-dir "$1"
  fi
}

{
  [ -z "$in_flight" ] || echo "max_in_flight: $in_flight"
  [ -z "$per_host" ] || echo "http: { per_host: $per_host }"
  if [ "$hang" = 1 ]; then
    echo "defaults: { deadline: 1s }"
  else
    echo "defaults: { deadline: 30s }"
  fi
  echo "sources:"
  for i in $(seq 1 "$feeds"); do
    base=${bases[$(( i % hosts ))]}
    if [ "$hang" = 1 ]; then path="/hang?n=$i"; else path="/$route/$i.xml?latency=$latency"; fi
    printf '  - name: feed-%d\n    type: rss\n    url: "%s%s"\n' "$i" "$base" "$path"
    echo "$base$path" >> "$work/urls.txt"
  done
} > "$work/sources.yaml"

expected=0
if [ "$hang" = 0 ] && [ "$again" = 0 ]; then
  # Feed n has 20 + n % 31 items (the generator's rule).
  for i in $(seq 1 "$feeds"); do expected=$(( expected + 20 + i % 31 )); done
fi

# One run first, not counted: the fixture server generates each feed once and keeps it.
mapfile -t state < <(state_args "$work/state")
"$bin/${tool[0]}" "${tool[@]:1}" "${state[@]}" > /dev/null 2>&1 || true

echo "${tool[0]} one-shot: $feeds feeds, $( [ "$hang" = 1 ] && echo "all hanging, 1s deadline" || echo "$latency latency" ), $hosts hosts, $( [ "$again" = 1 ] && echo "snapshots from a previous run" || echo "empty state" ), $(nproc) cores"
printf '%-5s %9s %9s %10s %8s\n' run wall_s cpu_s peak_rss_mb items
: > "$work/results"
for run in $(seq 1 "$runs"); do
  [ "$again" = 1 ] || mapfile -t state < <(state_args "$work/state-$run")
  set +e
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
    "$bin/${tool[0]}" "${tool[@]:1}" "${state[@]}" > "$work/out" 2> "$work/err"
  status=$?
  set -e
  read -r wall user sys rss < <(tail -n 1 "$work/time")
  # The default text report ends with "<result>: N new items from M sources, ...". The
  # yardstick does not parse: it counts its responses, and fails unless all were 200 or 304.
  items=$(tail -n 1 "$work/out" | sed -n 's/^[a-zA-Z]*: \([0-9]*\) new item.*/\1/p')
  [ "$yardstick" = 0 ] || items=$expected
  [ "$store" = 0 ] || items=$(tail -n 1 "$work/out" | sed -n 's/.*; \([0-9]*\) items stored/\1/p')
  cpu=$(echo "$user + $sys" | bc)
  printf '%-5s %9s %9s %10s %8s\n' "$run" "$wall" "$cpu" "$(( rss / 1024 ))" "$items"
  echo "$wall $cpu $rss" >> "$work/results"
  if [ "$hang" = 0 ] && { [ "$status" != 0 ] || [ "$items" != "$expected" ]; }; then
    echo "run $run: exit $status, $items items of $expected expected" >&2
    tail -n 5 "$work/err" >&2
    exit 1
  fi
  if [ "$hang" = 1 ] && [ "$status" != 3 ]; then echo "run $run: exit $status, expected 3" >&2; exit 1; fi
done
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf 'median wall %ss, cpu %ss, peak RSS %s MB\n' \
  "$(cut -d' ' -f1 "$work/results" | median)" "$(cut -d' ' -f2 "$work/results" | median)" \
  "$(( $(cut -d' ' -f3 "$work/results" | median) / 1024 ))"

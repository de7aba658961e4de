#!/usr/bin/env bash
# fetchrun against the C yardstick (Benchmarks/CurlYardstick) on the same feeds, as the
# performance targets compare them: a repeat run that gets 304s and one that gets the same 200
# body, each against the fetch-only yardstick, and a cold run against the `--store` yardstick
# (which also parses every body with libxml2's reader and stores the items in SQLite).
#
#   Benchmarks/yardstick-ratios.sh [--feeds N] [--hosts H] [--per-host P] [--runs R] [--only repeat|cold]
#
# Defaults: 1,000 feeds, 50 hosts, `per_host: 20`, 100 ms latency, 512 in flight (fetchrun's
# default `max_in_flight`; the yardstick is given the same), 21 runs of each command. The two
# commands alternate in one `farm-bench --vs` call (A fetchrun, B the yardstick), which takes
# the ratio pair by pair and prints min, median and max: the median A/B wall is the figure.
# Both repeat runs start from state their own first two runs made (fetchrun's state folder,
# the yardstick's validators file). Each cold run gets a new folder, none deleted until the
# script ends: on this machine's ext4, making thousands of files just after thousands were
# deleted costs several times more (see README). For the same reason, a second call within
# about five minutes of the first (which deleted its ~40,000 files on exit) gives a slower,
# noisier cold figure: wait, or pass --only repeat.
set -euo pipefail
cd "$(dirname "$0")/.."

feeds=1000 hosts=50 per_host=20 runs=21 only=
while [ $# -gt 0 ]; do
  case "$1" in
    --feeds) feeds=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 [--feeds N] [--hosts H] [--per-host P] [--runs R] [--only repeat|cold]" >&2; exit 64 ;;
  esac
done
command -v farm-bench > /dev/null || { echo "$0: needs farm-bench (alternating A/B timing) on PATH" >&2; exit 69; }

. Benchmarks/fixture.sh "$hosts"
swift build -c release --product fetchrun-curl-yardstick >&2
# The yardstick sends fetchrun's own User-Agent and Accept, taken from a request fetchrun makes:
# the same requests byte for byte.
python3 Benchmarks/request_headers.py "$bin/fetchrun" > "$work/request-headers"
yardstick=("$bin/fetchrun-curl-yardstick" --per-host "$per_host" --in-flight 512 --request-headers "$work/request-headers")
# A timed call may take R runs of each command and their warm-ups, a cold fetchrun run ~0.6 s.
timeout=$(( runs * 4 + 60 ))

# The feeds of one route (`feed`: the same 200 body every time; `conditional`: 304s once its
# validators are known): a config for fetchrun and a URL list for the yardstick.
write_sources() {
  local route=$1
  {
    echo "http: { per_host: $per_host }"
    echo "defaults: { deadline: 30s }"
    echo "sources:"
    for i in $(seq 0 $((feeds - 1))); do
      printf '  - name: feed-%d\n    type: rss\n    url: "%s/%s/%d.xml?latency=100ms"\n' "$i" "${bases[i % hosts]}" "$route" "$i"
    done
  } > "$work/sources-$route.yaml"
  for i in $(seq 0 $((feeds - 1))); do printf '%s/%s/%d.xml?latency=100ms\n' "${bases[i % hosts]}" "$route" "$i"; done > "$work/urls-$route.txt"
}

# Prints farm-bench's wall lines and the A/B ratio under a heading.
compare() {
  local heading=$1; shift
  echo "$heading"
  farm-bench -n "$runs" --timeout "$timeout" "$@" 2>&1 | grep -E '^(A wall s|B wall s|A cpu s|B cpu s|A/B wall) |exit [0-9]' | sed 's/^/  /'
}

if [ "$only" != cold ]; then
  for route in conditional feed; do
    write_sources "$route"
    # Two runs each first: the first fetches everything, the second finds it as the timed runs will.
    for _ in 1 2; do
      "$bin/fetchrun" --config "$work/sources-$route.yaml" --state-dir "$work/state-$route" > /dev/null
      "${yardstick[@]}" --urls "$work/urls-$route.txt" --state "$work/validators-$route" > /dev/null
    done
    [ "$route" = conditional ] && heading="repeat, 304s (A fetchrun, B the fetch-only yardstick):" || heading="repeat, the same 200 body (A fetchrun, B the fetch-only yardstick):"
    compare "$heading" \
      --vs "${yardstick[*]} --urls $work/urls-$route.txt --state $work/validators-$route" \
      -- "$bin/fetchrun" --config "$work/sources-$route.yaml" --state-dir "$work/state-$route"
  done
fi

if [ "$only" != repeat ]; then
  write_sources feed
  mkdir -p "$work/cold"
  compare "cold, a new folder per run (A fetchrun, B the --store yardstick):" \
    --vs "sh -c 'd=\$(TMPDIR=$work/cold mktemp -d); exec ${yardstick[*]} --urls $work/urls-feed.txt --state \$d/v --store \$d/items.db'" \
    -- sh -c "d=\$(TMPDIR=$work/cold mktemp -d); exec $bin/fetchrun --config $work/sources-feed.yaml --state-dir \$d"
fi

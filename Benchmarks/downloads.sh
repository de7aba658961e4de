#!/usr/bin/env bash
# Download throughput: fetchrun downloading 4 enclosures at once versus 4 curl processes
# fetching the same files at once, from the fixture server on loopback.
#
#   Benchmarks/downloads.sh [--size BYTES] [--runs R]
#
# The fixture server listens on 4 ports (4 hosts to libcurl, so fetchrun's default per-host
# limit of 2 does not hold it back) and serves each file from memory. Each round runs curl
# and fetchrun one after the other, alternating who goes first, each into an empty folder on
# the same file system. fetchrun's time is the whole `fetchrun run`: process start, fetching
# a local feed that lists the 4 enclosures, the downloads, and its fsync of every finished
# file. curl does not fsync, so a third row times curl followed by `sync` of its 4 files: the
# same durability. Prints each run, the medians, and fetchrun's share of curl's throughput
# both ways; checks every file's size.
set -euo pipefail
cd "$(dirname "$0")/.."

size=200000000 runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--size BYTES] [--runs R]" >&2; exit 64 ;;
  esac
done
for tool in curl bc; do command -v $tool > /dev/null || { echo "$tool is missing: make bench-downloads installs it" >&2; exit 69; }; done
. Benchmarks/fixture.sh 4

urls=()
for i in 1 2 3 4; do urls+=("${bases[$((i - 1))]}/enclosures/file$i.bin?size=$size"); done
# The server generates each file at its first request and keeps it: warm it outside the timing.
for url in "${urls[@]}"; do curl -s -o /dev/null "$url"; done

{
  echo '<?xml version="1.0"?><rss version="2.0"><channel><title>bench</title>'
  for i in 1 2 3 4; do
    echo "<item><title>file $i</title><guid>file$i</guid><enclosure url=\"${urls[$((i - 1))]//&/&amp;}\" type=\"application/octet-stream\"/></item>"
  done
  echo '</channel></rss>'
} > "$work/feed.xml"
printf 'sources:\n  - name: bench\n    type: rss\n    url: file:feed.xml\n    download:\n      dir: out\n      max_size: 1GiB\n' > "$work/sources.yaml"

check() { # every file there, every file whole
  local count=0
  for file in "$1"/*; do
    [ "$(stat -c %s "$file")" = "$size" ] || { echo "wrong size: $file" >&2; exit 1; }
    count=$((count + 1))
  done
  [ "$count" = 4 ] || { echo "$count files in $1, not 4" >&2; exit 1; }
}
now() { date +%s.%N; }
mbps() { echo "scale=1; 4 * $size / 1000000 / $1" | bc; }

# Prints two times: curl alone, and curl plus the fsync of its files.
run_curl() {
  rm -rf "$work/out"; mkdir "$work/out"; sync
  local start middle; start=$(now)
  for i in 1 2 3 4; do curl -s -o "$work/out/file$i.bin" "${urls[$((i - 1))]}" & done
  wait
  middle=$(now)
  sync "$work"/out/*
  local end; end=$(now)
  check "$work/out"
  echo "$(echo "$middle - $start" | bc) $(echo "$end - $start" | bc)"
}

run_fetchrun() {
  rm -rf "$work/out" "$work/state"; sync
  local start; start=$(now)
  "$bin/fetchrun" run --config "$work/sources.yaml" --state-dir "$work/state" > /dev/null
  local end; end=$(now)
  check "$work/out"
  echo "$end - $start" | bc
}

echo "4 parallel downloads of $((size / 1000000)) MB over loopback, $(nproc) cores, $(df -T "$work" | awk 'NR==2 {print $2}') at $work"
printf '%-5s %-12s %8s %8s\n' run tool wall_s MB_s
curl_times=() synced_times=() fetchrun_times=()
for r in $(seq 1 "$runs"); do
  if [ $((r % 2)) = 1 ]; then order="curl fetchrun"; else order="fetchrun curl"; fi
  for tool in $order; do
    if [ "$tool" = curl ]; then
      read -r t s < <(run_curl)
      printf '%-5s %-12s %8.2f %8s\n' "$r" curl "$t" "$(mbps "$t")"
      printf '%-5s %-12s %8.2f %8s\n' "$r" "curl + sync" "$s" "$(mbps "$s")"
      curl_times+=("$t") synced_times+=("$s")
    else
      t=$(run_fetchrun)
      printf '%-5s %-12s %8.2f %8s\n' "$r" fetchrun "$t" "$(mbps "$t")"
      fetchrun_times+=("$t")
    fi
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
c=$(median "${curl_times[@]}") s=$(median "${synced_times[@]}") f=$(median "${fetchrun_times[@]}")
echo "median: curl $c s ($(mbps "$c") MB/s), curl + sync $s s ($(mbps "$s") MB/s), fetchrun $f s ($(mbps "$f") MB/s)"
echo "fetchrun throughput = $(echo "scale=1; 100 * $c / $f" | bc)% of curl's, $(echo "scale=1; 100 * $s / $f" | bc)% of curl's with the same fsync (target: at least 90%)"

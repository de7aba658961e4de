#!/usr/bin/env bash
# Parser benchmark: fetchrun's FeedParser beside a bare libxml2 reader pass over the same bytes.
#
#   Benchmarks/parser.sh [--feeds N] [--rounds R] [--instructions] [--snapshots]
#
# --snapshots times snapshot reading instead: the corpus's items as snapshot files, read by
# fetchrun's JSONReader beside JSONDecoder (what it used before).
#
# Prints the median MB/s of each (rounds alternate between the two) and their ratio. With
# --instructions it also counts instructions under callgrind, which a busy shared machine
# does not disturb (valgrind comes from Debian's package of that name).
set -euo pipefail
cd "$(dirname "$0")/.."

feeds=200 rounds=9 instructions=0 snapshots=
while [ $# -gt 0 ]; do
  case "$1" in
    --feeds) feeds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --instructions) instructions=1; shift ;;
    --snapshots) snapshots=--snapshots; shift ;;
    *) echo "usage: $0 [--feeds N] [--rounds R] [--instructions] [--snapshots]" >&2; exit 64 ;;
  esac
done

make -s deps
swift build -c release --product fetchrun-parser-benchmark >&2
benchmark="$(swift build -c release --show-bin-path)/fetchrun-parser-benchmark"
"$benchmark" --feeds "$feeds" --rounds "$rounds" --extra feeds/reuters-technology.xml $snapshots
[ -z "$snapshots" ] || exit 0

if [ "$instructions" = 1 ]; then
  command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null
  count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect="$1" \
      "$benchmark" --feeds 20 --rounds 1 2>&1 | awk '/refs:/ { gsub(",", "", $NF); print $NF }'
  }
  raw=$(count '$s25fetchrun_parser_benchmark13rawReaderPassSiyF')
  ours=$(count '$s11FetchRunKit10FeedParserV5parse_7charset12cancellationAA0D0V20FoundationEssentials4DataV_SSSgAA16CancellationFlagCSgtKF')
  echo "instructions over 40 documents, 2 passes: libxml2 reader pass $raw, FeedParser $ours"
  echo "ratio (reader instructions / FeedParser instructions): $(echo "scale=1; 100 * $raw / $ours" | bc) %"
fi

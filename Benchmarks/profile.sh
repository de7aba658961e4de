#!/usr/bin/env bash
# Where a fetchrun run's CPU goes: perf's samples of one one-shot run over N generated feeds
# (50 hosts, 100 ms latency), folded into the parts a tool's work splits into.
#
#   Benchmarks/profile.sh [--feeds N] [--again] [--conditional] [--per-host P] [--frequency HZ]
#
# Every sample is counted where it was taken (self time, no call graph): in libcurl and the
# TLS and compression libraries; libxml2; SQLite; the kernel; Swift's allocation and reference
# counting (malloc, free, swift_retain, swift_release…); the concurrency runtime and task
# switches; and in fetchrun's own code by what it does (parsing, merging, JSON and snapshot
# encoding, the state store, HTTP). --again profiles the run after a first one (every snapshot
# read and compared); --conditional serves feeds with validators, so that run gets 304s.
# Needs perf (Debian's linux-perf); prints a table of shares of the samples.
set -euo pipefail
cd "$(dirname "$0")/.."

feeds=1000 again=0 route=feed per_host=20 frequency=2999
while [ $# -gt 0 ]; do
  case "$1" in
    --feeds) feeds=$2; shift 2 ;;
    --again) again=1; shift ;;
    --conditional) route=conditional; shift ;;
    --per-host) per_host=$2; shift 2 ;;
    --frequency) frequency=$2; shift 2 ;;
    *) echo "usage: $0 [--feeds N] [--again] [--conditional] [--per-host P] [--frequency HZ]" >&2; exit 64 ;;
  esac
done
command -v perf >/dev/null || { echo "installing perf" >&2; apt-get install -y -qq linux-perf >/dev/null; }

. Benchmarks/fixture.sh 50
{
  echo "http: { per_host: $per_host }"
  echo "sources:"
  for i in $(seq 1 "$feeds"); do
    printf '  - name: feed-%d\n    type: rss\n    url: "%s/%s/%d.xml?latency=100ms"\n' "$i" "${bases[$(( i % 50 ))]}" "$route" "$i"
  done
} > "$work/sources.yaml"
run=("$bin/fetchrun" --config "$work/sources.yaml" --state-dir "$work/state")
# A first run, not profiled: the fixture server generates each feed once, and --again needs its state.
"${run[@]}" > /dev/null 2>&1 || true
[ "$again" = 1 ] || rm -rf "$work/state"
perf record -F "$frequency" -o "$work/perf.data" -- "${run[@]}" > /dev/null 2> "$work/perf.err" || { tail -n 5 "$work/perf.err" >&2; exit 1; }
perf report -i "$work/perf.data" --no-children --sort dso,sym --stdio -q --percent-limit 0 2> /dev/null > "$work/report.txt"

python3 - "$work/report.txt" "$feeds" "$again" "$route" <<'PYTHON'
import re, sys
report, feeds, again, route = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
# Which part a sample belongs to: by the library it was in, then by the symbol's name.
libraries = [
    (r"libcurl|libssl|libcrypto|libz\.|libnghttp|libbrotli|libzstd|libpsl|libidn|libssh", "libcurl (HTTP, TLS, decompression)"),
    (r"libxml2", "libxml2 (parsing)"),
    (r"libsqlite3", "SQLite"),
    (r"kernel", "kernel (system calls, network, files)"),
    (r"libswift_Concurrency|libdispatch", "concurrency runtime (tasks, executors)"),
]
allocation = r"swift_retain|swift_release|swift_allocObject|swift_deallocObject|swift_bridgeObject|swift_unknownObject|swift_beginAccess|swift_endAccess|malloc|free|_int_|calloc|realloc|memcpy|memmove|memset|swift_arrayInit|swift_arrayDestroy|swift_isUniquely"
synchronisation = r"pthread|futex|__lll_|os_unfair|Mutex|swift_task|swift_job|swift_continuation"
own = [
    (r"FeedParser|FeedWalker|ItemDraft|DateParser|HTMLEntities|DeclaredEntities|JSONFeedReader", "fetchrun: feed parsing (Swift side)"),
    (r"JSONWriter|JSONReader|Snapshot|SnapshotCoding|SeenItems|Base64|jsonData", "fetchrun: snapshot and JSON encoding"),
    (r"ItemMerge|FetchedItems|merge|ItemIdentity|ItemLimits|ItemFilter", "fetchrun: merging and item rules"),
    (r"SQLite|StateStore|StateSchema|GroupCommit|SourceState|FetchCommit|Outbox", "fetchrun: state store (Swift side)"),
    (r"Curl|HTTP|HostScheduler|SourceFetcher|CacheControl", "fetchrun: HTTP (Swift side)"),
    (r"Report|JSONEvents|TerminalText|Console", "fetchrun: report"),
]
shares = {}
for line in open(report, encoding="utf-8", errors="replace"):
    match = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[[.kHgu]\]\s+(.*)", line)
    if not match:
        continue
    percent, dso, symbol = float(match.group(1)), match.group(2), match.group(3)
    part = next((name for pattern, name in libraries if re.search(pattern, dso)), None)
    if part is None and re.search(allocation, symbol):
        part = "allocation and reference counting"
    if part is None and re.search(synchronisation, symbol):
        part = "concurrency runtime (tasks, executors)"
    if part is None and "fetchrun" in dso:
        part = next((name for pattern, name in own if re.search(pattern, symbol)), "fetchrun: other")
    if part is None:
        part = "other libraries (" + dso + ")" if dso not in ("libc.so.6", "libswiftCore.so", "libFoundation.so", "libFoundationEssentials.so") else {"libc.so.6": "libc (other)", "libswiftCore.so": "Swift standard library (other)"}.get(dso, "Foundation")
    shares[part] = shares.get(part, 0) + percent
what = f"{feeds:,} feeds, " + ("repeat run, " + ("304s" if route == "conditional" else "same 200 bodies") if again else "cold")
print(f"CPU samples of one run ({what}), self time, by part:")
print(f"| part | share |")
print("|---|---|")
for part, share in sorted(shares.items(), key=lambda entry: -entry[1]):
    if share >= 0.5:
        print(f"| {part} | {share:.1f} % |")
rest = sum(share for share in shares.values() if share < 0.5)
print(f"| (parts under 0.5 % each) | {rest:.1f} % |")
PYTHON

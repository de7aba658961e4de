#!/usr/bin/env bash
# The release binary with the toolchain's ICU data against the one with the trimmed data
# (`make release-icu`, what `make install` and `make deb` link): their sizes stripped, then
# start-up (`fetchrun --version`) and a cold one-shot run over N generated feeds, the two
# binaries alternating run by run.
#
#   Benchmarks/icu-variants.sh [--feeds N] [--runs R] [--latency 100ms] [--hosts H]
#
# Each cold run gets a new state folder, removed after it outside the timing. Prints each
# binary's median wall time, CPU time (user+sys) and peak RSS (GNU time), and the median of the
# pairs' ratios trimmed / toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

feeds=1000 runs=11 latency=100ms hosts=50
while [ $# -gt 0 ]; do
  case "$1" in
    --feeds) feeds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --latency) latency=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    *) echo "usage: $0 [--feeds N] [--runs R] [--latency 100ms] [--hosts H]" >&2; exit 64 ;;
  esac
done
[ -x /usr/bin/time ] || { echo "installing GNU time" >&2; apt-get install -y -qq time >/dev/null; }

make -s release-icu
variants=.build/icu-variants
mkdir -p "$variants/toolchain" "$variants/trimmed"
env -u FETCHRUN_ICU_LIBRARY swift build -c release --product fetchrun >&2
strip -o "$variants/toolchain/fetchrun" "$(swift build -c release --show-bin-path)/fetchrun"
FETCHRUN_ICU_LIBRARY=$PWD/.build/icu/lib_FoundationICU.a swift build -c release --product fetchrun >&2
strip -o "$variants/trimmed/fetchrun" "$(swift build -c release --show-bin-path)/fetchrun"
swift build -c release --product fetchrun-fixture-server >&2
prebuilt=$(swift build -c release --show-bin-path)
. Benchmarks/fixture.sh "$hosts"

{
  echo "defaults: { deadline: 30s }"
  echo "sources:"
  for i in $(seq 1 "$feeds"); do
    printf '  - name: feed-%d\n    type: rss\n    url: "%s/feed/%d.xml?latency=%s"\n' "$i" "${bases[$(( i % hosts ))]}" "$i" "$latency"
  done
} > "$work/sources.yaml"

# One measured command: "wall user sys peak_kb" on a line of its own in $work/times.
measure() { # VARIANT KIND
  local binary=$variants/$1/fetchrun
  if [ "$2" = start ]; then
    # 20 starts in one measure: GNU time counts hundredths of a second.
    /usr/bin/time -f "$1 $2 %e %U %S %M" -a -o "$work/times" sh -c 'for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do "$0" --version; done' "$binary" > /dev/null
  else
    local state; state=$(mktemp -d "$work/state.XXXXXX")
    /usr/bin/time -f "$1 $2 %e %U %S %M" -a -o "$work/times" "$binary" --config "$work/sources.yaml" --state-dir "$state" > /dev/null 2>&1 || {
      echo "a $1 cold run failed" >&2; exit 1; }
    rm -rf "$state"
  fi
}

# The fixture server generates each feed once: one run first, not counted.
measure trimmed cold && : > "$work/times"
for _ in $(seq 1 "$runs"); do
  measure toolchain start; measure trimmed start
  measure toolchain cold; measure trimmed cold
done

echo "stripped size: toolchain ICU $(stat -c %s "$variants/toolchain/fetchrun") bytes, trimmed $(stat -c %s "$variants/trimmed/fetchrun") bytes"
echo "$feeds feeds, $latency latency, $hosts hosts, $runs pairs of cold runs and of 20 starts, $(nproc) cores"
python3 - "$work/times" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1]) if len(line.split()) == 6]
def series(variant, kind):
    per = 20 if kind == "start" else 1
    return [(float(w) / per, (float(u) + float(s)) / per, int(k) / 1024) for v, t, w, u, s, k in rows if v == variant and t == kind]
for kind, label in [("start", "one start"), ("cold", "cold run")]:
    a, b = series("trimmed", kind), series("toolchain", kind)
    for name, values in [("trimmed  ", a), ("toolchain", b)]:
        print(f"{label:18} {name}  wall {statistics.median(v[0] for v in values):.3f} s  cpu {statistics.median(v[1] for v in values):.3f} s  peak {statistics.median(v[2] for v in values):.1f} MiB")
    ratios = [x[0] / y[0] for x, y in zip(a, b) if y[0] > 0]
    cpu = [x[1] / y[1] for x, y in zip(a, b) if y[1] > 0]
    print(f"{label:18} trimmed / toolchain, median of pairs: wall {statistics.median(ratios):.3f}, cpu {statistics.median(cpu):.3f}")
EOF

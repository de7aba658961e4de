#!/usr/bin/env bash
# Dead-host benchmark: 100 sources on a host that accepts connections and never answers, at a
# 1 s deadline and the default 6 connections per host, beside 10 healthy feeds on another
# host. Prints the run's wall time, how many of the 100 waited out their deadline and how many
# were skipped as unreachable (the per-host breaker), and the healthy feeds' slowest time.
# Release build, R runs. `--bin DIR` times another build's fetchrun (an earlier commit's).
#
#   Benchmarks/dead-host.sh [--runs R] [--bin DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
other_bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --bin) other_bin=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 64 ;;
  esac
done
. Benchmarks/fixture.sh 2
fetchrun="${other_bin:-$bin}/fetchrun"

{
  echo "state_dir: $work/state"
  echo "sources:"
  for i in $(seq 0 99); do
    echo "  - { name: dead-$i, type: rss, deadline: 1s, url: \"${bases[0]}/hang?n=$i\" }"
  done
  for i in $(seq 0 9); do
    echo "  - { name: healthy-$i, type: rss, url: \"${bases[1]}/feed/$i.xml?latency=100ms\" }"
  done
} > "$work/dead.yaml"

printf '%4s %8s %10s %12s %18s\n' run wall_s waited unreachable healthy_slowest_ms
for run in $(seq "$runs"); do
  rm -rf "$work/state"
  start=$(date +%s.%N)
  "$fetchrun" -c "$work/dead.yaml" --format json > "$work/out.json" || true
  end=$(date +%s.%N)
  python3 - "$work/out.json" "$run" "$start" "$end" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
sources = [e for e in events if e.get("event") == "source"]
dead = [e for e in sources if e["source"].startswith("dead")]
healthy = [e["duration_ms"] for e in sources if e["source"].startswith("healthy")]
kinds = [e.get("failure", {}).get("kind") for e in dead]
assert len(dead) == 100 and len(healthy) == 10, (len(dead), len(healthy))
print(f"{sys.argv[2]:>4} {float(sys.argv[4]) - float(sys.argv[3]):>8.2f} {kinds.count('deadlineExceeded'):>10} {kinds.count('unreachable'):>12} {max(healthy):>18.0f}")
PY
done

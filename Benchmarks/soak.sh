#!/usr/bin/env bash
# A long watch, for what only time shows: memory, descriptors, threads or the state folder that
# keep growing while a watch runs for days.
#
#   Benchmarks/soak.sh [--sources N] [--minutes M] [--sample S]   (600 sources, 30 min, every 30 s)
#
# The sources are a mix that keeps every path busy: half are feeds with a new item every 10 s
# (`/rolling/`, so each fetch merges, writes a snapshot and queues a delivery), the rest feeds
# answered with 304, sources failing with HTTP 500, hanging past a 2 s deadline, or reset by
# the server (each back after at most 20 s), and synthetic `traffic` sources. New items go to
# a webhook in batches, failures to another; the watch listens and is scraped every 5 s.
#
# Two things grow by design and show in the figures: the outbox keeps sent deliveries for 30
# days (the state folder grows with them), and each source remembers the ids that left its
# feed, up to 10,000 (a rolling feed adds one per fetch, so its snapshot grows for ~28 hours).
#
# Every S seconds the script prints the watch's resident memory, descriptors, threads and state
# folder, and the fetches, new items and deliveries its /metrics counted. At the end it fits a
# line through the samples taken after the first quarter (the warm-up: heaps, connections and
# snapshots reach their working size) and prints each figure's growth per hour along it.
set -euo pipefail
cd "$(dirname "$0")/.."

sources=600 minutes=30 sample=30
while [ $# -gt 0 ]; do
  case "$1" in
    --sources) sources=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --sample) sample=$2; shift 2 ;;
    *) echo "usage: $0 [--sources N] [--minutes M] [--sample S]" >&2; exit 64 ;;
  esac
done

. Benchmarks/fixture.sh 10
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
{
  echo "outputs:"
  echo "  - { name: hook, type: webhook, url: \"${bases[0]}/hook\", batch: 20 }"
  echo "  - { name: alerts, type: webhook, url: \"${bases[1]}/alerts\", events: [failures] }"
  # keep: 40, so that a rolling feed's snapshot is full (one new item a fetch) within the
  # first quarter: with the default 200 it grows for 33 minutes, and its CPU with it.
  echo "defaults: { interval: 10s, max_backoff: 20s, deadline: 5s, keep: 40 }"
  echo "sources:"
  for i in $(seq 1 "$sources"); do
    # Each host serves blocks of 20 sources, so every host has all kinds: one with only the
    # hanging sources would be skipped whole by the per-host breaker, as it should be.
    base=${bases[$(((i / 20) % ${#bases[@]}))]}
    case $((i % 20)) in
      0|1|2|3|4|5|6|7|8|9) printf '  - { name: rolling-%d, type: rss, url: "%s/rolling/%d.xml?every=10s", outputs: [hook] }\n' "$i" "$base" "$i" ;;
      10|11|12) printf '  - { name: same-%d, type: rss, url: "%s/conditional/%d.xml", outputs: [hook] }\n' "$i" "$base" "$i" ;;
      13) printf '  - { name: failing-%d, type: rss, url: "%s/status/500", outputs: [alerts] }\n' "$i" "$base" ;;
      14) printf '  - { name: hanging-%d, type: rss, url: "%s/hang", deadline: 2s, outputs: [alerts] }\n' "$i" "$base" ;;
      15) printf '  - { name: reset-%d, type: rss, url: "%s/reset", outputs: [alerts] }\n' "$i" "$base" ;;
      *) printf '  - { name: traffic-%d, type: traffic, seed: %d, outputs: [hook] }\n' "$i" "$i" ;;
    esac
  done
} > "$work/sources.yaml"

"$bin/fetchrun" watch --config "$work/sources.yaml" --state-dir "$work/state" --listen "127.0.0.1:$port" > /dev/null 2> "$work/err" &
watch=$!
extra_pids=$watch

python3 - "$watch" "$port" "$work/state" "$minutes" "$sample" "$sources" <<'PY'
import http.client, os, sys, time

pid, port, state, minutes, every, sources = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])

def status():
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.split()
    return int(fields["VmRSS"][0]) / 1024, int(fields["VmHWM"][0]) / 1024, int(fields["Threads"][0])

def folder_size(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                pass
    return total / 1024 / 1024

def cpu_seconds():
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def scrape(connection):
    connection.request("GET", "/metrics")
    totals = {"fetches": 0.0, "failed": 0.0, "new": 0.0, "delivered": 0.0, "pending": 0.0}
    for line in connection.getresponse().read().decode().splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name, value = line.rsplit(" ", 1)
        value = float(value)
        if name.startswith("fetchrun_fetches_total{"):
            totals["fetches"] += value
            if 'outcome="failed"' in name:
                totals["failed"] += value
        elif name.startswith("fetchrun_new_items_total{"):
            totals["new"] += value
        elif name.startswith("fetchrun_deliveries_total{") and 'outcome="delivered"' in name:
            totals["delivered"] += value
        elif name.startswith("fetchrun_outbox_pending{"):
            totals["pending"] += value
    return totals

connection = None
for _ in range(300):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        scrape(connection)
        break
    except OSError:
        connection = None
        time.sleep(0.1)
if connection is None:
    sys.exit("the watch never answered on /metrics")

start = time.time()
end = start + minutes * 60
samples = []
print(f"{sources} sources, {minutes:g} min, a sample every {every:g} s")
print(f"{'min':>6} {'rss_mb':>7} {'hwm_mb':>7} {'fds':>5} {'threads':>7} {'state_mb':>8} {'cpu_s':>7} {'fetches':>8} {'failed':>7} {'new':>7} {'sent':>7} {'pending':>7}")
next_sample = start
while True:
    now = time.time()
    totals = scrape(connection)
    if now >= next_sample:
        rss, hwm, threads = status()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        row = {"t": (now - start) / 60, "rss": rss, "hwm": hwm, "fds": fds, "threads": threads,
               "state": folder_size(state), "cpu": cpu_seconds(), **totals}
        samples.append(row)
        print(f"{row['t']:6.1f} {rss:7.1f} {hwm:7.1f} {fds:5d} {threads:7d} {row['state']:8.1f} {row['cpu']:7.1f} "
              f"{int(totals['fetches']):8d} {int(totals['failed']):7d} {int(totals['new']):7d} {int(totals['delivered']):7d} {int(totals['pending']):7d}", flush=True)
        next_sample += every
        if now >= end:
            break
    time.sleep(5)

def slope(key, rows):
    n = len(rows)
    mean_t = sum(r["t"] for r in rows) / n
    mean_v = sum(r[key] for r in rows) / n
    variance = sum((r["t"] - mean_t) ** 2 for r in rows)
    return 60 * sum((r["t"] - mean_t) * (r[key] - mean_v) for r in rows) / variance if variance else 0.0

settled = [r for r in samples if r["t"] >= minutes / 4]
if len(settled) >= 3:
    first, last = settled[0], settled[-1]
    print(f"after the first quarter ({first['t']:.1f} to {last['t']:.1f} min), a line through {len(settled)} samples:")
    for key, label, unit in [("rss", "resident memory", "MB"), ("fds", "open descriptors", ""), ("threads", "threads", ""), ("state", "state folder", "MB")]:
        print(f"  {label:17} {first[key]:8.1f} -> {last[key]:8.1f} {unit:2}  slope {slope(key, settled):+8.2f} {unit}/h")
    hours = (last["t"] - first["t"]) / 60
    print(f"  CPU {(last['cpu'] - first['cpu']) / (hours * 3600) * 100:.1f} % of a core; "
          f"{(last['fetches'] - first['fetches']) / (hours * 3600):.1f} fetches/s, {(last['new'] - first['new']) / (hours * 3600):.1f} new items/s, "
          f"{(last['delivered'] - first['delivered']) / (hours * 3600):.1f} deliveries/s")
PY
kill -TERM "$watch"
wait "$watch" || true
echo "the watch's stderr: $(wc -l < "$work/err") lines; by message:"
sed -E 's/^[^ ]+ [a-z]+ fetchrun: //; s/source=[^ ]+ //; s/[0-9]+/N/g' "$work/err" | sort | uniq -c | sort -rn | head -8

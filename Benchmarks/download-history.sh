#!/usr/bin/env bash
# One new episode after H past downloads in the same folder: what queuing a download costs as
# the queue's history grows (it keeps a row for every URL it ever downloaded, so that none is
# downloaded twice). For each H, a state folder that downloaded one enclosure gets H more rows
# in that folder (copies of the real row with other URLs and names, written with Python's
# sqlite3): removed by `keep`, or with --failed, failed for good (HTTP 404, as a podcast's dead
# back catalogue leaves them). Then a `fetchrun run` fetches a feed with one new item and
# downloads it. Prints the run's wall time, CPU and peak RSS; the new entry must end done.
#
#   Benchmarks/download-history.sh [--failed] [H…]   (0 10000 50000 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
history=removed
if [ "${1:-}" = --failed ]; then history=failed; shift; fi
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(0 10000 50000 200000)
. Benchmarks/fixture.sh 1

feed() {  # feed ID: a feed whose one item has an enclosure named after ID
  printf '<rss version="2.0"><channel><title>p</title><item><guid>%s</guid><title>%s</title><enclosure url="%s/enclosures/%s.mp3?size=100" type="audio/mpeg" length="100"/></item></channel></rss>' \
    "$1" "$1" "${bases[0]}" "$1" > "$work/feed.xml"
}
printf 'sources:\n  - { name: pod, type: rss, url: "file:%s/feed.xml", download: { dir: %s/media } }\n' "$work" "$work" > "$work/sources.yaml"
run() { "$bin/fetchrun" run --config "$work/sources.yaml" --state-dir "$work/state" > /dev/null 2> "$work/stderr" || { cat "$work/stderr" >&2; exit 1; }; }

printf '%-7s %8s %8s %8s\n' H wall_s cpu_s peak_mb
for h in "${counts[@]}"; do
  rm -rf "$work/state" "$work/media"
  feed first && run
  python3 - "$work/state/state.db" "$h" "$history" <<'PY'
import json, sqlite3, sys
path, count, state = sys.argv[1], int(sys.argv[2]), sys.argv[3]
failure = {"failure": "HTTP 404", "retryable": False} if state == "failed" else {}
db = sqlite3.connect(path)
(entry, position), = db.execute("SELECT entry, position FROM downloads")
template = json.loads(entry)
folder = template["directory"]
def row(i):
    e = dict(template, url=template["url"].replace("first", f"past{i}"), part_name=f"past{i}.mp3",
             suggested_name=None, file=None if failure else f"{folder}/past{i}.mp3", state=state, **failure)
    # The columns a row has beside its entry, as far as this schema knows them.
    values = dict(url=e["url"], position=position + 1 + i, state=state, entry=json.dumps(e), source=e["source"],
                  directory=folder, file=e["file"], part_name=e["part_name"], suggested_name=None, file_name=e["file"] and e["part_name"],
                  retryable=0, attempts=e["attempts"])
    return [values[name] for name in names]
names = [row[1] for row in db.execute("PRAGMA table_info(downloads)")]
with db:
    db.executemany(f"INSERT INTO downloads ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                   (row(i) for i in range(count)))
PY
  feed second
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$bin/fetchrun" run --config "$work/sources.yaml" --state-dir "$work/state" > /dev/null 2> "$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
  read -r wall user system peak_kb < <(tail -1 "$work/time")
  [ -f "$work/media/second.mp3" ] || { echo "the new episode was not downloaded" >&2; exit 1; }
  printf '%-7s %8.2f %8.2f %8d\n' "$h" "$wall" "$(echo "$user + $system" | bc)" $((peak_kb / 1024))
done

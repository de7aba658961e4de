#!/usr/bin/env bash
# Leases per second that one local PostgreSQL serves to 4 `fetchrun worker`s over 100,000
# synthetic sources that are always due (interval 1s, no items: the fetch itself costs nothing,
# so what is measured is leasing and completing). Each fetch is two updates of its row (the
# lease, the completion); the rate is half the growth of PostgreSQL's own update counter for
# the sources table over the measured window.
#
#   Benchmarks/leases.sh [--sources N] [--workers W] [--seconds S] [--batch B]
set -euo pipefail
cd "$(dirname "$0")/.."
sources=100000 workers=4 seconds=30 batch=200
while [ $# -gt 0 ]; do
  case $1 in
    --sources) sources=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    *) echo "usage: $0 [--sources N] [--workers W] [--seconds S] [--batch B]" >&2; exit 64 ;;
  esac
done
make -s deps
swift build -c release --product fetchrun >&2
bin=$(swift build -c release --show-bin-path)
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)

work=$(mktemp -d /tmp/fetchrun-leases-XXXXXX)
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$work"
pids=""
cleanup() {
  # The workers first, then the server: a worker stops by giving its leases back.
  [ -z "$pids" ] || { kill $pids 2>/dev/null || true; wait $pids 2>/dev/null || true; }
  as_postgres "$pgbin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_postgres "$pgbin/initdb" -D "$work/data" -A trust -U fetchrun --no-sync >/dev/null
as_postgres "$pgbin/pg_ctl" -D "$work/data" -l "$work/log" -w \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
url="postgres://fetchrun@127.0.0.1:$port/postgres?sslmode=disable"
psql() { command psql -h 127.0.0.1 -p "$port" -U fetchrun -d postgres -tAc "$1"; }

{
  echo "state: \"$url\""
  echo "defaults: { interval: 1s, max_interval: 1s }"
  echo "sources:"
  for i in $(seq 1 "$sources"); do echo "  - { name: s$i, type: traffic, min: 0, max: 0 }"; done
} > "$work/sources.yaml"

for _ in $(seq 1 "$workers"); do
  "$bin/fetchrun" worker --config "$work/sources.yaml" --batch "$batch" --lease 30s > /dev/null 2> "$work/worker.err" &
  pids="$pids $!"
done
# Until every worker has synced the sources and is leasing.
for _ in $(seq 1 120); do
  [ "$(psql "SELECT count(*) FROM fetchrun_workers" 2>/dev/null || echo 0)" = "$workers" ] && break
  sleep 1
done
sleep 10
before=$(psql "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'fetchrun_sources'")
sleep "$seconds"
after=$(psql "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'fetchrun_sources'")
rate=$(( (after - before) / 2 / seconds ))
echo "leases: $sources sources, $workers workers, batch $batch, $(nproc) cores, PostgreSQL $(psql 'SHOW server_version')"
echo "measured over ${seconds}s: $rate leases/s (each a lease and a completion: $(( (after - before) / seconds )) row updates/s)"
echo "1,000,000 sources every 15 minutes need 1,111 leases/s: $(( rate * 100 / 1111 ))% of that from this machine"

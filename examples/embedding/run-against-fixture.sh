#!/usr/bin/env bash
# Runs the embedding example against a fixture server on 127.0.0.1 and exits as it does.
#   run-against-fixture.sh FIXTURE_SERVER_BINARY EXAMPLE_BINARY
set -euo pipefail
server="$1"
example="$2"
work=$(mktemp -d)
cleanup() { exec 3>&- || true; wait || true; rm -rf "$work"; }
trap cleanup EXIT
mkfifo "$work/stdin"
# The fixture server serves until its stdin closes: descriptor 3, closed on exit.
"$server" < "$work/stdin" > "$work/urls" &
exec 3> "$work/stdin"
for _ in $(seq 200); do [ -s "$work/urls" ] && break; sleep 0.05; done
base=$(head -n 1 "$work/urls")
[ -n "$base" ] || { echo "the fixture server printed no URL" >&2; exit 1; }
timeout 120 "$example" "${base%/}/conditional/1.xml" "$work/state"

# Sourced by the benchmark scripts: builds fetchrun and the fixture server in release mode (or
# takes them from $prebuilt) and starts the server on $1 hosts (ports). Sets: bin (the binaries' folder), work (a scratch
# folder, removed on exit), bases (one base URL per host). The server, and any pid in
# $extra_pids, is stopped on exit.
work=$(mktemp -d)
server="" extra_pids=""
trap 'exec 3>&-; kill $server $extra_pids 2>/dev/null || true; rm -rf "$work"' EXIT
# SwiftPM, and whatever else the script runs, keep their temporary files in here, so that
# they go with $work instead of staying in /tmp.
mkdir "$work/tmp"
export TMPDIR=$work/tmp
if [ -n "${prebuilt:-}" ]; then
  # Binaries built elsewhere (another commit's tree): fetchrun and the fixture server from there.
  bin=$prebuilt
else
  make -s deps
  swift build -c release --product fetchrun >&2
  swift build -c release --product fetchrun-fixture-server >&2
  bin=$(swift build -c release --show-bin-path)
fi

mkfifo "$work/stdin"
"$bin/fetchrun-fixture-server" --hosts "$1" < "$work/stdin" > "$work/urls" &
server=$!
exec 3> "$work/stdin"   # the server runs until this closes
for _ in $(seq 50); do [ "$(wc -l < "$work/urls")" -ge "$1" ] && break; sleep 0.1; done
mapfile -t bases < "$work/urls"

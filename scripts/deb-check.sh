#!/usr/bin/env bash
# deb-check.sh PACKAGE.deb: what `make deb-check` (and CI) asks of the Debian package.
#
# lintian reports no error; `dpkg -i` installs it (and its -dbgsym beside it) on this machine;
# the installed fetchrun prints its version, validates the example config, and runs a config
# that reads what the trimmed ICU data must still hold (time zones, regular expressions,
# non-Latin text); systemd-analyze accepts the installed units; nothing is enabled or started;
# `dpkg --purge` then leaves nothing of the package but the system user, which Debian's policy
# keeps. Needs root. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

deb=$1
dbgsym=${deb/fetchrun_/fetchrun-dbgsym_}
[ "$(id -u)" = 0 ] || { echo "deb-check.sh: dpkg -i needs root" >&2; exit 2; }
passed=0 failed=0
check() { # NAME COMMAND...: runs COMMAND, counts it
  local name=$1; shift
  if output=$("$@" 2>&1); then
    passed=$((passed + 1)); echo "ok: $name"
  else
    failed=$((failed + 1)); echo "FAILED: $name"; printf '%s\n' "$output" | sed 's/^/    /' | head -40
  fi
}
scratch=$(mktemp -d)
chmod 755 "$scratch"
cleanup() {
  dpkg --purge fetchrun-dbgsym fetchrun >/dev/null 2>&1 || true
  # The user the package made (and purge keeps): not the package's to remove, but this test's.
  if [ -n "${made_user:-}" ]; then userdel fetchrun >/dev/null 2>&1 || true; groupdel fetchrun >/dev/null 2>&1 || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# What is on the machine where a package puts things, before: compared after the purge.
survey() {
  find /usr /etc /var/lib /opt -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/lib/systemd/catalog \
    -o -path /var/lib/ucf -o -path /opt/swift \) -prune -o -print 2>/dev/null | LC_ALL=C sort
}
dpkg --purge fetchrun-dbgsym fetchrun >/dev/null 2>&1 || true
getent passwd fetchrun >/dev/null || made_user=1
survey > "$scratch/before"

lintian_said=$(lintian --fail-on error "$deb" "$dbgsym" 2>&1); lintian_status=$?
printf '%s\n' "$lintian_said" | grep -v '^N:' | grep -v 'running with root privileges' | sed 's/^/lintian: /'
check "lintian reports no error" test "$lintian_status" = 0

check "dpkg -i installs the package and its debug symbols" dpkg -i "$deb" "$dbgsym"
version=$(tr -d ' \t\r\n' < VERSION)
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
check "the installed fetchrun --version prints the version and the commit" \
  sh -c 'test "$(/usr/bin/fetchrun --version)" = "$1 (commit $2)"' - "$version" "$commit"
check "the installed binary is within 60 MB" sh -c 'test "$(stat -c %s /usr/bin/fetchrun)" -le 60000000'
check "the installed binary is stripped, its debug symbols in fetchrun-dbgsym by build id" sh -c '
  ! readelf -S /usr/bin/fetchrun | grep -q "\.debug_info" &&
  id=$(readelf -n /usr/bin/fetchrun | sed -n "s/.*Build ID: \([0-9a-f]*\).*/\1/p") &&
  f=/usr/lib/debug/.build-id/$(printf %s "$id" | cut -c1-2)/$(printf %s "$id" | cut -c3-).debug &&
  readelf -S "$f" | grep -q "\.debug_info"'
check "fetchrun validate -c /etc/fetchrun/sources.yaml" /usr/bin/fetchrun validate -c /etc/fetchrun/sources.yaml
check "/etc/fetchrun/sources.yaml is a conffile" sh -c 'dpkg-query -W -f="\${Conffiles}" fetchrun | grep -q "/etc/fetchrun/sources.yaml"'
check "the fetchrun system user exists, with no login" sh -c 'getent passwd fetchrun | grep -q ":/var/lib/fetchrun:/usr/sbin/nologin$"'
check "its state folder /var/lib/fetchrun is its own, mode 750" sh -c 'test "$(stat -c "%U %G %a" /var/lib/fetchrun)" = "fetchrun fetchrun 750"'
check "systemd-analyze verify accepts the system units" sh -c '
  said=$(systemd-analyze verify --man=no /usr/lib/systemd/system/fetchrun.service /usr/lib/systemd/system/fetchrun-due.service /usr/lib/systemd/system/fetchrun-due.timer 2>&1)
  printf "%s" "$said"; test -z "$said"'
check "systemd-analyze verify accepts the user units" sh -c '
  said=$(systemd-analyze verify --man=no /usr/lib/systemd/user/fetchrun.service /usr/lib/systemd/user/fetchrun-due.service /usr/lib/systemd/user/fetchrun-due.timer 2>&1)
  printf "%s" "$said"; test -z "$said"'
check "the units are Type=notify (watch) and hardened" sh -c '
  grep -q "^Type=notify" /usr/lib/systemd/system/fetchrun.service && grep -q "^Type=notify" /usr/lib/systemd/user/fetchrun.service &&
  for u in /usr/lib/systemd/system/fetchrun.service /usr/lib/systemd/system/fetchrun-due.service; do
    for line in User=fetchrun NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes MemoryDenyWriteExecute=yes; do
      grep -q "^$line\$" "$u" || { echo "$u lacks $line"; exit 1; }; done; done'
check "nothing is enabled or started on install" sh -c '
  ! ls /etc/systemd/system/*.wants/fetchrun* /etc/systemd/user/*.wants/fetchrun* 2>/dev/null | grep -q . &&
  ! pgrep -x fetchrun >/dev/null'
check "the man page renders" sh -c 'zcat /usr/share/man/man1/fetchrun.1.gz | groff -mandoc -Tutf8 -ww -z 2>&1 | (! grep .)'
check "the completions load" sh -c '
  bash -c "source /usr/share/bash-completion/completions/fetchrun && complete -p fetchrun" &&
  test -s /usr/share/zsh/vendor-completions/_fetchrun && test -s /usr/share/fish/vendor_completions.d/fetchrun.fish'

# The installed binary on what its ICU data must still serve: a time zone by name (a digest's
# time), a regular expression with Unicode classes, dates, text in Cyrillic, Arabic and
# Japanese, a feed in windows-1251 — run as the package's user, in a folder of its own.
mkdir -p "$scratch/icu"
printf '<?xml version="1.0" encoding="windows-1251"?><rss version="2.0"><channel><title>\xcd\xee\xe2\xee\xf1\xf2\xe8</title><item><guid>1</guid><title>\xcf\xf0\xe8\xe2\xe5\xf2 \xec\xe8\xf0</title><pubDate>Fri, 04 Dec 2026 10:00:00 +0300</pubDate></item></channel></rss>' > "$scratch/icu/cp1251.xml"
cat > "$scratch/icu/utf8.xml" <<'EOF'
<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Mixed</title>
<item><guid>a</guid><title>عاجل: خبر</title></item><item><guid>b</guid><title>日本語の見出し</title></item>
<item><guid>c</guid><title>Sponsored: buy now</title></item></channel></rss>
EOF
cat > "$scratch/icu/sources.yaml" <<'EOF'
state_dir: state
timezone: Asia/Tokyo
outputs:
  - { name: mail, type: email, url: "smtp://127.0.0.1:9", starttls: off, from: f@example.org, to: [me@example.org], digest: "daily@08:00" }
defaults:
  exclude: [{ title: "(?i)^\\p{Lu}\\w+ored\\b" }]
  send_baseline: true
sources:
  - { name: cyrillic, type: rss, url: "file:cp1251.xml" }
  - { name: mixed, type: rss, url: "file:utf8.xml" }
EOF
chown -R fetchrun:fetchrun "$scratch/icu"
as_fetchrun() { (cd "$scratch/icu" && setpriv --reuid fetchrun --regid fetchrun --clear-groups env HOME="$scratch/icu" LANG=C.UTF-8 TZ="${TZ:-UTC}" /usr/bin/fetchrun "$@"); }
run_reads_every_script() {
  local out; out=$(as_fetchrun --format json -c sources.yaml 2>&1); printf '%s\n' "$out"
  grep -q "Привет мир" <<<"$out" && grep -q "日本語の見出し" <<<"$out" && grep -q "عاجل" <<<"$out" && ! grep -q "Sponsored" <<<"$out"
}
digest_in_its_zone() {
  local out; out=$(TZ=UTC as_fetchrun outputs -c sources.yaml 2>&1); printf '%s\n' "$out"
  grep -q "digest daily@08:00 (Asia/Tokyo): sent at [0-9-]* 23:00" <<<"$out"
}
show_kept() {
  local out; out=$(as_fetchrun show -c sources.yaml 2>&1); printf '%s\n' "$out"
  grep -q "Привет мир" <<<"$out" && grep -q "日本語の見出し" <<<"$out"
}
check "a run reads a windows-1251 feed, non-Latin titles, and a filter's Unicode classes" run_reads_every_script
check "a digest's time is read in the config's time zone (08:00 in Tokyo is 23:00 UTC)" digest_in_its_zone
check "show prints what was kept" show_kept

check "dpkg --purge removes the package" dpkg --purge fetchrun-dbgsym fetchrun
survey > "$scratch/after"
# What may stay: the user (policy keeps system users), the backups of the user databases that
# adding it wrote, and the scratch folder of this test.
left=$(LC_ALL=C comm -13 "$scratch/before" "$scratch/after" | grep -v -E '^/etc/(passwd|group|shadow|gshadow)-$')
check "nothing of the package is left after the purge but its user" sh -c '
  printf "%s" "$1"; test -z "$1" && getent passwd fetchrun >/dev/null' - "$left"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

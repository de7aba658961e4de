#!/usr/bin/env bash
# deb.sh BINARY MANUAL OUT_DIR: builds fetchrun_VERSION_amd64.deb and its -dbgsym package in
# OUT_DIR from a release binary (with its debug information) and the generated man page, with
# Debian's own tools: objcopy/strip, dpkg-shlibdeps for Depends, dpkg-deb to pack.
#
# What goes in (packaging/deb/ holds the files that are not built):
#   /usr/bin/fetchrun                      stripped; its debug information in fetchrun-dbgsym
#   /usr/share/man/man1/fetchrun.1.gz      swift-argument-parser's generate-manual
#   bash, zsh and fish completions         from the binary itself
#   /usr/lib/systemd/system/               fetchrun.service (watch, Type=notify), fetchrun-due.{service,timer}
#   /usr/lib/systemd/user/                 the same three for a user's own config (examples/systemd)
#   /usr/lib/sysusers.d/fetchrun.conf      the `fetchrun` system user
#   /usr/lib/tmpfiles.d/fetchrun.conf      /var/lib/fetchrun
#   /etc/fetchrun/sources.yaml             an example config, a conffile
#   /usr/share/doc/fetchrun/               copyright, changelogs, README
# Nothing is started or enabled on install. VERSION comes from the VERSION file; the maintainer
# from DEB_MAINTAINER; dates from the commit (SOURCE_DATE_EPOCH), so that a build is repeatable.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=$1 manual=$2 out=$3
version=$(tr -d ' \t\r\n' < VERSION)
maintainer=${DEB_MAINTAINER:-fetchrun developers <fetchrun@example.org>}
architecture=$(dpkg --print-architecture)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/fetchrun debug=$work/fetchrun-dbgsym

# The binary: its debug information apart (compressed), then stripped, with a link to it.
install -d "$root/usr/bin"
build_id=$(readelf -n "$binary" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
[ -n "$build_id" ] || { echo "deb.sh: $binary has no build id" >&2; exit 1; }
debug_file=$debug/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug
install -d "$(dirname "$debug_file")"
objcopy --only-keep-debug --compress-debug-sections=zlib "$binary" "$debug_file"
chmod 644 "$debug_file"
strip --strip-unneeded --remove-section=.comment --remove-section=.note -o "$root/usr/bin/fetchrun" "$binary"
objcopy --add-gnu-debuglink="$debug_file" "$root/usr/bin/fetchrun"
chmod 755 "$root/usr/bin/fetchrun"

# The man page and the completions.
install -d "$root/usr/share/man/man1" "$root/usr/share/bash-completion/completions" \
  "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
# An empty line in mdoc is a paragraph written wrong (groff warns): `.Pp` is the one meant.
sed 's/^$/.Pp/' "$manual" | gzip -9n > "$root/usr/share/man/man1/fetchrun.1.gz"
# A completion file is sourced, not run: without the generator's `#!` line.
"$binary" --generate-completion-script bash | sed '1{/^#!/d}' > "$root/usr/share/bash-completion/completions/fetchrun"
"$binary" --generate-completion-script zsh > "$root/usr/share/zsh/vendor-completions/_fetchrun"
"$binary" --generate-completion-script fish > "$root/usr/share/fish/vendor_completions.d/fetchrun.fish"

# The units: the system's from packaging/deb; a user's from examples/systemd, named alike.
install -D -m 644 -t "$root/usr/lib/systemd/system" packaging/deb/fetchrun.service packaging/deb/fetchrun-due.service packaging/deb/fetchrun-due.timer
install -d "$root/usr/lib/systemd/user"
for pair in fetchrun-watch.service:fetchrun.service fetchrun.service:fetchrun-due.service fetchrun.timer:fetchrun-due.timer; do
  sed -e 's|/usr/local/bin/fetchrun|/usr/bin/fetchrun|g' \
    -e '/^# Install (as a user service):/,/systemctl --user daemon-reload/c\# Installed by the Debian package for every user: `systemctl --user enable --now '"${pair##*:}"'`.' \
    -e 's|fetchrun\.timer|fetchrun-due.timer|g' -e 's|fetchrun-watch|fetchrun|g' "examples/systemd/${pair%%:*}" > "$root/usr/lib/systemd/user/${pair##*:}"
  chmod 644 "$root/usr/lib/systemd/user/${pair##*:}"
done
install -D -m 644 packaging/deb/sysusers.conf "$root/usr/lib/sysusers.d/fetchrun.conf"
install -D -m 644 packaging/deb/tmpfiles.conf "$root/usr/lib/tmpfiles.d/fetchrun.conf"
install -D -m 644 packaging/deb/sources.yaml "$root/etc/fetchrun/sources.yaml"

# Documentation: the copyright, a Debian changelog (a native package's), the project's own.
doc=$root/usr/share/doc/fetchrun
install -D -m 644 packaging/deb/copyright "$doc/copyright"
date_r=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
printf 'fetchrun (%s) unstable; urgency=medium\n\n  * Release %s: what it added, changed and fixed is in CHANGELOG.md.gz.\n\n -- %s  %s\n' \
  "$version" "$version" "$maintainer" "$date_r" | gzip -9n > "$doc/changelog.gz"
gzip -9n < CHANGELOG.md > "$doc/CHANGELOG.md.gz"
gzip -9n < README.md > "$doc/README.md.gz"

# Depends, from the libraries the binary links (dpkg-shlibdeps reads their packages' shlibs).
install -d "$work/debian"
printf 'Source: fetchrun\n\nPackage: fetchrun\nArchitecture: any\n' > "$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O -e fetchrun/usr/bin/fetchrun 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# The release lists its relocations as RELR, which glibc reads from 2.36 on: the binary needs
# GLIBC_ABI_DT_RELR, a version no symbol carries, so dpkg-shlibdeps does not count it.
if readelf -V "$root/usr/bin/fetchrun" | grep -q GLIBC_ABI_DT_RELR; then
  depends=$(printf '%s' "$depends" | sed -E 's/libc6 \(>= 2\.(3[0-5]|[12][0-9])\)/libc6 (>= 2.36)/')
fi

control() { # DIR PACKAGE: writes DIR/DEBIAN/control's common fields and the size
  install -d "$1/DEBIAN"
  printf 'Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: %s\nInstalled-Size: %s\n' \
    "$2" "$version" "$architecture" "$maintainer" "$(du -sk --exclude=DEBIAN "$1" | cut -f1)" > "$1/DEBIAN/control"
  (cd "$1" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | LC_ALL=C sort | xargs md5sum) > "$1/DEBIAN/md5sums"
  chmod 644 "$1/DEBIAN/md5sums"
}
control "$root" fetchrun
cat >> "$root/DEBIAN/control" <<EOF
Depends: $depends
Suggests: chromium
Section: net
Priority: optional
Description: plugin-based multi-source fetch runner
 fetchrun reads a YAML file of sources: RSS and Atom feeds, JSON Feed, parts
 of web pages (CSS or XPath, rendered by Chromium when they need a browser),
 JSON APIs, and adapters in any language. It fetches them all at once, each
 under its own deadline, keeps what it saw, and reports what is new: once,
 from a timer, or as a long-running watch.
 .
 New items go to commands, webhooks, mail (HTML and text, digests on a
 schedule) and chat services through an outbox that never loses one. It keeps
 a history of every change, serves feeds of changes, a dashboard and
 Prometheus metrics, and can share one source list between workers in
 PostgreSQL.
EOF
printf '/etc/fetchrun/sources.yaml\n' > "$root/DEBIAN/conffiles"
install -m 755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$root/DEBIAN/"
chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles"

# A debug package's documentation is its package's (Debian's policy, 12.5).
install -d "$debug/usr/share/doc"
ln -s fetchrun "$debug/usr/share/doc/fetchrun-dbgsym"
control "$debug" fetchrun-dbgsym
cat >> "$debug/DEBIAN/control" <<EOF
Depends: fetchrun (= $version)
Section: debug
Priority: optional
Auto-Built-Package: debug-symbols
Build-Ids: $build_id
Description: debug symbols for fetchrun
EOF
chmod 644 "$debug/DEBIAN/control"

find "$root" "$debug" -type d -exec chmod 755 {} +
find "$root" "$debug" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
install -d "$out"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out/fetchrun_${version}_${architecture}.deb" >/dev/null
dpkg-deb --root-owner-group -Zxz --build "$debug" "$out/fetchrun-dbgsym_${version}_${architecture}.deb" >/dev/null
ls -l "$out/fetchrun_${version}_${architecture}.deb" "$out/fetchrun-dbgsym_${version}_${architecture}.deb"
echo "installed binary: $(stat -c %s "$root/usr/bin/fetchrun") bytes; Depends: $depends"

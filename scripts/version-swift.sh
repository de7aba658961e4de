#!/bin/sh
# version-swift.sh release|commit PACKAGE_DIR OUT_DIR: writes OUT_DIR/Version.swift, the
# release from PACKAGE_DIR/VERSION (`release`) or the commit the checkout is at (`commit`),
# for the VersionInfo build plugin. The file is rewritten only when its text changes.
set -eu
kind=$1 root=$2 out=$3
mkdir -p "$out"
case "$kind" in
release)
  version=$(tr -d ' \t\r\n' < "$root/VERSION")
  case "$version" in
    *[!0-9A-Za-z.+-]* | "") echo "version-swift.sh: $root/VERSION must hold a version such as 0.3.0" >&2; exit 1 ;;
  esac
  text="/// The release this is, from the VERSION file at the package's root (written by the VersionInfo plugin).
package enum FetchRunVersion {
    package static let current = \"$version\"
}"
  ;;
commit)
  commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  case "$commit" in *[!0-9a-f]*) commit=unknown ;; esac
  text="/// The commit this binary is built from (\`unknown\` outside a git checkout), written by the VersionInfo plugin.
enum BuildCommit {
    static let current = \"$commit\"
}"
  ;;
*) echo "version-swift.sh: release or commit, not $kind" >&2; exit 2 ;;
esac
if [ "$(cat "$out/Version.swift" 2>/dev/null || true)" != "$text" ]; then
  printf '%s\n' "$text" > "$out/Version.swift.tmp" && mv "$out/Version.swift.tmp" "$out/Version.swift"
fi

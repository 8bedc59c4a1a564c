#!/bin/sh
# SPDX-License-Identifier: MIT
# Build baton's Debian packages (debian/) into OUT (default build/deb):
# the tree's files (tracked and new, not ignored ones, so not build/) are
# copied to OUT/src, dpkg-buildpackage -b builds there, the .deb files land
# in OUT, and lintian checks them: an error fails (warnings are printed).
# Usage: tools/make-deb.sh [OUT]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/build/deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The package's version is the library's: debian/changelog must name it.
v() { sed -n "s/^#define BATON_VERSION_$1 \([0-9]*\)$/\1/p" "$top/include/baton/common.h"; }
version="$(v MAJOR).$(v MINOR).$(v PATCH)"
deb_version=$(cd "$top" && dpkg-parsechangelog -S Version)
case $deb_version in
"$version" | "$version"[-+~]*) ;;
*)
	echo "make-deb: debian/changelog is at $deb_version but include/baton/common.h at $version;" >&2
	echo "make-deb: add a changelog entry (dch -v $version) first" >&2
	exit 1 ;;
esac

src=$out/src/baton-$version
rm -rf "$out/src" "$out"/*.deb "$out"/*.ddeb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"
(cd "$top" && git ls-files -z --cached --others --exclude-standard) |
	(cd "$top" && xargs -0 tar -cf - --no-recursion --ignore-failed-read) | tar -xf - -C "$src"
# The Maintainer field (debian/control) and the changelog's trailer name a
# placeholder, baton developers <baton-devel@example.org>; a packager sets
# their own with one variable: BATON_DEB_MAINTAINER="Name <mail>".
if [ -n "${BATON_DEB_MAINTAINER:-}" ]; then
	case $BATON_DEB_MAINTAINER in
	*"<"*@*">") ;;
	*) echo "make-deb: BATON_DEB_MAINTAINER must read 'Name <address>', not '$BATON_DEB_MAINTAINER'" >&2; exit 1 ;;
	esac
	esc=$(printf '%s' "$BATON_DEB_MAINTAINER" | sed 's/[&|\\]/\\&/g')
	sed -i "s|^Maintainer: .*|Maintainer: $esc|" "$src/debian/control"
	sed -i "s|^ -- baton developers <baton-devel@example.org>| -- $esc|" "$src/debian/changelog"
fi
echo "make-deb: building the packages of baton $deb_version in $src"
(cd "$src" && dpkg-buildpackage -b -us -uc -j"${JOBS:-2}" >"$out/build.log" 2>&1) || {
	tail -n 40 "$out/build.log" >&2
	echo "make-deb: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
	exit 1
}
# dpkg-buildpackage writes next to the source directory.
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
mv "$out"/src/*.ddeb "$out"/ 2>/dev/null || true
grep -h "^dpkg-gensymbols: warning" "$out/build.log" >&2 || true
ls "$out"/*.deb
echo "make-deb: lintian"
lintian --fail-on error \
	"$out"/*.deb

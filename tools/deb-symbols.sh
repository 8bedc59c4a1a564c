#!/bin/sh
# SPDX-License-Identifier: MIT
# Refresh debian/libbaton0.symbols, the list of what libbaton.so.0 exports
# (the ABI check of the package build), from the last `make deb`: symbols
# added since are listed with the current version; none is ever dropped
# here (a dropped one fails the package build, as it should).
# Usage: tools/deb-symbols.sh [OUT]   (OUT as given to tools/make-deb.sh)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/build/deb}
src=$(ls -d "$out"/src/baton-* | head -n 1)
[ -d "$src/debian/libbaton0" ] || { echo "deb-symbols: run make deb first" >&2; exit 1; }
version=$(cd "$top" && dpkg-parsechangelog -S Version)
touch "$top/debian/libbaton0.symbols"
cp "$top/debian/libbaton0.symbols" "$src/debian/libbaton0.symbols"
(cd "$src" && dpkg-gensymbols -plibbaton0 -Pdebian/libbaton0 -v"$version" -c0 \
	-Idebian/libbaton0.symbols -O"$top/debian/libbaton0.symbols")
echo "deb-symbols: $(grep -c '@Base' "$top/debian/libbaton0.symbols") symbols in debian/libbaton0.symbols"
